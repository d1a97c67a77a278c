"""A broker that a rolling restart is restarting on request is absent by plan, not by outage.

While the operator's roll restarts broker N (its pod deleted, waiting for the pod, the broker's
registration, URP 0), N is not registered, its partitions are under-replicated and its log dirs
cannot be read: the diagnosis's findings say so, and without this module they made a critical
`broker_down:N` incident, a Warning Event and `Degraded=True ClusterPartlyUnreadable` for the
whole roll. Here those findings become one info incident, `planned_restart:N`, naming the
roll's request id, and two gaps in the snapshot are expected: `log_dirs:N`, and the offsets of
partitions with a replica on N (`offsets:<topic>` naming only such partitions) and a group
whose coordinator partition has a replica on N (`group:<id>`): while N shuts down and comes back
their leadership moves, and a ListOffsets or a group describe sent meanwhile can fail; and a
group listing (`groups`, `share_groups`, `streams_groups`), which asks every broker, one of
them N or a coordinator still loading after N moved it. Both
stay listed as unread (`missing`); they only do not make the policy Degraded. Everything else
stays as it is: another broker down, a partition whose out-of-sync brokers include one the roll is not
restarting, any other unreadable part, a halted roll (it is no longer in flight, so its broker
is no longer planned).

Pure functions of the policy's `status.currentRemediation` (as read before the snapshot and at
the end of the cycle: the roll may move on while the cluster is diagnosed) and of the findings
and missing parts; `kafka_health.diagnose.incidents.group_incidents` and
`kafka_health.report.status.status_after_cycle` apply them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_health.models.findings import Diagnosis, Finding, IncidentKind, Severity
from kafka_health.models.policy import ActionType, CurrentRemediation, RemediationStep

RESTARTING_STEPS = frozenset(
    {
        RemediationStep.DELETING_POD,
        RemediationStep.WAITING_POD_READY,
        RemediationStep.WAITING_BROKER_REGISTERED,
        RemediationStep.WAITING_URP_ZERO,
    }
)
"""The steps in which the roll's current broker is away or catching up because of the roll.
Not CheckingSafety: its pod is not deleted yet, so an absence then is not the roll's doing."""

REPLICATION_CHECKS = frozenset({"offline_partition", "under_replicated", "under_min_isr", "at_min_isr"})
# Checks about broker N itself that a restart of N explains.
_BROKER_CHECKS = frozenset(
    {"broker_missing", "isr_churn", "quorum_voter_lagging", "quorum_observer_lagging", "broker_recovering"}
)


@dataclass(frozen=True)
class PlannedRestart:
    """Broker `broker` is being restarted by the rolling restart `request_id` (at `step`)."""

    broker: int
    request_id: str
    step: str


Planned = Mapping[int, PlannedRestart]
Root = tuple[IncidentKind, str]
Replicas = Mapping[tuple[str, int], Sequence[int]]


def restarting(current: CurrentRemediation | None) -> list[PlannedRestart]:
    """The brokers a roll in flight is restarting now, per its recorded step: the current broker,
    or every member of the batch in flight (maxConcurrent > 1). Empty: none."""
    if (
        current is None
        or current.action is not ActionType.ROLLING_RESTART
        or current.current_broker is None
        or current.step not in RESTARTING_STEPS
    ):
        return []
    brokers = [m.broker for m in current.batch or []] or [current.current_broker]
    return [PlannedRestart(b, current.id, str(current.step)) for b in brokers]


def planned_restarts(
    before: CurrentRemediation | None, after: CurrentRemediation | None
) -> dict[int, PlannedRestart]:
    """The brokers whose absence a snapshot taken between the two reads of the policy's
    `status.currentRemediation` may owe to the roll: the broker restarting at either read, and
    the brokers the same roll finished in between (restarted while the snapshot was read)."""
    out: dict[int, PlannedRestart] = {}
    for current in (before, after):
        for p in restarting(current):
            out[p.broker] = p
    if (
        before is not None
        and after is not None
        and before.action is ActionType.ROLLING_RESTART
        and after.action is ActionType.ROLLING_RESTART
        and before.id == after.id
    ):
        done_before = set(before.brokers_done or [])
        for b in after.brokers_done or []:
            if b not in done_before:
                out.setdefault(b, PlannedRestart(b, after.id, str(RemediationStep.DONE)))
    return out


