"""The short actions, run inside a cycle under the cluster's Lease: a preferred leader election,
an offset reset, a transaction abort, and the record of one interrupted by an operator restart."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kafka_health.controller.act_context import ActContext, guarded_persist, record, step_guard, with_result
from kafka_health.controller.cluster_lease import ClusterLease
from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    CurrentRemediation,
    KafkaHealthPolicyStatus,
    RemediationStep,
    RequestState,
    TransactionAbortResult,
)
from kafka_health.models.reasons import DegradedReason, EventReason
from kafka_health.plan import (
    PlannedElection,
    PlannedOffsetReset,
    PlannedTransactionAbort,
    PolicyRef,
    breaker_reset_token,
)
from kafka_health.remediate.leader_election import execute_visible_election
from kafka_health.remediate.offset_reset import execute_offset_reset
from kafka_health.remediate.transaction_abort import AbortState, abort_transaction_request
from kafka_health.report import metrics


def _begin(
    action: PlannedElection | PlannedOffsetReset | PlannedTransactionAbort,
    step: RemediationStep,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    lease: ClusterLease,
    *,
    message: str | None = None,
) -> tuple[KafkaHealthPolicyStatus, datetime]:
    """The status with `action` in flight at `step`, persisted under the Lease before it acts (a
    restarted operator then finds it: `record_interrupted`), and when it started."""
    out = status.model_copy(deep=True)
    started = ctx.clock()
    out.current_remediation = CurrentRemediation(
        action=action.action,
        id=action.id or action.plan_id,
        plan_id=action.plan_id,
        step=step,
        started_at=started,
        message=message[:1000] if message is not None else None,
    )
    guarded_persist(ctx, lease)(out)
    return out, started


def elect(
    action: PlannedElection,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    out, started = _begin(action, RemediationStep.ELECTING, status, ctx, lease, message=action.summary)
    ctx.on_event("Normal", EventReason.ELECTION_STARTED, action.summary)
    outcome = execute_visible_election(ctx.admin, action.election, guard=step_guard(ctx, lease))
    record(
        out,
        outcome.record(
            plan_id=action.plan_id,
            started_at=started,
            finished_at=ctx.clock(),
            generation=policy.generation,
            breaker_reset=breaker_reset_token(policy.annotations),
            request_id=action.id,
        ),
    )
    out.current_remediation = None
    ok = outcome.succeeded
    denied = None if ok else outcome.denied()
    if denied is not None:  # a missing ACL (ALTER on CLUSTER, DESCRIBE on hidden topics): the grant
        out.remediation_summary = denied[:256]
        ctx.on_event("Warning", DegradedReason.KAFKA_AUTHORIZATION_DENIED, f"{outcome.summary()}; {denied}")
    else:
        out.remediation_summary = outcome.summary()[:256]
        ctx.on_event(
            "Normal" if ok else "Warning",
            EventReason.ELECTION_SUCCEEDED if ok else EventReason.ELECTION_FAILED,
            outcome.summary(),
        )
    metrics.count_remediation(
        policy.namespace, policy.name, action.action.value, "succeeded" if ok else "failed"
    )
    return out


def reset_offsets(
    action: PlannedOffsetReset,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    assert action.id is not None  # a reset is always a request
    out, started = _begin(action, RemediationStep.RESETTING_OFFSETS, status, ctx, lease)
    outcome = execute_offset_reset(
        ctx.admin,
        ctx.k8s,
        action.offset_reset,
        namespace=policy.namespace,
        policy_name=policy.name,
        request_id=action.id,
        owner_reference=_owner(ctx.metadata),
        clock=ctx.clock,
        guard=step_guard(ctx, lease),
    )
    previous = next((r for r in out.offset_resets or [] if r.id == action.id), None)
    result = outcome.result(previous, ctx.clock())
    out.offset_resets = with_result(out.offset_resets, result)
    record(
        out,
        outcome.record(
            plan_id=action.plan_id,
            started_at=started,
            finished_at=ctx.clock(),
            generation=policy.generation,
            breaker_reset=breaker_reset_token(policy.annotations),
        ),
    )
    out.current_remediation = None
    out.remediation_summary = outcome.message[:256]
    state = result.state.value
    denied = outcome.denied()
    if denied is not None:  # a missing ACL (READ on GROUP/TOPIC): what to grant, not just "failed"
        out.remediation_summary = f"{action.id}: {denied}"[:256]
        ctx.on_event(
            "Warning", DegradedReason.KAFKA_AUTHORIZATION_DENIED, f"{action.id}: {outcome.message}; {denied}"
        )
    else:
        kind = "Normal" if state in ("Succeeded", "Waiting") else "Warning"
        ctx.on_event(kind, f"OffsetReset{state}", f"{action.id}: {outcome.message}")
    if result.state.terminal:  # Waiting (group not Empty) acted on nothing: status says why
        metrics.count_remediation(policy.namespace, policy.name, action.action.value, state.lower())
    return out


def abort_transaction(
    action: PlannedTransactionAbort,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    """`kafka-health abort-transaction --execute` for one request: read live, aborted only when
    hanging, read again; anything else (not hanging, not found, not taken) is Failed, with why."""
    assert action.id is not None  # an abort is always a request
    out, started = _begin(
        action, RemediationStep.ABORTING_TRANSACTION, status, ctx, lease, message=action.summary
    )
    outcome = abort_transaction_request(ctx.admin, action.abort, action.timeout_minutes, ctx.clock)
    ok = outcome.state is AbortState.ABORTED
    message = f"{action.id}: {outcome.message}"
    record(
        out,
        ActionRecord(
            action=action.action,
            id=action.id,
            plan_id=action.plan_id,
            outcome=ActionOutcome.SUCCEEDED if ok else ActionOutcome.FAILED,
            started_at=started,
            finished_at=ctx.clock(),
            message=message[:1000],
            generation=policy.generation,
            breaker_reset=breaker_reset_token(policy.annotations),
        ),
    )
    out.transaction_aborts = with_result(
        out.transaction_aborts,
        TransactionAbortResult(
            id=action.id,
            state=RequestState.SUCCEEDED if ok else RequestState.FAILED,
            finished_at=ctx.clock(),
            message=outcome.message[:1000],
        ),
    )
    out.current_remediation = None
    out.remediation_summary = message[:256]
    reason = EventReason.TRANSACTION_ABORTED if ok else EventReason.TRANSACTION_ABORT_FAILED
    ctx.on_event("Normal" if ok else "Warning", reason, message)
    metrics.count_remediation(
        policy.namespace, policy.name, action.action.value, "succeeded" if ok else "failed"
    )
    return out


def _owner(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    uid = metadata.get("uid")
    if not uid:
        return None
    return {
        "api_version": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "name": metadata.get("name"),
        "uid": uid,
    }


def record_interrupted(
    status: KafkaHealthPolicyStatus, ctx: ActContext, policy: PolicyRef, lease: ClusterLease
) -> KafkaHealthPolicyStatus:
    """An election or offset reset interrupted by an operator restart: short actions, not resumed
    blindly. Record the interruption; the planner plans again (an applied reset is found by its
    saved-offsets ConfigMap and never repeated)."""
    current = status.current_remediation
    assert current is not None
    out = status.model_copy(deep=True)
    now = ctx.clock()
    record(
        out,
        ActionRecord(
            action=current.action,
            id=current.id,
            plan_id=current.plan_id,
            outcome=ActionOutcome.FAILED,
            started_at=current.started_at,
            finished_at=now,
            message="interrupted by an operator restart; planned again from the live state",
            generation=policy.generation,
            breaker_reset=breaker_reset_token(policy.annotations),
        ),
    )
    if current.action is ActionType.TRANSACTION_ABORT:  # the marker may have been sent: not repeated
        out.transaction_aborts = [
            r.model_copy(
                update={
                    "state": RequestState.FAILED,
                    "finished_at": now,
                    "message": "interrupted by an operator restart after the abort marker may have been sent: "
                    "read the partition (kafka-health diagnose --hanging-transactions) and commit a new id "
                    "if it still hangs",
                }
            )
            if r.id == current.id and not r.state.terminal
            else r
            for r in out.transaction_aborts or []
        ] or None
    if current.action is ActionType.OFFSET_RESET:
        out.offset_resets = [
            r.model_copy(update={"state": RequestState.PENDING, "message": "interrupted; planned again"})
            if r.id == current.id and not r.state.terminal
            else r
            for r in out.offset_resets or []
        ] or None
    out.current_remediation = None
    lease.release()
    return out
