"""Offset reset plans: per partition, the committed offset now → the target, clamped to
[log start, log end]; and the gate that lets a reset run only on an Empty group. A share group's
plan is the same, its start offsets standing for the committed offsets (`SHARE_STRATEGIES`,
`share_group_refusal`).

Targets follow `kafka-consumer-groups --reset-offsets`: earliest → log start; latest → log
end; toOffset → that offset; shiftBy → committed + n (no committed offset: cannot shift);
toDatetime / byDuration → the first offset at or after the time, looked up by the caller with
ListOffsets (none at or after it → log end). Every target outside [log start, log end] is
clamped to the nearer bound, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.policy import OffsetResetEntry, OffsetResetRequest, format_duration, parse_duration
from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup

EMPTY_STATES = ("Empty", "Dead")
"""Group states with no members: a reset cannot race a consumer (Dead: the group does not exist yet)."""

SHARE_STRATEGIES = ("earliest", "latest", "toDatetime", "toOffset")
"""The strategies a share group's reset takes: those of `kafka-share-groups --reset-offsets`
(besides --from-file and --to-current) that a consumer group's reset has too; byDuration and
shiftBy are the consumer tool's only."""


def share_group_refusal(group_id: str, group: ConsumerGroup | None) -> str | None:
    """Why the start offsets of share group `group_id` (as read: None when it is not listed) may
    not be reset, or None. Only an existing share group that is Empty: Kafka refuses the alter
    while it has members (NON_EMPTY_GROUP) and would create a group that does not exist."""
    if group is None:
        return (
            f"share group {group_id} does not exist, or the principal lacks DESCRIBE on GROUP {group_id}: "
            "nothing to reset (kafka-share-groups --list shows the share groups)"
        )
    if group.state == "Empty" and group.members == 0:
        return None
    return (
        f"share group {group_id} is {group.state} with {group.members} member(s): its start offsets can "
        "only be reset while it is Empty; stop its consumers first"
    )


class OffsetResetPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    request_id: str
    group: str
    strategy: str
    timestamp: datetime | None = Field(None, description="toDatetime / byDuration: the time looked up.")
    entries: list[OffsetResetEntry] = Field(default_factory=list)
    problems: list[str] = Field(
        default_factory=list, description="What in the request does not fit the cluster (fix the request)."
    )
    missing: list[str] = Field(default_factory=list, description="Data the plan needs that was not read.")

    @property
    def executable(self) -> bool:
        return not self.problems and not self.missing and all(e.target is not None for e in self.entries)

    def lines(self) -> list[str]:
        """Rows like kafka-consumer-groups --reset-offsets --dry-run prints."""
        out = []
        for e in self.entries:
            current = "-" if e.current is None else str(e.current)
            target = "?" if e.target is None else str(e.target)
            note = f"  ({e.note})" if e.note else ""
            out.append(f"{self.group} {e.topic} {e.partition} {current} -> {target}{note}")
        return out


def target_timestamp(request: OffsetResetRequest, now: datetime) -> datetime | None:
    """The time whose offsets must be looked up for this request (None for other strategies)."""
    if request.to_datetime is not None:
        return request.to_datetime
    if request.by_duration is not None:
        return now - parse_duration(request.by_duration)
    return None


def resolve_partitions(
    request: OffsetResetRequest, snapshot: ClusterSnapshot
) -> tuple[list[tuple[str, int]], list[str]]:
    """The partitions named by topics and partitions, sorted; and the names that do not exist."""
    known = {(p.topic, p.partition) for p in snapshot.partitions}
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(known):
        by_topic.setdefault(topic, []).append(partition)
    chosen: set[tuple[str, int]] = set()
    problems = []
    for topic in request.topics or []:
        if topic not in by_topic:
            problems.append(not_in_metadata(topic, topic in snapshot.hidden))
        chosen.update((topic, p) for p in by_topic.get(topic, []))
    for ref in request.partitions or []:
        if ref.topic not in by_topic:
            if (unlisted := not_in_metadata(ref.topic, ref.topic in snapshot.hidden)) not in problems:
                problems.append(unlisted)
        elif (ref.topic, ref.partition) not in known:
            problems.append(f"partition {ref.topic}-{ref.partition} does not exist")
        else:
            chosen.add((ref.topic, ref.partition))
    return sorted(chosen), problems


def not_in_metadata(topic: str, hidden: bool = False) -> str:
    """A named topic the metadata left out. Kafka leaves out, alike, a topic that does not exist
    and one the principal may not DESCRIBE: `hidden` when the brokers' log dirs hold it (the
    snapshot's `hidden`), then it is an authorization error; else the plan cannot say which (the
    CLI asks Kafka by name first, `remediate.access`, and says which)."""
    grant = f"grant it: kafka-acls --add --allow-principal User:<name> --operation Describe --topic {topic}"
    if hidden:
        return (
            f"authorization denied: the principal lacks DESCRIBE on TOPIC {topic}: the brokers hold it, "
            f"but Kafka leaves it out of the metadata ({grant})"
        )
    return (
        f"topic {topic} is not in the cluster metadata: it does not exist, or the principal lacks "
        f"DESCRIBE on TOPIC {topic} ({grant})"
    )