def expected_missing(part: str, planned: Planned) -> bool:
    """`log_dirs:N` of a broker being restarted: it answers no DescribeLogDirs meanwhile."""
    kind, _, detail = part.partition(":")
    return kind == "log_dirs" and detail.isdigit() and int(detail) in planned


def offsets_restarting(f: Finding, planned: Planned, replicas: Replicas) -> int | None:
    """The planned broker whose restart explains `f`, a `snapshot_incomplete` of `offsets:<topic>`
    whose every unread partition (its `partitions` evidence) has a replica on a broker being
    restarted (the lowest such broker); None when one of them has none, or the partitions are
    not named (then nothing says the restart is why)."""
    kind, _, topic = str(f.evidence.get("part", "")).partition(":")
    unread = _ids(f.evidence.get("partitions"))
    if f.check != "snapshot_incomplete" or kind != "offsets" or not unread or not planned:
        return None
    hit: set[int] = set()
    for p in unread:
        on = set(replicas.get((topic, p), ())) & set(planned)
        if not on:
            return None
        hit |= on
    return min(hit)


# The group listings (consumer groups by confluent-kafka; share and streams groups by
# kafka-python): ListGroups goes to every broker, and while the roll restarts one, it or the
# coordinators moving to and loading on the others answer it with an error (seen in CI:
# COORDINATOR_LOAD_IN_PROGRESS right after a restart), so the listing comes back incomplete.
GROUP_LISTINGS = frozenset({"groups", "share_groups", "streams_groups"})


def listing_restarting(f: Finding, planned: Planned) -> int | None:
    """The lowest planned broker, when `f` is a `snapshot_incomplete` of a group listing (the
    listing asks every broker, so any broker being restarted explains it); else None."""
    if f.check != "snapshot_incomplete" or not planned:
        return None
    return min(planned) if str(f.evidence.get("part", "")) in GROUP_LISTINGS else None


