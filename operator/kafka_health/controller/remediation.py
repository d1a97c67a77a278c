"""The remediation half of a cycle: plan on the live snapshot, write the decision to status,
and hand an action to its executor.

`decide` is the planner's call with what it needs read live; `act` carries a decision out under
the cluster's Lease (`controller/act_context.py`): the short actions in
`controller/short_actions.py`, a roll's steps in `controller/roll_steps.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from kafka_health.controller.act_context import ActContext, Stopped, locked, locked_status, take_lease
from kafka_health.controller.cluster_lease import LeaseLost
from kafka_health.controller.roll_steps import halt_waiting_roll, next_steps, restart_next_broker, resume_roll
from kafka_health.controller.short_actions import abort_transaction, elect, record_interrupted, reset_offsets
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ActionType,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    RequestState,
    WithheldReason,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import (
    ClusterLock,
    Decision,
    PlanContext,
    PlannedElection,
    PlannedRestart,
    PlannedTransactionAbort,
    PolicyRef,
    Verdict,
    plan,
    timestamp_lookups,
)
from kafka_health.report import metrics
from kafka_health.report.remediation_status import apply_decision

__all__ = ["ActContext", "LeaseLost", "Stopped", "act", "count_held", "decide", "locked_status"]

_next_steps = next_steps  # the name tests/unit/plan/test_restart_resume.py imports

OffsetsForTimes = Callable[[datetime, list[tuple[str, int]]], Mapping[tuple[str, int], int | None]]


def decide(
    *,
    metadata: Mapping[str, Any],
    spec: KafkaHealthPolicySpec,
    status: KafkaHealthPolicyStatus,
    snapshot: ClusterSnapshot | None,
    diagnosis: Diagnosis | None,
    now: datetime,
    offsets_for_times: OffsetsForTimes | None = None,
    broker_pods_ready: Mapping[int, bool] | None = None,
    lock: ClusterLock | None = None,
    replica: str | None = None,
) -> tuple[Decision, KafkaHealthPolicyStatus]:
    """Plan once on the live snapshot (and the broker pods' readiness and the cluster's lock,
    read with it); the decision and the status it implies."""
    policy = PolicyRef.from_metadata(metadata)
    ctx = PlanContext(
        policy=policy,
        spec=spec,
        status=status,
        snapshot=snapshot,
        now=now,
        diagnosis=diagnosis,
        lock=lock,
        replica=replica,
        broker_pods_ready=broker_pods_ready,
    )
    lookups = timestamp_lookups(ctx)
    if lookups and offsets_for_times is not None:
        found = {rid: offsets_for_times(ts, partitions) for rid, (ts, partitions) in lookups.items()}
        ctx = replace(ctx, offsets_for_times=found)
    decision = plan(ctx)
    groups = {r.id: r.group for r in spec.remediation.offset_resets.requests or []}
    new_status = apply_decision(status, decision, now=now, generation=policy.generation, groups=groups)
    count_held(policy, status, new_status)
    return decision, new_status


def count_held(policy: PolicyRef, before: KafkaHealthPolicyStatus, after: KafkaHealthPolicyStatus) -> None:
    """kafka_health_remediations for what did not run: an action that starts being withheld
    (`dry_run` when DryRun mode is the reason, else `withheld`), once per action, id and reason
    rather than every cycle it stays held; and a request that becomes Blocked."""
    held = {(w.action, w.id, w.reason) for w in before.withheld or []}
    for w in after.withheld or []:
        if (w.action, w.id, w.reason) not in held:
            result = "dry_run" if w.reason is WithheldReason.DRY_RUN else "withheld"
            metrics.count_remediation(policy.namespace, policy.name, w.action.value, result)
    blocked_before = {r.id for r in before.offset_resets or [] if r.state is RequestState.BLOCKED}
    for r in after.offset_resets or []:
        if r.state is RequestState.BLOCKED and r.id not in blocked_before:
            metrics.count_remediation(policy.namespace, policy.name, ActionType.OFFSET_RESET.value, "blocked")


# ----------------------------------------------------------------------------------------------
# Acting: hand the decision's action to its executor, persisting status before and after.

Persist = Callable[[KafkaHealthPolicyStatus], None]


def act(decision: Decision, status: KafkaHealthPolicyStatus, ctx: ActContext) -> KafkaHealthPolicyStatus:
    """Carry out `decision` (verdict Act, Resume or Halt) under the cluster's Lease; returns the
    status after it. Raises LeaseLost when the Lease was lost mid-action (write nothing then)."""
    policy = PolicyRef.from_metadata(ctx.metadata)
    if decision.verdict in (Verdict.HALT, Verdict.RESUME):
        current = status.current_remediation
        assert current is not None
        taken = take_lease(ctx, policy, current.action, current.id, current.plan_id)
        if isinstance(taken, ClusterLock):
            return locked(status, current.action, current.id, taken, ctx, policy)
        if decision.verdict is Verdict.HALT:
            return halt_waiting_roll(decision, status, ctx, policy, taken)
        if current.action is ActionType.ROLLING_RESTART:
            return resume_roll(status, ctx, policy, taken)
        return record_interrupted(status, ctx, policy, taken)
    action = decision.action
    assert action is not None
    taken = take_lease(ctx, policy, action.action, action.id, action.plan_id)
    if isinstance(taken, ClusterLock):
        return locked(status, action.action, action.id, taken, ctx, policy)
    if isinstance(action, PlannedRestart):
        return restart_next_broker(action, status, ctx, policy, taken)
    try:
        if isinstance(action, PlannedElection):
            return elect(action, status, ctx, policy, taken)
        if isinstance(action, PlannedTransactionAbort):
            return abort_transaction(action, status, ctx, policy, taken)
        return reset_offsets(action, status, ctx, policy, taken)
    finally:
        taken.release()
