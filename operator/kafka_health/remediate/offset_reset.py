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
request keeps waiting) rather than a used-up id. Kafka's errors are matched by code
(`kafka_errors.code_of`), never by their text.

A share group (KIP-932) is reset the same way, its start offsets standing for the committed
offsets (`kind=SHARE`: `offset_groups.py`): only an existing, Empty share group; Kafka refuses
the alter with NON_EMPTY_GROUP when a consumer joined meanwhile.

The record and its stores: `offset_store.py`; the outcome: `offset_outcome.py`; the live reads
a reset is planned on: `offset_live.py` (all re-exported here).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.k8s.client import K8s, K8sError
from kafka_health.plan.offset_reset_plan import OffsetResetPlan
from kafka_health.remediate.kafka_errors import COORDINATOR_NOT_READY, code_of
from kafka_health.remediate.offset_groups import CONSUMER, GroupKind
from kafka_health.remediate.offset_groups import KINDS as KINDS
from kafka_health.remediate.offset_groups import SHARE as SHARE
from kafka_health.remediate.offset_live import plan_live as plan_live
from kafka_health.remediate.offset_live import read_group as read_group
from kafka_health.remediate.offset_outcome import Key as Key
from kafka_health.remediate.offset_outcome import OffsetResetOutcome as OffsetResetOutcome
from kafka_health.remediate.offset_outcome import PartitionReset as PartitionReset
from kafka_health.remediate.offset_outcome import ResetState as ResetState
from kafka_health.remediate.offset_outcome import dash
from kafka_health.remediate.offset_store import CSV_KEY as CSV_KEY
from kafka_health.remediate.offset_store import LABEL_POLICY as LABEL_POLICY
from kafka_health.remediate.offset_store import LABEL_REQUEST as LABEL_REQUEST
from kafka_health.remediate.offset_store import OFFSETS_KEY as OFFSETS_KEY
from kafka_health.remediate.offset_store import ConfigMapStore as ConfigMapStore
from kafka_health.remediate.offset_store import FileStore as FileStore
from kafka_health.remediate.offset_store import OffsetStore as OffsetStore
from kafka_health.remediate.offset_store import SavedOffsets as SavedOffsets
from kafka_health.remediate.offset_store import SavedPartition as SavedPartition
from kafka_health.remediate.offset_store import label_value
from kafka_health.remediate.offset_store import saved_offsets_name as saved_offsets_name

Outcome = Callable[..., OffsetResetOutcome]


def _clamp(admin: KafkaAdmin, entries: list[PartitionReset]) -> dict[Key, int]:
    """The targets clamped to live [log start, log end] (noted on each entry clamped); an entry
    without live offsets or a target gets its error instead."""
    live = admin.list_offsets([(e.topic, e.partition) for e in entries])
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
    return targets


def _apply(
    admin: KafkaAdmin,
    group: str,
    entries: list[PartitionReset],
    *,
    guard: Callable[[], None] = lambda: None,
    kind: GroupKind = CONSUMER,
) -> str | None:
    """Clamp to live [log start, log end], alter, read back; fills `after`/`error` in place.

    Returns Kafka's refusal (the first entry's error), without reading back, when it refused every
    partition because the group has members (UNKNOWN_MEMBER_ID, a share group's NON_EMPTY_GROUP:
    a consumer joined after the Empty check): then provably nothing was altered — a partition is only retried for coordinator
    errors, so a final UNKNOWN_MEMBER_ID on each means none was ever accepted. None otherwise."""
    targets = _clamp(admin, entries)
    errors = _alter(admin, group, targets, guard=guard, kind=kind) if targets else {}
    refusal: str | None = None
    for e in entries:
        reason = errors.get((e.topic, e.partition))
        if reason is not None:
            e.error = _alter_error(reason, kind)
            if refusal is None and kind.has_members(reason):
                refusal = e.error
    if targets and all(kind.has_members(errors.get(key)) for key in targets):
        return refusal
    after = kind.committed(admin, group)
    for e in entries:
        e.after = after.get((e.topic, e.partition))
        if e.error is None and e.after != e.target:
            e.error = f"committed offset is {dash(e.after)} after the reset, not {e.target}"
    return None


