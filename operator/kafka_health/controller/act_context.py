"""What every executor the controller runs shares: its context (clients, policy, how to persist,
how to wait), the cluster's Lease taken for an action, and the status records common to all
actions.

One actor per Kafka cluster: every action (and every resumed step) first takes the cluster's
Lease (`controller/cluster_lease.py`); an action whose Lease someone else holds is withheld
with ClusterLocked. Every executor checks the Lease (compare-and-swap renewal) right before each
step that touches the cluster, and status writes check it too: a replica that lost it (frozen
longer than the TTL, paused, cut off) raises `LeaseLost` and writes nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.controller.cluster_lease import ClusterLease, LockSettings
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import (
    ActionRecord,
    ActionType,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    OffsetResetResult,
    RollingRestartResult,
    TransactionAbortResult,
    WithheldAction,
    WithheldReason,
    append_history,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import ClusterLock, PolicyRef, check_cluster_lock, cluster_key
from kafka_health.plan.decision import merge_withheld


class Stopped(Exception):
    """The policy's work stopped (deleted, operator shutting down): leave mid-wait, touch nothing."""


OnEvent = Callable[[str, str, str], None]
"""Posts an Event about the policy: (type, reason, message)."""

# ----------------------------------------------------------------------------------------------
# Acting: hand the decision's action to its executor, persisting status before and after.

Persist = Callable[[KafkaHealthPolicyStatus], None]
Clock = Callable[[], datetime]


@dataclass
class ActContext:
    """What an executor needs besides the action: clients, the policy, and how to persist."""

    metadata: Mapping[str, Any]
    spec: KafkaHealthPolicySpec
    snapshot: ClusterSnapshot | None
    admin: KafkaAdmin
    k8s: K8s
    persist: Persist
    clock: Clock
    on_event: OnEvent
    lock: LockSettings
    """Where the cluster Leases live, this replica's name, their TTL."""
    sleep: Callable[[float], None] = time.sleep
    """How executors wait between polls; the roll driver's raises when the policy's work stops."""
    lease: ClusterLease | None = None
    """A Lease already held across calls (the roll driver's, for the whole roll); None: each
    action takes its own and releases it when it ends."""
    guard: Callable[[], None] = lambda: None
    """Called before each step that touches the cluster, with the Lease check: the roll driver's
    raises when the policy's work stops (peering paused this replica, shutdown)."""
    conflict: ClusterLock | None = None
    """Set by `act` when someone else held the cluster's Lease (the action was withheld)."""


def take_lease(
    ctx: ActContext, policy: PolicyRef, action: ActionType, id: str | None, plan_id: str | None
) -> ClusterLease | ClusterLock:
    """The cluster's Lease for this action, held now; or the lock record of whoever holds it."""
    lease = ctx.lease  # the roll driver's: it chose the key (kept while the cluster id is unreadable)
    if lease is None:
        lease = ClusterLease(
            ctx.k8s,
            ctx.lock,
            cluster=cluster_key(ctx.spec.cluster, ctx.snapshot),
            policy=policy.key,
            action=action,
            id=id,
            plan_id=plan_id,
            clock=ctx.clock,
        )
    held = lease.acquire()
    return held if held is not None else lease


def step_guard(ctx: ActContext, lease: ClusterLease) -> Callable[[], None]:
    """Right before a step that touches the cluster: still ours to act (compare-and-swap renewal)."""

    def guard() -> None:
        ctx.guard()
        lease.ensure(fresh=True)

    return guard


def guarded_persist(ctx: ActContext, lease: ClusterLease) -> Persist:
    """Status writes only while the Lease is ours: a replica that lost it never overwrites the
    progress of the one that holds it now."""

    def persist(status: KafkaHealthPolicyStatus) -> None:
        lease.ensure(fresh=False)
        ctx.persist(status)

    return persist


def locked_status(
    status: KafkaHealthPolicyStatus,
    action: ActionType,
    id: str | None,
    held: ClusterLock,
    now: datetime,
    lock: LockSettings,
    policy: str,
) -> KafkaHealthPolicyStatus:
    """`status` with the action withheld: ClusterLocked by whoever holds the cluster's Lease."""
    hold = check_cluster_lock(held, policy, now, lock.ttl, replica=lock.replica)
    message = hold.message if hold is not None else f"ClusterLocked by {held.describe()}"
    out = status.model_copy(deep=True)
    item = WithheldAction(
        action=action,
        id=id,
        reason=WithheldReason.CLUSTER_LOCKED,
        message=message[:1000],
        retry_at=hold.retry_at if hold is not None else None,
    )
    others = [w for w in status.withheld or [] if (w.action, w.id) != (action, id)]
    out.withheld = merge_withheld(status.withheld, [item], now) + others
    return out


def locked(
    status: KafkaHealthPolicyStatus,
    action: ActionType,
    id: str | None,
    held: ClusterLock,
    ctx: ActContext,
    policy: PolicyRef,
) -> KafkaHealthPolicyStatus:
    ctx.conflict = held
    return locked_status(status, action, id, held, ctx.clock(), ctx.lock, policy.key)


def record(status: KafkaHealthPolicyStatus, entry: ActionRecord | None) -> None:
    """`entry` appended to status.history (in place; None: nothing to record)."""
    if entry is not None:
        status.history = append_history(status.history, entry)


_Result = TypeVar("_Result", RollingRestartResult, OffsetResetResult, TransactionAbortResult)


def with_result(results: list[_Result] | None, result: _Result) -> list[_Result]:
    """`results` with `result` last, in place of any earlier result for the same request id."""
    return [r for r in results or [] if r.id != result.id] + [result]
