"""The remediation half of a cycle: plan on the live snapshot, write the decision to status,
and hand an action to its executor.

One actor per Kafka cluster: every action (and every resumed step) first takes the cluster's
Lease (`controller/cluster_lease.py`); an action whose Lease someone else holds is withheld
with ClusterLocked. Every executor checks the Lease (compare-and-swap renewal) right before each
step that touches the cluster, and status writes check it too: a replica that lost it (frozen
longer than the TTL, paused, cut off) raises `LeaseLost` and writes nothing more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.controller.cluster_lease import ClusterLease, LeaseLost, LockSettings
from kafka_health.k8s.client import K8s
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    ConditionStatus,
    ConditionType,
    CurrentRemediation,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    NeverSafePartitions,
    OffsetResetResult,
    RemediationStep,
    RequestState,
    RestartBegun,
    RollingRestartResult,
    WithheldAction,
    WithheldReason,
    append_history,
)
from kafka_health.models.reasons import DegradedReason, EventReason
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import (
    ClusterLock,
    Decision,
    PlanContext,
    PlannedAction,
    PolicyRef,
    Verdict,
    breaker_reset_token,
    check_cluster_lock,
    cluster_key,
    plan,
    timestamp_lookups,
)
from kafka_health.plan.decision import merge_withheld
from kafka_health.plan.restart_resume import begun_before, halt_advice
from kafka_health.report import metrics
from kafka_health.report.remediation_status import apply_decision
from kafka_health.report.status import HALTED, set_condition

__all__ = ["ActContext", "LeaseLost", "act", "count_held", "decide", "locked_status"]

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
    on_event: Callable[[str, str, str], None]  # (type, reason, message)
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


def _take(
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


def _step_guard(ctx: ActContext, lease: ClusterLease) -> Callable[[], None]:
    """Right before a step that touches the cluster: still ours to act (compare-and-swap renewal)."""

    def guard() -> None:
        ctx.guard()
        lease.ensure(fresh=True)

    return guard


def _guarded_persist(ctx: ActContext, lease: ClusterLease) -> Persist:
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


def _locked(
    status: KafkaHealthPolicyStatus,
    action: ActionType,
    id: str | None,
    held: ClusterLock,
    ctx: ActContext,
    policy: PolicyRef,
) -> KafkaHealthPolicyStatus:
    ctx.conflict = held
    return locked_status(status, action, id, held, ctx.clock(), ctx.lock, policy.key)


def act(decision: Decision, status: KafkaHealthPolicyStatus, ctx: ActContext) -> KafkaHealthPolicyStatus:
    """Carry out `decision` (verdict Act, Resume or Halt) under the cluster's Lease; returns the
    status after it. Raises LeaseLost when the Lease was lost mid-action (write nothing then)."""
    policy = PolicyRef.from_metadata(ctx.metadata)
    if decision.verdict in (Verdict.HALT, Verdict.RESUME):
        current = status.current_remediation
        assert current is not None
        taken = _take(ctx, policy, current.action, current.id, current.plan_id)
        if isinstance(taken, ClusterLock):
            return _locked(status, current.action, current.id, taken, ctx, policy)
        if decision.verdict is Verdict.HALT:
            return _halt_waiting_roll(decision, status, ctx, policy, taken)
        return _resume(status, ctx, policy, taken)
    action = decision.action
    assert action is not None
    taken = _take(ctx, policy, action.action, action.id, action.plan_id)
    if isinstance(taken, ClusterLock):
        return _locked(status, action.action, action.id, taken, ctx, policy)
    if action.action is ActionType.ROLLING_RESTART:
        return _restart_next_broker(action, status, ctx, policy, taken)
    try:
        if action.action is ActionType.PREFERRED_LEADER_ELECTION:
            return _elect(action, status, ctx, policy, taken)
        return _reset_offsets(action, status, ctx, policy, taken)
    finally:
        taken.release()


def _record(status: KafkaHealthPolicyStatus, record: ActionRecord | None) -> None:
    if record is not None:
        status.history = append_history(status.history, record)


_Result = TypeVar("_Result", RollingRestartResult, OffsetResetResult)


def _with_result(results: list[_Result] | None, result: _Result) -> list[_Result]:
    """`results` with `result` last, in place of any earlier result for the same request id."""
    return [r for r in results or [] if r.id != result.id] + [result]


def _elect(
    action: PlannedAction,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    from kafka_health.remediate.leader_election import execute_visible_election

    assert action.election is not None
    out = status.model_copy(deep=True)
    started = ctx.clock()
    out.current_remediation = CurrentRemediation(
        action=action.action,
        id=action.id or action.plan_id,
        plan_id=action.plan_id,
        step=RemediationStep.ELECTING,
        started_at=started,
        message=action.summary[:1000],
    )
    _guarded_persist(ctx, lease)(out)
    ctx.on_event("Normal", EventReason.ELECTION_STARTED, action.summary)
    outcome = execute_visible_election(ctx.admin, action.election, guard=_step_guard(ctx, lease))
    _record(
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


def _reset_offsets(
    action: PlannedAction,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    from kafka_health.remediate.offset_reset import execute_offset_reset

    assert action.offset_reset is not None and action.id is not None
    out = status.model_copy(deep=True)
    started = ctx.clock()
    out.current_remediation = CurrentRemediation(
        action=action.action,
        id=action.id,
        plan_id=action.plan_id,
        step=RemediationStep.RESETTING_OFFSETS,
        started_at=started,
    )
    _guarded_persist(ctx, lease)(out)
    outcome = execute_offset_reset(
        ctx.admin,
        ctx.k8s,
        action.offset_reset,
        namespace=policy.namespace,
        policy_name=policy.name,
        request_id=action.id,
        owner_reference=_owner(ctx.metadata),
        clock=ctx.clock,
        guard=_step_guard(ctx, lease),
    )
    previous = next((r for r in out.offset_resets or [] if r.id == action.id), None)
    result = outcome.result(previous, ctx.clock())
    out.offset_resets = _with_result(out.offset_resets, result)
    _record(
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


def _resume(
    status: KafkaHealthPolicyStatus, ctx: ActContext, policy: PolicyRef, lease: ClusterLease
) -> KafkaHealthPolicyStatus:
    current = status.current_remediation
    assert current is not None
    if current.action is ActionType.ROLLING_RESTART:
        return _resume_roll(status, ctx, policy, lease)
    # An election or offset reset interrupted by an operator restart: short actions, not resumed
    # blindly. Record the interruption; the planner plans again (an applied reset is found by its
    # saved-offsets ConfigMap and never repeated).
    out = status.model_copy(deep=True)
    now = ctx.clock()
    _record(
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


# ----------------------------------------------------------------------------------------------
# Rolling restart: one broker per call; status.currentRemediation carries the roll between calls.


def _roll_persist(
    out: KafkaHealthPolicyStatus, ctx: ActContext, lease: ClusterLease
) -> Callable[[CurrentRemediation], None]:
    persist_status = _guarded_persist(ctx, lease)

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
    out.rolling_restarts = _with_result(out.rolling_restarts, result)


def _end_roll(
    out: KafkaHealthPolicyStatus,
    current: CurrentRemediation,
    result: RollingRestartResult,
    outcome: ActionOutcome,
    ctx: ActContext,
    policy: PolicyRef,
) -> None:
    """Close a roll in `out`, halted or done: its final result, its history entry, nothing in flight."""
    from kafka_health.remediate.rolling_restart import roll_record

    out.rolling_restarts = _with_result(out.rolling_restarts, result)
    _record(
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


def _next_steps(current: CurrentRemediation, begun: RestartBegun | None = None) -> str:
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


def _halt_waiting_roll(
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
            + f"). {_next_steps(current)}"
        )[:1000],
    )
    out = status.model_copy(deep=True)
    lease.ensure(fresh=False)
    _halt(out, current, result, ctx, policy, lease)
    return out


def _roll_started(current: CurrentRemediation | None, action: PlannedAction | None, ctx: ActContext) -> None:
    """The RollStarted Event: the order, and the partitions that will be unavailable to acks=all
    producers while their broker restarts (neverSafePartitions: Proceed), named."""
    if current is not None or action is None or action.restart is None:
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
    ctx.on_event(
        "Normal",
        EventReason.ROLL_STARTED,
        f"{step.request_id}: restarting brokers {order}, one at a time{extra}",
    )


def _restart_next_broker(
    action: PlannedAction | None,
    status: KafkaHealthPolicyStatus,
    ctx: ActContext,
    policy: PolicyRef,
    lease: ClusterLease,
) -> KafkaHealthPolicyStatus:
    from kafka_health.remediate.rolling_restart import halted_result, restart_broker

    pods = ctx.spec.cluster.broker_pods
    assert pods is not None  # the planner holds restarts without spec.cluster.brokerPods
    out = status.model_copy(deep=True)
    _roll_started(status.current_remediation, action, ctx)
    rr = ctx.spec.remediation.rolling_restart
    in_flight = status.current_remediation
    roll_id = in_flight.id if in_flight is not None else (action.id if action is not None else None) or ""
    outcome = restart_broker(
        action.restart if action is not None else None,
        k8s=ctx.k8s,
        admin=ctx.admin,
        pods_spec=pods,
        namespace=pods.namespace or policy.namespace,
        timeouts=ctx.spec.remediation.rolling_restart.timeouts,
        current=status.current_remediation,
        persist=_roll_persist(out, ctx, lease),
        clock=ctx.clock,
        sleep=ctx.sleep,
        plan_id=action.plan_id if action is not None else None,
        cluster_name=f"{policy.namespace}.{policy.name}",
        refuse_never_safe=rr.never_safe_partitions is NeverSafePartitions.REFUSE,
        guard=_step_guard(ctx, lease),
        controller_pods=ctx.spec.cluster.controller_pods,
        # A restart the last ended roll began and did not confirm: a health check, not a second restart.
        begun=begun_before(status.rolling_restarts, roll_id),
    )
    lease.ensure(fresh=False)  # the outcome is reported only while the roll is still ours
    if outcome.ok:
        out.current_remediation = outcome.current
        _set_roll_result(out, outcome.current, RequestState.RUNNING, outcome.message)
        out.remediation_summary = f"rolling restart {outcome.current.id}: broker {outcome.broker} done"[:256]
        ctx.on_event("Normal", EventReason.BROKER_RESTARTED, f"{outcome.current.id}: {outcome.message}")
        return out
    if outcome.result == "unsafe":
        out.current_remediation = outcome.current
        out.remediation_summary = f"rolling restart waits: {outcome.message}"[:256]
        return out
    # Failed: halt. Nothing else is restarted; Degraded until the spec changes.
    result = halted_result(outcome, clock=ctx.clock)
    advice = _next_steps(outcome.current, result.restart_begun)
    result = result.model_copy(update={"message": f"{result.message}. {advice}"[:1000]})
    _halt(out, outcome.current, result, ctx, policy, lease)
    return out


def _resume_roll(
    status: KafkaHealthPolicyStatus, ctx: ActContext, policy: PolicyRef, lease: ClusterLease
) -> KafkaHealthPolicyStatus:
    from kafka_health.remediate.rolling_restart import finish_roll

    current = status.current_remediation
    assert current is not None
    if current.current_broker is not None:
        return _restart_next_broker(None, status, ctx, policy, lease)
    rr = ctx.spec.remediation.rolling_restart
    result, election = finish_roll(
        current,
        admin=ctx.admin,
        post_roll_election=rr.post_roll_preferred_election,
        election_batch_size=ctx.spec.remediation.preferred_leader_election.batch_size,
        cluster_name=f"{policy.namespace}.{policy.name}",
        clock=ctx.clock,
        guard=_step_guard(ctx, lease),
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