def _alter(
    admin: KafkaAdmin,
    group: str,
    targets: dict[Key, int],
    attempts: int = 4,
    *,
    guard: Callable[[], None] = lambda: None,
    kind: GroupKind = CONSUMER,
) -> dict[Key, str]:
    """Alter, retrying (same targets: idempotent) the partitions the coordinator was not ready for
    (`COORDINATOR_NOT_READY`, by code); `guard()` before each commit."""
    pending, errors = dict(targets), {}
    for attempt in range(attempts):
        guard()
        try:
            altered = kind.alter(admin, group, pending)
            errors.update(altered.errors)
            for key in altered.values:
                errors.pop(key, None)
        except AdminCallError as exc:
            errors.update(dict.fromkeys(pending, exc.reason))
        retry = {
            k: pending[k]
            for k, why in errors.items()
            if k in pending and code_of(why) in COORDINATOR_NOT_READY
        }
        if not retry or attempt == attempts - 1:
            break
        pending = retry
        time.sleep(1.0 + attempt)
    return errors


def _alter_error(reason: str, kind: GroupKind) -> str:
    if kind.has_members(reason):
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


def apply_offset_reset(
    admin: KafkaAdmin,
    store: OffsetStore,
    plan: OffsetResetPlan,
    *,
    saved_name: str,
    labels: Mapping[str, str] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    guard: Callable[[], None] = lambda: None,
    kind: GroupKind = CONSUMER,
) -> OffsetResetOutcome:
    """The reset with the offsets before saved in `store` under `saved_name`; see the module docstring.
    `guard()` runs right before the offsets are saved (the once-per-id marker) and before each
    commit: it raises (the operator's LeaseLost) to stop there. `kind`: a consumer or a share group."""

    def outcome(state: ResetState, message: str, **kw: Any) -> OffsetResetOutcome:
        return OffsetResetOutcome(
            state=state, group=plan.group, request_id=plan.request_id, message=message, **kw
        )

    where = store.describe(saved_name)
    for stop in (_not_yet_applied(store, saved_name, where, outcome), _executable(plan, outcome)):
        if stop is not None:
            return stop
    try:
        busy = kind.not_empty(admin, plan.group)
        if busy is not None:
            return outcome(ResetState.NOT_EMPTY, f"{busy}; nothing changed")
        before = kind.committed(admin, plan.group)
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
        kind=kind.name,
        partitions=[SavedPartition(topic=e.topic, partition=e.partition, offset=e.before) for e in entries],
    )
    guard()
    stop = _save_before(store, saved_name, saved, labels, where, outcome)
    if stop is not None:
        return stop
    return _reset(admin, plan.group, entries, store, saved_name, where, outcome, guard, kind)


def _not_yet_applied(
    store: OffsetStore, saved_name: str, where: str, outcome: Outcome
) -> OffsetResetOutcome | None:
    """Step 1: the saved-offsets record of this id exists → AlreadyApplied (None: go on)."""
    try:
        if store.load(saved_name) is None:
            return None
    except (K8sError, OSError, ValueError) as exc:
        return outcome(ResetState.FAILED, f"could not check {where}: {exc}; nothing changed")
    return outcome(
        ResetState.ALREADY_APPLIED,
        f"already applied: the offsets before this reset are saved in {where}; nothing done "
        "(use a new request id to reset again)",
        saved_offsets=saved_name,
    )


def _executable(plan: OffsetResetPlan, outcome: Outcome) -> OffsetResetOutcome | None:
    if plan.executable:
        return None
    why = "; ".join([*plan.problems, *plan.missing][:5]) or "a partition has no target"
    return outcome(ResetState.FAILED, f"the plan cannot be executed: {why}; nothing changed")


