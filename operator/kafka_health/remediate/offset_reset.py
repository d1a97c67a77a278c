"""Offset reset executor: applies an `OffsetResetPlan` once per request id, only to an Empty group,
after saving the offsets it replaces; and the rollback that puts the saved offsets back.

Order of steps (each a reason to stop with nothing changed, until the alter):
1. the saved-offsets record for this id exists → `AlreadyApplied` (once per id, across restarts:
   the record is written before the offsets are altered, so it exists whenever the reset may
   have run);
2. the group is read live (state and members): not Empty → `NotEmpty`;
3. the committed offsets and [log start, log end] are read live; targets are clamped again;
4. the offsets before the reset are saved: in the operator a ConfigMap
   `khp-<policy>-offsets-<request id>` with `offsets.json` and `rollback.csv` (the
   `topic,partition,offset` lines `kafka-consumer-groups --reset-offsets --from-file` takes);
   in the CLI a file;
5. AlterConsumerGroupOffsets; 6. the committed offsets are read back and compared to the targets.
A consumer that joins between 2 and 5 makes Kafka refuse every partition (UNKNOWN_MEMBER_ID):
nothing changed, so the record of step 4 is removed again and the result is `NotEmpty` (the
request keeps waiting) rather than a used-up id.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.snapshot import group as make_group
from kafka_health.k8s.client import K8s, K8sError
from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    OffsetResetRequest,
    OffsetResetResult,
    RequestState,
    epoch_millis_at_or_after,
)
from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup
from kafka_health.plan.decision import RequestUpdate
from kafka_health.plan.offset_reset_plan import (
    EMPTY_STATES,
    OffsetResetPlan,
    plan_offset_reset,
    target_timestamp,
)
from kafka_health.remediate import access

LABEL_POLICY = "kafkahealth.io/policy"
LABEL_REQUEST = "kafkahealth.io/request"
OFFSETS_KEY = "offsets.json"
CSV_KEY = "rollback.csv"

Key = tuple[str, int]


class ResetState(StrEnum):
    APPLIED = "Applied"
    """Every partition committed at its target and verified."""
    ALREADY_APPLIED = "AlreadyApplied"
    """The saved-offsets record for this id exists: the reset ran (or may have run) before; nothing done."""
    NOT_EMPTY = "NotEmpty"
    """The group has members: nothing changed."""
    FAILED = "Failed"
    """Some partition (or the whole call) failed; see the partitions and the message."""


class PartitionReset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    partition: int
    before: int | None = Field(None, description="Committed offset read live before (None: none).")
    target: int | None = None
    after: int | None = Field(None, description="Committed offset read back afterwards.")
    clamped: bool = False
    note: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.target is not None and self.after == self.target


class OffsetResetOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: ResetState
    group: str
    request_id: str
    message: str
    saved_offsets: str | None = Field(
        None, description="Where the offsets before are saved (ConfigMap or file)."
    )
    partitions: list[PartitionReset] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether this call may have altered committed offsets."""
        return self.state in (ResetState.APPLIED, ResetState.FAILED) and self.saved_offsets is not None

    def denied(self) -> str | None:
        """The ACL the principal lacks when Kafka refused this reset for authorization: READ on the
        GROUP or on a TOPIC for the offset commit (from a partition's error), DESCRIBE on the GROUP
        for the live read before it (from the message); None otherwise."""
        if self.state is not ResetState.FAILED:
            return None
        commit = f"alter_consumer_group_offsets:{self.group}"
        for p in self.partitions:
            if p.error and (found := security_errors.authorization_denied(commit, p.error, p.topic)):
                return found
        part = f"group:{self.group}" if "could not read the group live" in self.message else commit
        return security_errors.authorization_denied(part, self.message)

    def request_state(self) -> RequestState:
        """Applied / AlreadyApplied → Succeeded; NotEmpty → Waiting (the planner's group gate turns a
        long wait into Blocked); Failed → Failed."""
        return {
            ResetState.APPLIED: RequestState.SUCCEEDED,
            ResetState.ALREADY_APPLIED: RequestState.SUCCEEDED,
            ResetState.NOT_EMPTY: RequestState.WAITING,
            ResetState.FAILED: RequestState.FAILED,
        }[self.state]

    def request_update(self, waiting_since: datetime | None = None) -> RequestUpdate:
        return RequestUpdate(
            action=ActionType.OFFSET_RESET,
            id=self.request_id,
            state=self.request_state(),
            message=self.message[:1000],
            waiting_since=waiting_since if self.state is ResetState.NOT_EMPTY else None,
        )

    def result(self, previous: OffsetResetResult | None, now: datetime) -> OffsetResetResult:
        """status.offsetResets[id] after this run (the plan kept from `previous`)."""
        state = self.request_state()
        return OffsetResetResult(
            id=self.request_id,
            state=state,
            group=self.group,
            plan=previous.plan if previous else None,
            waiting_since=previous.waiting_since if previous and state is RequestState.WAITING else None,
            saved_offsets=self.saved_offsets or (previous.saved_offsets if previous else None),
            finished_at=now if state.terminal else None,
            message=self.message[:1000],
        )

    def record(
        self,
        *,
        plan_id: str,
        started_at: datetime,
        finished_at: datetime,
        generation: int,
        breaker_reset: str | None,
    ) -> ActionRecord | None:
        """The status.history entry; None when nothing was attempted (NotEmpty, AlreadyApplied)."""
        if self.state in (ResetState.NOT_EMPTY, ResetState.ALREADY_APPLIED):
            return None
        return ActionRecord(
            action=ActionType.OFFSET_RESET,
            id=self.request_id,
            plan_id=plan_id,
            outcome=ActionOutcome.SUCCEEDED if self.state is ResetState.APPLIED else ActionOutcome.FAILED,
            started_at=started_at,
            finished_at=finished_at,
            message=self.message[:1000],
            generation=generation,
            breaker_reset=breaker_reset,
        )

    def lines(self) -> list[str]:
        """`GROUP TOPIC PARTITION BEFORE TARGET AFTER RESULT` rows."""
        out = []
        for p in self.partitions:
            result = "ok" if p.ok else (p.error or "not verified")
            out.append(
                f"{self.group} {p.topic} {p.partition} {_dash(p.before)} {_dash(p.target)} {_dash(p.after)} {result}"
            )
        return out