OFFSETS_TOPIC = "__consumer_offsets"


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(group_id: str, partitions: int) -> int:
    """The `__consumer_offsets` partition whose leader coordinates `group_id`: Kafka's
    `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions` (Utils.abs: MIN_VALUE → 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def group_restarting(f: Finding, planned: Planned, replicas: Replicas, offsets_partitions: int) -> int | None:
    """The planned broker whose restart explains `f`, a `snapshot_incomplete` of `group:<id>`:
    one holding a replica of the group's coordinator partition (its coordinator moves while the
    broker shuts down and comes back, and a describe sent meanwhile can fail); else None."""
    kind, _, group = str(f.evidence.get("part", "")).partition(":")
    if f.check != "snapshot_incomplete" or kind != "group" or not group or offsets_partitions < 1:
        return None
    on = set(replicas.get((OFFSETS_TOPIC, coordinator_partition(group, offsets_partitions)), ())) & set(
        planned
    )
    return min(on) if on else None


def unexpected_missing(diagnosis: Diagnosis) -> list[str]:
    """The unread parts of a snapshot that the planned restarts do not explain: all but those
    whose `snapshot_incomplete` finding is a member of a `planned_restart` incident
    (`planned_root` put it there)."""
    explained = {
        str(f.evidence.get("part"))
        for i in diagnosis.incidents
        if i.kind is IncidentKind.PLANNED_RESTART
        for f in i.findings
        if f.check == "snapshot_incomplete"
    }
    return [m for m in diagnosis.missing if m not in explained]


def _ids(value: object) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int | float):
        return {int(value)}
    return {int(x) for x in str(value).split(",") if x.strip().lstrip("-").isdigit()}


def planned_root(
    root: Root | None,
    f: Finding,
    planned: Planned,
    replicas: Replicas | None = None,
    offsets_partitions: int = 0,
) -> Root | None:
    """`root` (the incident `group_incidents`'s rules gave `f`), or `planned_restart:N` when it is
    broker N's and N's restart explains `f`: its `broker_down:N` or `broker_out_of_sync:N`
    findings, its unreadable log dirs, its own quorum findings, unread offsets of partitions on
    it that no other rule explained (`offsets_restarting`; `replicas`: the snapshot's), an
    unreadable group whose coordinator partition is on it (`group_restarting`;
    `offsets_partitions`: how many `__consumer_offsets` has). A partition finding whose
    out-of-sync brokers include one the roll is not restarting goes to that broker's
    `broker_out_of_sync` incident instead (the rules already prefer a down broker that is not
    planned). Real disk findings of N (`disk_usage`, ...) stay `disk:N`."""
    if root is None or not planned:
        return root
    kind, key = root
    s = f.subject
    if root == (IncidentKind.CHECK, "snapshot_incomplete"):
        broker = offsets_restarting(f, planned, replicas or {})
        if broker is None:
            broker = listing_restarting(f, planned)
        return root if broker is None else (IncidentKind.PLANNED_RESTART, str(broker))
    if kind is IncidentKind.CONSUMER_GROUP:
        broker = group_restarting(f, planned, replicas or {}, offsets_partitions)
        return root if broker is None else (IncidentKind.PLANNED_RESTART, str(broker))
    if kind is IncidentKind.QUORUM and f.check in _BROKER_CHECKS and s.broker in planned:
        return IncidentKind.PLANNED_RESTART, str(s.broker)
    if kind not in (IncidentKind.BROKER_DOWN, IncidentKind.BROKER_OUT_OF_SYNC, IncidentKind.DISK):
        return root
    if not key.isdigit() or int(key) not in planned:
        return root
    if kind is IncidentKind.DISK and not (
        f.check == "snapshot_incomplete" and expected_missing(str(f.evidence.get("part", "")), planned)
    ):
        return root
    if f.check in REPLICATION_CHECKS:
        others = _ids(f.evidence.get("out_of_sync")) - set(planned)
        if others:
            return IncidentKind.BROKER_OUT_OF_SYNC, str(min(others))
    return IncidentKind.PLANNED_RESTART, key


def describe(
    p: PlannedRestart, partitions: int, counts: Mapping[str, float | int | str | None], groups: int
) -> tuple[str, dict[str, float | int | str | None], str]:
    """Title, extra evidence and remediation text of a `planned_restart` incident; `counts`: the
    snapshot's under-replicated and offline partitions with a replica on the broker, if read."""
    reach = f"{partitions} partition{'' if partitions == 1 else 's'} wait for it"
    if "under_replicated" in counts and "offline" in counts:
        reach = f"{counts['under_replicated']} under-replicated, {counts['offline']} offline meanwhile"
    title = (
        f"Broker {p.broker} is being restarted by rolling restart {p.request_id} ({p.step}), as "
        f"requested: {reach}"
        + (f"; {groups} consumer group{'' if groups == 1 else 's'} read from them." if groups else ".")
    )
    return (
        title,
        {"request_id": p.request_id, "step": p.step},
        f"No action: planned. The roll waits for broker {p.broker}'s pod, its registration and URP 0 "
        "before the next broker, and halts (Degraded=True RemediationHalted) if it does not come back "
        "within its timeouts.",
    )


def worst_unplanned(diagnosis: Diagnosis) -> Severity | None:
    """The worst severity of the diagnosis's findings, not counting those a planned restart
    explains (the members of a `planned_restart` incident): the policy's health while a roll
    restarts a broker on request. Every finding is in exactly one incident, so this is the worst
    incident severity (a planned_restart's is info)."""
    if not any(i.kind is IncidentKind.PLANNED_RESTART for i in diagnosis.incidents):
        return diagnosis.worst
    return max((i.severity for i in diagnosis.incidents), key=lambda s: s.rank, default=None)