def _save_before(
    store: OffsetStore,
    saved_name: str,
    saved: SavedOffsets,
    labels: Mapping[str, str] | None,
    where: str,
    outcome: Outcome,
) -> OffsetResetOutcome | None:
    """Step 4: write the record of this id (the once-per-id marker); one that exists already →
    AlreadyApplied, a failed write → Failed, nothing changed (None: saved, go on)."""
    try:
        store.create(saved_name, saved.data(), dict(labels or {}))
        return None
    except FileExistsError:
        exists = True
        failure: Exception | None = None
    except K8sError as exc:
        exists, failure = exc.status == 409, exc
    except OSError as exc:
        exists, failure = False, exc
    if exists:
        return outcome(
            ResetState.ALREADY_APPLIED,
            f"already applied: {where} exists; nothing done",
            saved_offsets=saved_name,
        )
    return outcome(
        ResetState.FAILED, f"could not save the offsets before the reset: {failure}; nothing changed"
    )


def _reset(
    admin: KafkaAdmin,
    group: str,
    entries: list[PartitionReset],
    store: OffsetStore,
    saved_name: str,
    where: str,
    outcome: Outcome,
    guard: Callable[[], None],
    kind: GroupKind,
) -> OffsetResetOutcome:
    """Steps 5 and 6: alter and verify, the offsets before saved in `where`."""
    try:
        refusal = _apply(admin, group, entries, guard=guard, kind=kind)
    except AdminCallError as exc:
        return outcome(
            ResetState.FAILED,
            f"reset of group {group} not verified: {exc}; offsets before saved in {where}",
            saved_offsets=saved_name,
            partitions=entries,
        )
    if refusal is not None:
        return _joined_meanwhile(store, saved_name, where, entries, refusal, outcome)
    state, message = _summary("reset offsets of", group, entries, where)
    return outcome(state, message, saved_offsets=saved_name, partitions=entries)


def _joined_meanwhile(
    store: OffsetStore,
    saved_name: str,
    where: str,
    entries: list[PartitionReset],
    refusal: str,
    outcome: Outcome,
) -> OffsetResetOutcome:
    """A consumer joined between the Empty check and the alter, and Kafka refused every partition
    (`refusal`): nothing changed, so the record written for this id is removed and the request
    waits for the group to be Empty again (docs/safety.md, "Offset reset") instead of being used
    up. If the record cannot be removed, the id stays used (the safe side: never applied twice)
    and the message says so."""
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
        labels={LABEL_POLICY: label_value(policy_name), LABEL_REQUEST: label_value(request_id)},
        clock=clock,
        guard=guard,
    )


def load_saved_offsets(k8s: K8s, namespace: str, name: str) -> SavedOffsets:
    """The saved offsets in ConfigMap `namespace/name` (ValueError when absent or unreadable)."""
    data = k8s.read_configmap(namespace, name)
    if data is None:
        raise ValueError(f"ConfigMap {namespace}/{name} not found")
    return SavedOffsets.from_data(data)


def rollback_plan(admin: KafkaAdmin, saved: SavedOffsets, kind: GroupKind = CONSUMER) -> list[PartitionReset]:
    """Per saved partition: committed now → the saved offset (partitions saved without one are
    reported: a committed offset cannot be taken back to "none" by a commit)."""
    current = kind.committed(admin, saved.group)
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
    admin: KafkaAdmin,
    saved: SavedOffsets | OffsetStore | Path,
    *,
    name: str = "",
    kind: GroupKind = CONSUMER,
) -> OffsetResetOutcome:
    """Commit the saved offsets again (the group must be Empty). `saved`: the offsets, a store
    with `name` (e.g. `ConfigMapStore` and the ConfigMap name), or a file (offsets.json);
    `kind`: a consumer or a share group."""
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
        busy = kind.not_empty(admin, saved.group)
        if busy is not None:
            return outcome(ResetState.NOT_EMPTY, f"{busy}; nothing changed")
        entries = rollback_plan(admin, saved, kind)
        restorable = [e for e in entries if e.target is not None]
        if _apply(admin, saved.group, restorable, kind=kind) is not None:
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
    return [f"{group} {e.topic} {e.partition} {dash(e.before)} {dash(e.target)}" for e in entries]