def _dash(value: int | None) -> str:
    return "-" if value is None else str(value)


# --------------------------------------------------------------------------------------------
# Saved offsets


class SavedPartition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    partition: int
    offset: int | None = Field(None, description="None: the group had no committed offset here.")


class SavedOffsets(BaseModel):
    """The committed offsets of a group before a reset (`offsets.json`)."""

    model_config = ConfigDict(extra="forbid")

    group: str
    taken_at: datetime
    request_id: str | None = None
    partitions: list[SavedPartition]

    def to_csv(self) -> str:
        """`topic,partition,offset` lines (kafka-consumer-groups --reset-offsets --from-file);
        partitions without a committed offset are left out (nothing to restore)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        for p in self.partitions:
            if p.offset is not None:
                writer.writerow([p.topic, p.partition, p.offset])
        return buf.getvalue()

    def data(self) -> dict[str, str]:
        return {OFFSETS_KEY: self.model_dump_json(indent=2), CSV_KEY: self.to_csv()}

    @classmethod
    def from_data(cls, data: Mapping[str, str], group: str | None = None) -> SavedOffsets:
        if OFFSETS_KEY in data:
            return cls.model_validate_json(data[OFFSETS_KEY])
        if CSV_KEY in data:
            return cls.from_csv(data[CSV_KEY], group)
        raise ValueError(f"neither {OFFSETS_KEY} nor {CSV_KEY} in the saved offsets")

    @classmethod
    def from_csv(cls, text: str, group: str | None) -> SavedOffsets:
        if not group:
            raise ValueError("a CSV of offsets names no group: give the group")
        parts = []
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 3:
                raise ValueError(f"line {number}: expected topic,partition,offset")
            try:
                parts.append(SavedPartition(topic=row[0].strip(), partition=int(row[1]), offset=int(row[2])))
            except ValueError:
                raise ValueError(f"line {number}: partition and offset must be numbers") from None
        return cls(group=group, taken_at=datetime.now(UTC), partitions=parts)

    @classmethod
    def from_file(cls, path: Path, group: str | None = None) -> SavedOffsets:
        """`offsets.json` as saved by a reset, or `topic,partition,offset` CSV (then `group` is needed)."""
        text = path.read_text()
        if text.lstrip().startswith("{"):
            saved = cls.model_validate_json(text)
            if group and group != saved.group:
                raise ValueError(f"{path} holds offsets of group {saved.group}, not {group}")
            return saved
        return cls.from_csv(text, group)


class OffsetStore(Protocol):
    """Where the offsets before a reset are kept. `create` must fail if `name` exists."""

    def describe(self, name: str) -> str: ...

    def load(self, name: str) -> dict[str, str] | None: ...

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None: ...

    def discard(self, name: str) -> None:
        """Remove a record this store created (only when Kafka provably applied none of it)."""
        ...


class ConfigMapStore:
    """ConfigMaps in one namespace (the operator), optionally owned by the policy."""

    def __init__(self, k8s: K8s, namespace: str, owner_reference: dict[str, Any] | None = None) -> None:
        self.k8s, self.namespace, self.owner = k8s, namespace, owner_reference
        self._created: dict[str, str | None] = {}  # name → uid of a ConfigMap this store created

    def describe(self, name: str) -> str:
        return f"ConfigMap {self.namespace}/{name}"

    def load(self, name: str) -> dict[str, str] | None:
        return self.k8s.read_configmap(self.namespace, name)

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
        self._created[name] = self.k8s.create_configmap(
            self.namespace, name, data, labels=labels, owner=self.owner
        )

    def discard(self, name: str) -> None:
        uid = self._created.get(name)
        if uid is None:
            raise ValueError(f"{self.describe(name)} was not created by this store: not deleting it")
        del self._created[name]
        self.k8s.delete_configmap(self.namespace, name, uid)


class FileStore:
    """Files (the CLI): `<name>` gets offsets.json, and the same path with `.csv` the rollback CSV."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._created = False

    @property
    def csv_path(self) -> Path:
        return (
            self.path.with_suffix(".csv")
            if self.path.suffix != ".csv"
            else self.path.with_suffix(".rollback.csv")
        )

    def describe(self, name: str) -> str:
        return f"{self.path} (and {self.csv_path})"

    def load(self, name: str) -> dict[str, str] | None:
        return {OFFSETS_KEY: self.path.read_text()} if self.path.exists() else None

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("x") as f:  # "x": never overwrite earlier saved offsets
            f.write(data[OFFSETS_KEY])
        self.csv_path.write_text(data[CSV_KEY])
        self._created = True

    def discard(self, name: str) -> None:
        if not self._created:
            raise ValueError(f"{self.describe(name)} was not created by this run: not deleting it")
        self.csv_path.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)
        self._created = False


