"""The rolling restart's steps, one broker per call, under the cluster's Lease:
status.currentRemediation carries the roll between calls (the roll driver makes them,
`controller/roll_driver.py`); a failure halts the roll and names what to do next."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafka_health.controller.act_context import ActContext, guarded_persist, record, step_guard, with_result
from kafka_health.controller.cluster_lease import ClusterLease
from kafka_health.models.policy import (
    ActionOutcome,
    ActionType,
    ConditionStatus,
    ConditionType,
    CurrentRemediation,
    KafkaHealthPolicyStatus,
    NeverSafePartitions,
    RequestState,
    RestartBegun,
    RollingRestartResult,
)
from kafka_health.models.reasons import DegradedReason, EventReason
from kafka_health.plan import Decision, PlannedRestart, PolicyRef, breaker_reset_token
from kafka_health.plan.restart_resume import begun_before, halt_advice
from kafka_health.plan.restart_safety import MAX_VOTER_LAG, MAX_VOTER_LAG_MS
from kafka_health.remediate.batch_restart import BatchOutcome
from kafka_health.remediate.broker_restart import RollEnv
from kafka_health.remediate.rolling_restart import finish_roll, halted_result, restarter, roll_record
from kafka_health.report import metrics
from kafka_health.report.status import HALTED, set_condition


def _roll_persist(
    out: KafkaHealthPolicyStatus, ctx: ActContext, lease: ClusterLease
) -> Callable[[CurrentRemediation], None]:
    persist_status = guarded_persist(ctx, lease)

    def persist(current: CurrentRemediation) -> None:
        out.current_remediation = current
        _set_roll_result(out, current, RequestState.RUNNING, current.message or current.step)
        persist_status(out)

    return persist


def _set_roll_result(
    out: KafkaHealthPolicyStatus, current: CurrentRemediation, state: RequestState, message: str
) -> None:
    previous = next((r for r in out.rolling_restarts or [] if r.id == current.id), None)
    result = RollingRestartResult(
        id=current.id,
        state=state,
        brokers_done=list(current.brokers_done or []),
        started_at=previous.started_at if previous and previous.started_at else current.started_at,
        message=message[:1000],
    )
    out.rolling_restarts = with_result(out.rolling_restarts, result)


def _end_roll(
    out: KafkaHealthPolicyStatus,
    current: CurrentRemediation,
    result: RollingRestartResult,
    outcome: ActionOutcome,
    ctx: ActContext,
    policy: PolicyRef,
) -> None:
    """Close a roll in `out`, halted or done: its final result, its history entry, nothing in flight."""
    out.rolling_restarts = with_result(out.rolling_restarts, result)
    record(
        out,
        roll_record(
            current,
            outcome,
            message=result.message,
            generation=policy.generation,
            breaker_reset=breaker_reset_token(policy.annotations),
            finished_at=ctx.clock(),
        ),
    )
    out.current_remediation = None


def _halt(
    out: KafkaHealthPolicyStatus,
    current: CurrentRemediation,
    result: RollingRestartResult,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> None:
    """Stop the roll in `out`: Failed under its id, Degraded (RemediationHalted) until the spec
    changes, a RollHalted Event; the cluster lock is released. Nothing else is touched."""
    message = result.message or "rolling restart halted"
    _end_roll(out, current, result, ActionOutcome.FAILED, ctx, policy)
    out.remediation_summary = message[:256]
    now = ctx.clock()
    out.conditions = set_condition(
        list(out.conditions or []),
        ConditionType.DEGRADED,
        ConditionStatus.TRUE,
        HALTED,
        message,
        now,
        policy.generation,
    )
    out.conditions = set_condition(
        out.conditions,
        ConditionType.REMEDIATING,
        ConditionStatus.FALSE,
        HALTED,
        message[:1024],
        now,
        policy.generation,
    )
    ctx.on_event("Warning", EventReason.ROLL_HALTED, f"{current.id}: {message}")
    metrics.count_remediation(policy.namespace, policy.name, ActionType.ROLLING_RESTART.value, "failed")
    lease.release()


def next_steps(current: CurrentRemediation, begun: Sequence[RestartBegun] = ()) -> str:
    """What the user does after a halt: the brokers left (the one in flight named as "restart
    begun, not confirmed healthy"), and how to finish without restarting any broker twice."""

    return halt_advice(
        list(current.brokers_planned or []),
        list(current.brokers_done or []),
        begun,
        new_request=lambda ids: (
            "add a new request id to spec.remediation.rollingRestart.requests with "
            f"brokers: [{', '.join(map(str, ids))}]"
        ),
    )


def halt_waiting_roll(
    decision: Decision,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    """Verdict Halt: the next broker stayed unsafe past timeouts.safeToRestart."""
    current = status.current_remediation
    wait = decision.roll_wait
    assert current is not None and wait is not None
    timeout = ctx.spec.remediation.rolling_restart.timeouts.safe_to_restart
    now = ctx.clock()
    result = RollingRestartResult(
        id=current.id,
        state=RequestState.FAILED,
        brokers_done=list(current.brokers_done or []),
        started_at=current.started_at,
        finished_at=now,
        message=(
            f"halted before broker {wait.broker}: not safe to restart within {timeout} "
            f"(timeouts.safeToRestart; rules: {', '.join(wait.rules)}"
            + (f"; partitions: {', '.join(wait.partitions[:10])}" if wait.partitions else "")
            + f"). {next_steps(current)}"
        )[:1000],
    )
    out = status.model_copy(deep=True)
    lease.ensure(fresh=False)
    _halt(out, current, result, ctx, policy, lease)
    return out


def _roll_started(current: CurrentRemediation | None, action: PlannedRestart | None, ctx: ActContext) -> None:
    """The RollStarted Event: the order, and the partitions that will be unavailable to acks=all
    producers while their broker restarts (neverSafePartitions: Proceed), named."""
    if current is not None or action is None:
        return
    step = action.restart
    order = ", ".join(map(str, step.order))
    if step.never_safe_count:
        names = ", ".join(step.never_safe[:20])
        more = f" and {step.never_safe_count - 20} more" if step.never_safe_count > 20 else ""
        extra = (
            f"; {step.never_safe_count} partition(s) with RF <= min.insync.replicas will be unavailable to "
            f"acks=all producers while their broker restarts (neverSafePartitions: Proceed): {names}{more}"
        )
    else:
        extra = "; every partition keeps enough in-sync replicas for acks=all producers"
    rr = ctx.spec.remediation.rolling_restart
    pace = (
        "one at a time"
        if rr.max_concurrent < 2
        else f"up to {rr.max_concurrent} brokers together (batchBy {rr.batch_by.value}; voters alone)"
    )
    ctx.on_event(
        "Normal", EventReason.ROLL_STARTED, f"{step.request_id}: restarting brokers {order}, {pace}{extra}"
    )


def restart_next_broker(
    action: PlannedRestart | None,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    pods = ctx.spec.cluster.broker_pods
    assert pods is not None  # the planner holds restarts without spec.cluster.brokerPods
    out = status.model_copy(deep=True)
    _roll_started(status.current_remediation, action, ctx)
    rr = ctx.spec.remediation.rolling_restart
    in_flight = status.current_remediation
    roll_id = in_flight.id if in_flight is not None else (action.id if action is not None else None) or ""
    env = RollEnv(
        k8s=ctx.k8s,
        admin=ctx.admin,
        pods_spec=pods,
        namespace=pods.namespace or policy.namespace,
        timeouts=rr.timeouts,
        persist=_roll_persist(out, ctx, lease),
        clock=ctx.clock,
        sleep=ctx.sleep,
        cluster_name=f"{policy.namespace}.{policy.name}",
        max_voter_lag=MAX_VOTER_LAG,
        max_voter_lag_ms=MAX_VOTER_LAG_MS,
        refuse_never_safe=rr.never_safe_partitions is NeverSafePartitions.REFUSE,
        guard=step_guard(ctx, lease),
        controller_pods=ctx.spec.cluster.controller_pods,
        drain_leadership=rr.drain_leadership,
    )

    def batch_started(members: list[int], why: str) -> None:
        ids = ", ".join(map(str, members))
        ctx.on_event(
            "Normal", EventReason.BATCH_STARTED, f"{roll_id}: restarting brokers {ids} together: {why}"
        )

    restart = restarter(
        env,
        action.plan_id if action is not None and action.plan_id else f"roll-{roll_id}",
        # A restart the last ended roll began and did not confirm: a health check, not a second restart.
        begun_before(status.rolling_restarts, roll_id),
        max_concurrent=rr.max_concurrent,
        batch_by=rr.batch_by.value,
        on_batch=batch_started,
    )
    outcome = restart(action.restart if action is not None else None, current=in_flight)
    lease.ensure(fresh=False)  # the outcome is reported only while the roll is still ours
    if outcome.ok:
        out.current_remediation = outcome.current
        _set_roll_result(out, outcome.current, RequestState.RUNNING, outcome.message)
        who = f"brokers {', '.join(map(str, outcome.brokers))}" if isinstance(outcome, BatchOutcome) else None
        who = who or f"broker {outcome.broker}"
        out.remediation_summary = f"rolling restart {outcome.current.id}: {who} done"[:256]
        if outcome.drain is not None:
            moves = outcome.drain.drained_text(f"broker {outcome.broker}")
            if outcome.restore is not None:
                moves += f"; {outcome.restore.restored_summary()}"
            ctx.on_event("Normal", EventReason.LEADERSHIP_DRAINED, f"{outcome.current.id}: {moves}"[:1000])
        ctx.on_event("Normal", EventReason.BROKER_RESTARTED, f"{outcome.current.id}: {outcome.message}")
        return out
    if outcome.result == "unsafe":
        out.current_remediation = outcome.current
        out.remediation_summary = f"rolling restart waits: {outcome.message}"[:256]
        return out
    # Failed: halt. Nothing else is restarted; Degraded until the spec changes.
    result = halted_result(outcome, clock=ctx.clock)
    begun = [result.restart_begun, *(result.batch_begun or [])] if result.restart_begun else []
    advice = next_steps(outcome.current, begun)
    result = result.model_copy(update={"message": f"{result.message}. {advice}"[:1000]})
    _halt(out, outcome.current, result, ctx, policy, lease)
    return out


def resume_roll(
    status: KafkaHealthPolicyStatus, ctx: ActContext, policy: PolicyRef, lease: ClusterLease
) -> KafkaHealthPolicyStatus:
    current = status.current_remediation
    assert current is not None
    if current.current_broker is not None:
        return restart_next_broker(None, status, ctx, policy, lease)
    rr = ctx.spec.remediation.rolling_restart
    result, election = finish_roll(
        current,
        admin=ctx.admin,
        post_roll_election=rr.post_roll_preferred_election,
        election_batch_size=ctx.spec.remediation.preferred_leader_election.batch_size,
        cluster_name=f"{policy.namespace}.{policy.name}",
        clock=ctx.clock,
        guard=step_guard(ctx, lease),
    )
    lease.ensure(fresh=False)
    out = status.model_copy(deep=True)
    _end_roll(out, current, result, ActionOutcome.SUCCEEDED, ctx, policy)
    out.remediation_summary = (result.message or "rolling restart done")[:256]
    ctx.on_event("Normal", EventReason.ROLL_SUCCEEDED, f"{current.id}: {result.message}")
    denied = None if election is None or election.succeeded else election.denied()
    if denied is not None:  # the roll succeeded; its post-roll election was refused for an ACL
        out.remediation_summary = f"rolling restart {current.id} done; post-roll election: {denied}"[:256]
        ctx.on_event(
            "Warning",
            DegradedReason.KAFKA_AUTHORIZATION_DENIED,
            f"{current.id}: post-roll election: {denied}",
        )
    metrics.count_remediation(policy.namespace, policy.name, ActionType.ROLLING_RESTART.value, "succeeded")
    lease.release()
    return out
