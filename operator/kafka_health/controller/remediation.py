"""The remediation half of a cycle: plan on the live snapshot, write the decision to status,
and hand an action to its executor.

The cluster lock (one action per Kafka cluster across policies) lives in this process: peering
guarantees one active operator, so an in-memory record is authoritative. It is released when
an action ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import KafkaHealthPolicySpec, KafkaHealthPolicyStatus
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import (
    ClusterLock,
    Decision,
    PlanContext,
    PolicyRef,
    cluster_key,
    plan,
    timestamp_lookups,
)
from kafka_health.report.remediation_status import apply_decision

_LOCKS: dict[str, ClusterLock] = {}
_LOCKS_GUARD = threading.Lock()

OffsetsForTimes = Callable[[datetime, list[tuple[str, int]]], Mapping[tuple[str, int], int | None]]


def lock_for(key: str) -> ClusterLock | None:
    with _LOCKS_GUARD:
        return _LOCKS.get(key)


def take_lock(lock: ClusterLock) -> bool:
    """Take or renew the cluster's lock for `lock.holder`; False when another policy holds it."""
    with _LOCKS_GUARD:
        held = _LOCKS.get(lock.cluster)
        if held is not None and held.holder != lock.holder:
            return False
        _LOCKS[lock.cluster] = lock
        return True


def release_lock(key: str, holder: str) -> None:
    with _LOCKS_GUARD:
        held = _LOCKS.get(key)
        if held is not None and held.holder == holder:
            del _LOCKS[key]


def decide(
    *,
    metadata: Mapping[str, Any],
    spec: KafkaHealthPolicySpec,
    status: KafkaHealthPolicyStatus,
    snapshot: ClusterSnapshot | None,
    diagnosis: Diagnosis | None,
    now: datetime,
    offsets_for_times: OffsetsForTimes | None = None,
) -> tuple[Decision, KafkaHealthPolicyStatus]:
    """Plan once on the live snapshot; the decision and the status it implies."""
    policy = PolicyRef.from_metadata(metadata)
    key = cluster_key(spec.cluster, snapshot)
    ctx = PlanContext(
        policy=policy,
        spec=spec,
        status=status,
        snapshot=snapshot,
        now=now,
        diagnosis=diagnosis,
        lock=lock_for(key),
    )
    lookups = timestamp_lookups(ctx)
    if lookups and offsets_for_times is not None:
        found = {rid: offsets_for_times(ts, partitions) for rid, (ts, partitions) in lookups.items()}
        ctx = PlanContext(
            policy=policy,
            spec=spec,
            status=status,
            snapshot=snapshot,
            now=now,
            diagnosis=diagnosis,
            lock=ctx.lock,
            offsets_for_times=found,
        )
    decision = plan(ctx)
    groups = {r.id: r.group for r in spec.remediation.offset_resets.requests or []}
    new_status = apply_decision(status, decision, now=now, generation=policy.generation, groups=groups)
    return decision, new_status