_NOT_DNS = re.compile(r"[^a-z0-9.-]")


def saved_offsets_name(policy_name: str, request_id: str) -> str:
    """`khp-<policy>-offsets-<request id>`, made a valid ConfigMap name (a request id may hold
    '_', a ConfigMap name may not: then a digest of the id is appended so names never collide)."""
    raw = f"khp-{policy_name}-offsets-{request_id}"
    name = _NOT_DNS.sub("-", raw.lower())
    if name != raw or len(name) > 253:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[:240].rstrip('-.')}-{digest}"
    return name


def _label(value: str) -> str:
    """A valid label value (≤ 63, alphanumeric at both ends)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", value)
    if len(cleaned) > 63:
        cleaned = cleaned[:54] + "-" + hashlib.sha256(value.encode()).hexdigest()[:8]
    return cleaned.strip("-._")


# --------------------------------------------------------------------------------------------
# Executing


def _group_not_empty(admin: KafkaAdmin, group: str) -> str | None:
    """None when the group is Empty (or unknown: no members); else why not. Raises AdminCallError."""
    described = admin.describe_groups([group])
    if group in described.errors:
        raise AdminCallError("describe_consumer_groups", described.errors[group])
    desc = described.values.get(group)
    if desc is None or (desc.state in EMPTY_STATES and not desc.member_ids):
        return None
    return f"group {group} is {desc.state} with {len(desc.member_ids)} member(s): stop its consumers first"


def _committed(admin: KafkaAdmin, group: str) -> dict[Key, int | None]:
    read = admin.group_offsets([group])
    if group in read.errors:
        raise AdminCallError("list_consumer_group_offsets", read.errors[group])
    return {(o.topic, o.partition): o.committed_offset for o in read.values.get(group, [])}


def _apply(
    admin: KafkaAdmin, group: str, entries: list[PartitionReset], *, guard: Callable[[], None] = lambda: None
) -> bool:
    """Clamp to live [log start, log end], alter, read back; fills `after`/`error` in place.

    Returns True, without reading back, when Kafka refused every partition because the group has
    members (a consumer joined after the Empty check): then provably nothing was altered — a
    partition is only retried for coordinator errors, so a final UNKNOWN_MEMBER_ID on each means
    none was ever accepted."""
    keys = [(e.topic, e.partition) for e in entries]
    live = admin.list_offsets(keys)
    targets: dict[Key, int] = {}
    for e in entries:
        key = (e.topic, e.partition)
        offsets = live.values.get(key)
        if offsets is None or offsets.log_start_offset is None or offsets.log_end_offset is None:
            e.error = f"log start/end offsets not read: {live.errors.get(key, 'no answer')}"
            continue
        if e.target is None:
            e.error = "no target"
            continue
        start, end = offsets.log_start_offset, offsets.log_end_offset
        clamped = min(max(e.target, start), end)
        if clamped != e.target:
            e.note = f"{e.target} is outside [{start}, {end}] now: clamped to {clamped}"
            e.clamped = True
            e.target = clamped
        targets[key] = clamped
    errors = _alter(admin, group, targets, guard=guard) if targets else {}
    for e in entries:
        key = (e.topic, e.partition)
        if key in errors:
            e.error = _alter_error(errors[key])
    if targets and all(errors.get(key, "").startswith(_GROUP_HAS_MEMBERS) for key in targets):
        return True
    after = _committed(admin, group)
    for e in entries:
        e.after = after.get((e.topic, e.partition))
        if e.error is None and e.after != e.target:
            e.error = f"committed offset is {_dash(e.after)} after the reset, not {e.target}"
    return False


_RETRIABLE = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR")


def _alter(
    admin: KafkaAdmin,
    group: str,
    targets: dict[Key, int],
    attempts: int = 4,
    *,
    guard: Callable[[], None] = lambda: None,
) -> dict[Key, str]:
    """Alter, retrying (same targets: idempotent) the partitions the coordinator was not ready for;
    `guard()` before each commit."""
    pending, errors = dict(targets), {}
    for attempt in range(attempts):
        guard()
        try:
            altered = admin.alter_group_offsets(group, pending)
            errors.update(altered.errors)
            for key in altered.values:
                errors.pop(key, None)
        except AdminCallError as exc:
            errors.update(dict.fromkeys(pending, exc.reason))
        retry = {k: pending[k] for k, why in errors.items() if k in pending and why.startswith(_RETRIABLE)}
        if not retry or attempt == attempts - 1:
            break
        pending = retry
        time.sleep(1.0 + attempt)
    return errors


_GROUP_HAS_MEMBERS = "UNKNOWN_MEMBER_ID"  # Kafka's answer to an admin commit on a non-empty group


def _alter_error(reason: str) -> str:
    if reason.startswith(_GROUP_HAS_MEMBERS):
        return f"rejected, the group is not Empty any more: {reason}"
    return reason


def _summary(
    verb: str, group: str, entries: list[PartitionReset], saved: str | None
) -> tuple[ResetState, str]:
    failed = [e for e in entries if not e.ok]
    where = f"; offsets before saved in {saved}" if saved else ""
    if not failed:
        clamped = sum(1 for e in entries if e.clamped)
        extra = f" ({clamped} clamped)" if clamped else ""
        return ResetState.APPLIED, f"{verb} group {group} on {len(entries)} partition(s){extra}{where}"
    first = failed[0]
    return (
        ResetState.FAILED,
        f"{verb} group {group}: {len(failed)} of {len(entries)} partition(s) failed, e.g. "
        f"{first.topic}-{first.partition}: {first.error}{where}",
    )


def apply_offset_reset(  # noqa: C901
    admin: KafkaAdmin,
    store: OffsetStore,
    plan: OffsetResetPlan,
    *,
    saved_name: str,
    labels: Mapping[str, str] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    guard: Callable[[], None] = lambda: None,
) -> OffsetResetOutcome:
    """The reset with the offsets before saved in `store` under `saved_name`; see the module docstring.
    `guard()` runs right before the offsets are saved (the once-per-id marker) and before each
    commit: it raises (the operator's LeaseLost) to stop there."""

    def outcome(state: ResetState, message: str, **kw: Any) -> OffsetResetOutcome:
        return OffsetResetOutcome(
            state=state, group=plan.group, request_id=plan.request_id, message=message, **kw
        )

    where = store.describe(saved_name)
    try:
        if store.load(saved_name) is not None:
            return outcome(
                ResetState.ALREADY_APPLIED,
                f"already applied: the offsets before this reset are saved in {where}; nothing done "
                "(use a new request id to reset again)",
                saved_offsets=saved_name,
            )
    except (K8sError, OSError, ValueError) as exc:
        return outcome(ResetState.FAILED, f"could not check {where}: {exc}; nothing changed")
    if not plan.executable:
        why = "; ".join([*plan.problems, *plan.missing][:5]) or "a partition has no target"
        return outcome(ResetState.FAILED, f"the plan cannot be executed: {why}; nothing changed")
    try:
        busy = _group_not_empty(admin, plan.group)
        if busy is not None:
            return outcome(ResetState.NOT_EMPTY, f"{busy}; nothing changed")
        before = _committed(admin, plan.group)
    except AdminCallError as exc:
        return outcome(ResetState.FAILED, f"could not read the group live: {exc}; nothing changed")
    entries = [
        PartitionReset(
            topic=e.topic,
            partition=e.partition,
            before=before.get((e.topic, e.partition)),
            target=e.target,
            clamped=e.clamped,
            note=e.note,
        )
        for e in plan.entries
    ]
    saved = SavedOffsets(
        group=plan.group,
        taken_at=clock(),
        request_id=plan.request_id,
        partitions=[SavedPartition(topic=e.topic, partition=e.partition, offset=e.before) for e in entries],
    )
    guard()
    try:
        store.create(saved_name, saved.data(), dict(labels or {}))
    except FileExistsError:
        return outcome(
            ResetState.ALREADY_APPLIED,
            f"already applied: {where} exists; nothing done",
            saved_offsets=saved_name,
        )
    except K8sError as exc:
        if exc.status == 409:
            return outcome(
                ResetState.ALREADY_APPLIED,
                f"already applied: {where} exists; nothing done",
                saved_offsets=saved_name,
            )
        return outcome(
            ResetState.FAILED, f"could not save the offsets before the reset: {exc}; nothing changed"
        )
    except OSError as exc:
        return outcome(
            ResetState.FAILED, f"could not save the offsets before the reset: {exc}; nothing changed"
        )
    try:
        refused_for_members = _apply(admin, plan.group, entries, guard=guard)
    except AdminCallError as exc:
        return outcome(
            ResetState.FAILED,
            f"reset of group {plan.group} not verified: {exc}; offsets before saved in {where}",
            saved_offsets=saved_name,
            partitions=entries,
        )
    if refused_for_members:
        return _joined_meanwhile(store, saved_name, where, entries, outcome)
    state, message = _summary("reset offsets of", plan.group, entries, where)
    return outcome(state, message, saved_offsets=saved_name, partitions=entries)


def _joined_meanwhile(
    store: OffsetStore,
    saved_name: str,
    where: str,
    entries: list[PartitionReset],
    outcome: Callable[..., OffsetResetOutcome],
) -> OffsetResetOutcome:
    """A consumer joined between the Empty check and the alter, and Kafka refused every partition:
    nothing changed, so the record written for this id is removed and the request waits for the
    group to be Empty again (design §4) instead of being used up. If the record cannot be removed,
    the id stays used (the safe side: never applied twice) and the message says so."""
    refusal = next(e.error for e in entries if e.error and _GROUP_HAS_MEMBERS in e.error)
    joined = (
        "a consumer joined the group between the Empty check and the reset: Kafka refused every "
        f"partition ({refusal}); nothing changed"
    )
    try:
        store.discard(saved_name)
    except (K8sError, OSError, ValueError) as exc:
        return outcome(
            ResetState.FAILED,
            f"{joined}, but {where} could not be removed ({exc}), so this request id counts as "
            "used: request the reset again with a new id",
            saved_offsets=saved_name,
            partitions=entries,
        )
    return outcome(
        ResetState.NOT_EMPTY,
        f"{joined}; {where} was removed again, so the same request runs once the group is Empty",
    )


def execute_offset_reset(
    admin: KafkaAdmin,
    k8s: K8s,
    plan: OffsetResetPlan,
    *,
    namespace: str,
    policy_name: str,
    request_id: str,
    owner_reference: dict[str, Any] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    guard: Callable[[], None] = lambda: None,
) -> OffsetResetOutcome:
    """The operator's reset: once per `request_id`, the offsets before saved in the ConfigMap
    `saved_offsets_name(policy_name, request_id)` (labelled with policy and request, owned by
    `owner_reference` when given — then deleting the policy deletes the saved offsets)."""
    if plan.request_id != request_id:
        plan = plan.model_copy(update={"request_id": request_id})
    return apply_offset_reset(
        admin,
        ConfigMapStore(k8s, namespace, owner_reference),
        plan,
        saved_name=saved_offsets_name(policy_name, request_id),
        labels={LABEL_POLICY: _label(policy_name), LABEL_REQUEST: _label(request_id)},
        clock=clock,
        guard=guard,
    )


def load_saved_offsets(k8s: K8s, namespace: str, name: str) -> SavedOffsets:
    """The saved offsets in ConfigMap `namespace/name` (ValueError when absent or unreadable)."""
    data = k8s.read_configmap(namespace, name)
    if data is None:
        raise ValueError(f"ConfigMap {namespace}/{name} not found")
    return SavedOffsets.from_data(data)


def rollback_plan(admin: KafkaAdmin, saved: SavedOffsets) -> list[PartitionReset]:
    """Per saved partition: committed now → the saved offset (partitions saved without one are
    reported: a committed offset cannot be taken back to "none" by a commit)."""
    current = _committed(admin, saved.group)
    out = []
    for p in saved.partitions:
        entry = PartitionReset(
            topic=p.topic, partition=p.partition, before=current.get((p.topic, p.partition)), target=p.offset
        )
        if p.offset is None:
            entry.note = "no committed offset before the reset: left as it is"
        out.append(entry)
    return out


def rollback_offsets(
    admin: KafkaAdmin, saved: SavedOffsets | OffsetStore | Path, *, name: str = ""
) -> OffsetResetOutcome:
    """Commit the saved offsets again (the group must be Empty). `saved`: the offsets, a store
    with `name` (e.g. `ConfigMapStore` and the ConfigMap name), or a file (offsets.json)."""
    if isinstance(saved, Path):
        saved = SavedOffsets.from_file(saved)
    elif not isinstance(saved, SavedOffsets):
        data = saved.load(name)
        if data is None:
            raise ValueError(f"{saved.describe(name)} not found")
        saved = SavedOffsets.from_data(data)
    request_id = f"rollback-{saved.request_id}" if saved.request_id else "rollback"

    def outcome(state: ResetState, message: str, **kw: Any) -> OffsetResetOutcome:
        return OffsetResetOutcome(
            state=state, group=saved.group, request_id=request_id, message=message, **kw
        )

    try:
        busy = _group_not_empty(admin, saved.group)
        if busy is not None:
            return outcome(ResetState.NOT_EMPTY, f"{busy}; nothing changed")
        entries = rollback_plan(admin, saved)
        restorable = [e for e in entries if e.target is not None]
        if _apply(admin, saved.group, restorable):
            return outcome(
                ResetState.NOT_EMPTY,
                "a consumer joined the group during the rollback: Kafka refused every partition; "
                "nothing changed",
                partitions=entries,
            )
    except AdminCallError as exc:
        return outcome(ResetState.FAILED, f"rollback of group {saved.group} failed: {exc}")
    state, message = _summary("restored the saved offsets of", saved.group, restorable, None)
    skipped = len(entries) - len(restorable)
    if skipped:
        message += f"; {skipped} partition(s) had no offset before the reset and were left as they are"
    return outcome(state, message, partitions=entries)


def planned_lines(entries: Iterable[PartitionReset], group: str) -> list[str]:
    """`GROUP TOPIC PARTITION CURRENT-OFFSET NEW-OFFSET` rows (kafka-consumer-groups --dry-run)."""
    return [f"{group} {e.topic} {e.partition} {_dash(e.before)} {_dash(e.target)}" for e in entries]


def read_group(admin: KafkaAdmin, group: str) -> ConsumerGroup | None:
    """The group as Kafka describes it now, with its committed offsets (None: no such group).
    Raises `access.NotVisible` when the principal may not DESCRIBE the group (Kafka answers
    GROUP_AUTHORIZATION_FAILED), AdminCallError when it could not be read otherwise."""
    described = admin.describe_groups([group])
    committed = admin.group_offsets([group])
    for part in (described.errors, committed.errors):
        if group in part:
            if (denied := access.group_denied(group, part[group])) is not None:
                raise access.NotVisible([denied])
            raise AdminCallError("group", part[group])
    desc = described.values.get(group)
    if desc is None or (desc.state == "Dead" and not desc.member_ids):
        return None
    return make_group(desc, committed.values.get(group, []))


def plan_live(
    admin: KafkaAdmin, request: OffsetResetRequest, now: datetime
) -> tuple[OffsetResetPlan, ConsumerGroup | None]:
    """`plan_offset_reset` on state read live now, just for this request (the named topics, their
    offsets, the group, and ListOffsets by time for toDatetime/byDuration); and the group read.
    Raises AdminCallError when the cluster cannot be read, `access.NotVisible` when a named
    topic or the group is hidden from the principal (or a named topic does not exist)."""
    md = admin.metadata()
    named = set(request.topics or []) | {p.topic for p in request.partitions or []}
    check = access.check_named_topics(admin, named, {p.topic for p in md.partitions})
    if not check.ok:
        raise access.NotVisible(check.problems())
    partitions = [p for p in md.partitions if p.topic in named]
    keys = [(p.topic, p.partition) for p in partitions]
    offsets = admin.list_offsets(keys)
    group = read_group(admin, request.group)
    snapshot = ClusterSnapshot(
        cluster="live",
        taken_at=now,
        brokers=md.brokers,
        partitions=partitions,
        offsets=[offsets.values[k] for k in sorted(offsets.values)],
        groups=[group] if group else [],
    )
    lookups = None
    ts = target_timestamp(request, now)
    if ts is not None:
        lookups = admin.offsets_for_times(keys, epoch_millis_at_or_after(ts)).values
    return plan_offset_reset(request, snapshot, now=now, offsets_for_times=lookups), group