def plan_offset_reset(
    request: OffsetResetRequest,
    snapshot: ClusterSnapshot,
    *,
    now: datetime,
    offsets_for_times: Mapping[tuple[str, int], int | None] | None = None,
) -> OffsetResetPlan:
    """current → target per partition. `offsets_for_times[(topic, partition)]`: ListOffsets for
    `target_timestamp(request, now)` (None: no message at or after it)."""
    partitions, problems = resolve_partitions(request, snapshot)
    log = {(o.topic, o.partition): o for o in snapshot.offsets}
    group = next((g for g in snapshot.groups if g.group_id == request.group), None)
    committed = {(o.topic, o.partition): o.committed_offset for o in group.offsets} if group else {}
    looked_up = offsets_for_times or {}
    entries = []
    missing: list[str] = []
    for topic, partition in partitions:
        key = (topic, partition)
        offsets = log.get(key)
        start = offsets.log_start_offset if offsets else None
        end = offsets.log_end_offset if offsets else None
        entry = OffsetResetEntry(
            topic=topic, partition=partition, current=committed.get(key), log_start=start, log_end=end
        )
        entries.append(entry)
        if start is None or end is None:
            entry.note = "log start/end offsets unknown"
            missing.append(f"{topic}-{partition}: log start/end offsets")
            continue
        raw = _strategy_offset(request, entry, start, end, looked_up, now, problems, missing)
        if raw is not None:
            _clamp(entry, raw, start, end)
    return OffsetResetPlan(
        request_id=request.id,
        group=request.group,
        strategy=request.strategy,
        timestamp=target_timestamp(request, now),
        entries=entries,
        problems=problems,
        missing=missing,
    )


def _strategy_offset(
    request: OffsetResetRequest,
    entry: OffsetResetEntry,
    start: int,
    end: int,
    looked_up: Mapping[tuple[str, int], int | None],
    now: datetime,
    problems: list[str],
    missing: list[str],
) -> int | None:
    """The strategy's offset for one partition, before clamping. None: it cannot be computed;
    the entry's note says why, and `problems` (fix the request) or `missing` (not read) too."""
    where = f"{entry.topic}-{entry.partition}"
    if request.earliest:
        return start
    if request.latest:
        return end
    if request.to_offset is not None:
        return request.to_offset
    if request.shift_by is not None:
        if entry.current is None:
            entry.note = "no committed offset to shift from"
            problems.append(f"{where}: no committed offset to shift from")
            return None
        return entry.current + request.shift_by
    key = (entry.topic, entry.partition)
    if key not in looked_up:
        entry.note = "offset for the time not looked up"
        missing.append(f"{where}: offset for {target_timestamp(request, now)}")
        return None
    found = looked_up[key]
    if found is None:
        entry.note = "no message at or after the time: log end"
        return end
    return found


def _clamp(entry: OffsetResetEntry, raw: int, start: int, end: int) -> None:
    """The entry's target: `raw` within [start, end], saying so when it was outside."""
    clamped = min(max(raw, start), end)
    if clamped != raw:
        entry.clamped = True
        bound = "log start" if clamped == start else "log end"
        entry.note = f"{raw} is outside [{start}, {end}]: clamped to {bound}"
    entry.target = clamped


class GateState(StrEnum):
    READY = "Ready"
    WAIT = "Wait"
    BLOCKED = "Blocked"


@dataclass(frozen=True)
class GroupGate:
    state: GateState
    message: str
    waiting_since: datetime | None = None
    deadline: datetime | None = None


def group_gate(
    group: ConsumerGroup | None, *, waiting_since: datetime | None, timeout: timedelta, now: datetime
) -> GroupGate:
    """Ready when the group has no members (Empty, or not existing); otherwise Wait until
    `waiting_since + timeout`, then Blocked."""
    if group is None or (group.state in EMPTY_STATES and group.members == 0):
        return GroupGate(GateState.READY, "the group is empty")
    since = waiting_since or now
    deadline = since + timeout
    what = f"group {group.group_id} is {group.state} with {group.members} member(s)"
    if now >= deadline:
        return GroupGate(
            GateState.BLOCKED,
            f"{what}; it did not become Empty within {format_duration(timeout)} (since {since.isoformat()}): stop its "
            "consumers and commit a new request id to retry",
            since,
            deadline,
        )
    return GroupGate(
        GateState.WAIT, f"{what}: waiting for it to be Empty until {deadline.isoformat()}", since, deadline
    )
