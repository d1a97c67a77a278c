"""The planner: findings + policy + remediation state + live state + clock → one `Decision`.

Pure: everything it reads is in `PlanContext`, including `now`. It never acts; executors do
what the decision says and record it in status, which the next call reads back.

Order of business:
1. An action in flight (status.currentRemediation) comes first. A roll between brokers gets
   its next broker (after the guardrails that gate a step and the restart safety rules), or a
   reason to wait; any other step in flight is left to its executor (Resume).
2. Otherwise the candidates, in priority order — requested rolling restarts, requested offset
   resets, then preferred leader election (requested by annotation, or automatic when the
   live leader imbalance is over the threshold) — are each checked against every guardrail.
   The first that passes is the decision: Act in Enforce (after approval, if required), only
   shown in DryRun; each of the others is withheld with its reasons (or Queued: one action
   at a time).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import TypeAdapter, ValidationError

from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ANNOTATION_ELECT_LEADERS,
    ANNOTATION_ROLLING_RESTART,
    ActionType,
    CurrentRemediation,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    Mode,
    NeverSafePartitions,
    OffsetResetRequest,
    PendingPlan,
    RequestId,
    RequestState,
    RollingRestartRequest,
    RollWaitReason,
    WithheldAction,
    WithheldReason,
    parse_duration,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.approval import approvals, check_approval, plan_id
from kafka_health.plan.cluster_lock import ClusterLock
from kafka_health.plan.decision import Decision, PlannedAction, RequestUpdate, RestartStep, RollWait, Verdict
from kafka_health.plan.guardrails import PolicyRef, SafetyLimits, common_holds
from kafka_health.plan.hold import Hold, iso
from kafka_health.plan.leader_election_plan import imbalance_exceeds, plan_preferred_election
from kafka_health.plan.offset_reset_plan import (
    GateState,
    group_gate,
    plan_offset_reset,
    resolve_partitions,
    target_timestamp,
)
from kafka_health.plan.restart_safety import (
    MAX_LISTED,
    RestartSafety,
    check_restart_safety,
    controller_only_nodes,
    describe_order,
    never_safe_verdict,
    order_brokers,
)

MAX_DETAILS = 100
_SNAPSHOT_HOLDS = (
    WithheldReason.SNAPSHOT_UNREADABLE,
    WithheldReason.SNAPSHOT_STALE,
    WithheldReason.SNAPSHOT_INCOMPLETE,
)
_REQUEST_ID: TypeAdapter[str] = TypeAdapter(RequestId)


@dataclass(frozen=True)
class PlanContext:
    """Everything the planner may look at. `snapshot` must be read live, just before planning."""

    policy: PolicyRef
    spec: KafkaHealthPolicySpec
    status: KafkaHealthPolicyStatus
    snapshot: ClusterSnapshot | None
    now: datetime
    diagnosis: Diagnosis | None = None
    lock: ClusterLock | None = None
    """The cluster's action lock as read now (the Lease), None when free."""
    replica: str | None = None
    """This operator replica (the lock's holder names it); None: any replica of the policy."""
    offsets_for_times: Mapping[str, Mapping[tuple[str, int], int | None]] = field(default_factory=dict)
    """Per offset-reset request id: ListOffsets results for `timestamp_lookups(ctx)[id]`."""
    limits: SafetyLimits = field(default_factory=SafetyLimits)
    broker_pods_ready: Mapping[int, bool] | None = None
    """Broker id → its pod is Ready and not terminating, read live with `snapshot` (None: not
    read; a roll then relies on the executor's own check before the delete)."""

    def __post_init__(self) -> None:
        if self.now.tzinfo is None:
            raise ValueError("PlanContext.now must be timezone-aware")


@dataclass
class _Candidate:
    action: ActionType
    id: str | None
    holds: list[Hold]
    planned: PlannedAction | None = None
    offset_request: OffsetResetRequest | None = None


# --------------------------------------------------------------------------------------------
# Public helpers for the operator


def restart_requests(ctx: PlanContext) -> list[RollingRestartRequest]:
    """Rolling restart requests from the spec, then the one named by the annotation (if valid and new)."""
    requests = list(ctx.spec.remediation.rolling_restart.requests or [])
    value = ctx.policy.annotations.get(ANNOTATION_ROLLING_RESTART, "").strip()
    if value and value not in {r.id for r in requests}:
        with contextlib.suppress(ValidationError):  # an invalid id: reported by _invalid_annotation_requests
            requests.append(
                RollingRestartRequest(id=value, reason=f"annotation {ANNOTATION_ROLLING_RESTART}")
            )
    return requests


def timestamp_lookups(ctx: PlanContext) -> dict[str, tuple[datetime, list[tuple[str, int]]]]:
    """Per pending toDatetime/byDuration offset reset: the time and the partitions whose offsets
    for that time the caller must look up (ListOffsets) and pass in `offsets_for_times`."""
    out: dict[str, tuple[datetime, list[tuple[str, int]]]] = {}
    if ctx.snapshot is None:
        return out
    results = {r.id: r for r in ctx.status.offset_resets or []}
    for request in ctx.spec.remediation.offset_resets.requests or []:
        result = results.get(request.id)
        if result is not None and result.state.terminal:
            continue
        ts = target_timestamp(request, ctx.now)
        if ts is not None:
            partitions, _ = resolve_partitions(request, ctx.snapshot)
            out[request.id] = (ts, partitions)
    return out


# --------------------------------------------------------------------------------------------
# Candidates


def _holds(
    ctx: PlanContext, action: ActionType, *, group: str | None = None, starting: bool = True
) -> list[Hold]:
    return common_holds(
        action,
        policy=ctx.policy,
        spec=ctx.spec,
        status=ctx.status,
        snapshot=ctx.snapshot,
        lock=ctx.lock,
        now=ctx.now,
        limits=ctx.limits,
        group=group,
        starting=starting,
        replica=ctx.replica,
    )


def _snapshot_usable(holds: list[Hold]) -> bool:
    return not any(h.reason in _SNAPSHOT_HOLDS for h in holds)


def _observing(ctx: PlanContext) -> bool:
    return ctx.spec.remediation.mode is Mode.OBSERVE


def _next_broker_safety(
    ctx: PlanContext, snapshot: ClusterSnapshot, brokers: list[int], holds: list[Hold]
) -> tuple[list[int], RestartSafety]:
    """The restart order of `brokers` and whether its first may restart now (a hold when not),
    alike for a new roll and for the next broker of one in flight."""
    order = order_brokers(snapshot, brokers)
    safety = check_restart_safety(
        snapshot,
        order[0],
        remaining=order,
        max_voter_lag=ctx.limits.max_voter_lag,
        max_voter_lag_ms=ctx.limits.max_voter_lag_ms,
        refuse_never_safe=_refuses_never_safe(ctx),
    )
    pods = _pods_hold(ctx)
    if pods is not None:
        holds.append(pods)
    if not safety.safe:
        holds.append(Hold(WithheldReason.UNSAFE_TO_RESTART, safety.summary()))
    return order, safety


def _refuses_never_safe(ctx: PlanContext) -> bool:
    return ctx.spec.remediation.rolling_restart.never_safe_partitions is NeverSafePartitions.REFUSE


def _pods_hold(ctx: PlanContext) -> Hold | None:
    """One broker at a time, seen from Kubernetes: every broker pod Ready and not terminating."""
    if ctx.broker_pods_ready is None:
        return None
    busy = sorted(b for b, ready in ctx.broker_pods_ready.items() if not ready)
    if not busy:
        return None
    return Hold(
        WithheldReason.BROKER_NOT_READY,
        f"the pod(s) of broker(s) {', '.join(map(str, busy))} not Ready or terminating: one broker at a time",
    )


def _restart_candidate(ctx: PlanContext, request: RollingRestartRequest) -> _Candidate:
    action = ActionType.ROLLING_RESTART
    holds = _holds(ctx, action)
    cand = _Candidate(action, request.id, holds)
    if ctx.spec.cluster.broker_pods is None:
        holds.append(
            Hold(WithheldReason.INVALID_REQUEST, "spec.cluster.brokerPods is required to restart brokers")
        )
    snapshot = ctx.snapshot
    if _observing(ctx) or snapshot is None or not _snapshot_usable(holds):
        return cand
    controllers = controller_only_nodes(snapshot)
    known = {b.id for b in snapshot.brokers}
    if ctx.spec.cluster.controller_pods is not None:
        known |= controllers
    brokers = sorted(request.brokers) if request.brokers else sorted(known)
    unpodded = [b for b in brokers if b in controllers and b not in known]
    if unpodded:
        holds.append(
            Hold(
                WithheldReason.INVALID_REQUEST,
                f"node(s) {', '.join(map(str, unpodded))} are dedicated controllers: set "
                "spec.cluster.controllerPods to restart them",
            )
        )
        return cand
    unknown = [b for b in brokers if b not in known]
    if unknown:
        holds.append(
            Hold(
                WithheldReason.INVALID_REQUEST, f"broker(s) {', '.join(map(str, unknown))} not in the cluster"
            )
        )
        return cand
    # The never-safe rule: the same decision as the CLI's `kafka-health restart --never-safe`.
    verdict = never_safe_verdict(snapshot, brokers, refuse=_refuses_never_safe(ctx))
    never_safe = verdict.partitions
    if verdict.refused:
        holds.append(
            Hold(
                WithheldReason.NEVER_SAFE_PARTITIONS,
                verdict.refusal("set spec.remediation.rollingRestart.neverSafePartitions: Proceed"),
            )
        )
        return cand
    order, safety = _next_broker_safety(ctx, snapshot, brokers, holds)
    rr = ctx.spec.remediation.rolling_restart
    details = [
        f"order: {describe_order(snapshot, order)} (one at a time; dedicated controllers first, the "
        "active one last of them; then brokers: non-voters, combined voters, the active controller last)",
        f"after each: pod Ready ({rr.timeouts.pod_ready}), broker registered ({rr.timeouts.broker_registered}), "
        f"under-replicated partitions 0 ({rr.timeouts.urp_zero}); pause {rr.pause_between_brokers}",
    ]
    if never_safe:
        details.append(verdict.proceeding("neverSafePartitions: Proceed"))
    if rr.post_roll_preferred_election:
        details.append("then: preferred leader election for the restarted brokers")
    cand.planned = PlannedAction(
        action=action,
        id=request.id,
        plan_id=plan_id("roll", {"id": request.id, "brokers": brokers}, ctx.status.history),
        summary=f"rolling restart {request.id}: brokers {', '.join(map(str, order))}",
        details=details,
        restart=RestartStep(
            request_id=request.id,
            order=order,
            next_broker=order[0],
            safety=safety,
            post_roll_election=rr.post_roll_preferred_election,
            never_safe=never_safe[:100],
            never_safe_count=len(never_safe),
        ),
    )
    return cand


def _offset_candidate(ctx: PlanContext, request: OffsetResetRequest) -> _Candidate:
    action = ActionType.OFFSET_RESET
    holds = _holds(ctx, action, group=request.group)
    cand = _Candidate(action, request.id, holds, offset_request=request)
    snapshot = ctx.snapshot
    if _observing(ctx) or snapshot is None or not _snapshot_usable(holds):
        return cand
    reset = plan_offset_reset(
        request, snapshot, now=ctx.now, offsets_for_times=ctx.offsets_for_times.get(request.id)
    )
    if reset.problems:
        holds.append(Hold(WithheldReason.INVALID_REQUEST, "; ".join(reset.problems[:5])))
    if reset.missing:
        holds.append(Hold(WithheldReason.SNAPSHOT_INCOMPLETE, "not read: " + "; ".join(reset.missing[:5])))
    cand.planned = PlannedAction(
        action=action,
        id=request.id,
        plan_id=plan_id(
            "reset", request.model_dump(mode="json", by_alias=True, exclude_none=True), ctx.status.history
        ),
        summary=f"reset offsets of group {request.group} ({request.strategy}) on {len(reset.entries)} partition(s)",
        details=reset.lines()[:MAX_DETAILS],
        offset_reset=reset,
    )
    return cand


def _election_request(ctx: PlanContext) -> str | None:
    """The annotation's election request id, unless already done (in history)."""
    value = ctx.policy.annotations.get(ANNOTATION_ELECT_LEADERS, "").strip()
    if not value:
        return None
    done = any(
        r.action is ActionType.PREFERRED_LEADER_ELECTION and r.id == value for r in ctx.status.history or []
    )
    return None if done else value


def _election_candidate(ctx: PlanContext, withheld: list[WithheldAction]) -> _Candidate | None:
    action = ActionType.PREFERRED_LEADER_ELECTION
    ple = ctx.spec.remediation.preferred_leader_election
    requested = _election_request(ctx)
    snapshot = ctx.snapshot
    holds = _holds(ctx, action)
    if not _snapshot_usable(holds) or snapshot is None:
        # Without a readable cluster nobody knows whether an election is due; report requests only.
        return _Candidate(action, requested, holds) if requested else None
    over, worst, percent = imbalance_exceeds(snapshot, ple.imbalance_threshold)
    automatic = ple.enabled and over
    if not (automatic or requested):
        return None
    election = plan_preferred_election(snapshot, batch_size=ple.batch_size)
    why = (
        f"requested by annotation ({requested})"
        if requested
        else f"{percent:.0f}% of the partitions that prefer broker {worst} are led by another broker "
        f"(threshold {ple.imbalance_threshold}%)"
    )
    if election.empty:
        reasons = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(election.not_electable.items()))
        withheld.append(
            WithheldAction(
                action=action,
                id=requested,
                reason=WithheldReason.NOTHING_TO_DO,
                message=f"{why}, but no partition can be elected now" + (f" ({reasons})" if reasons else ""),
            )
        )
        return None
    details = [f"batch {i + 1}: " + ", ".join(map(str, batch)) for i, batch in enumerate(election.batches)]
    findings = [
        f
        for f in (ctx.diagnosis.findings if ctx.diagnosis else [])
        if f.remediation == "preferred_leader_election"
    ]
    if findings:
        details.insert(0, f"diagnosis: {len(findings)} finding(s) suggest it, e.g. {findings[0].message}")
    planned = PlannedAction(
        action=action,
        id=requested,
        plan_id=plan_id("ple", {"partitions": [str(tp) for tp in election.partitions]}, ctx.status.history),
        summary=f"elect preferred leaders of {len(election.partitions)} partition(s) in "
        f"{len(election.batches)} batch(es): {why}",
        details=details[:MAX_DETAILS],
        election=election,
    )
    return _Candidate(action, requested, holds, planned=planned)


def _invalid_annotation_requests(ctx: PlanContext) -> list[WithheldAction]:
    out = []
    for key, action in (
        (ANNOTATION_ROLLING_RESTART, ActionType.ROLLING_RESTART),
        (ANNOTATION_ELECT_LEADERS, ActionType.PREFERRED_LEADER_ELECTION),
    ):
        value = ctx.policy.annotations.get(key, "").strip()
        if not value:
            continue
        try:
            _REQUEST_ID.validate_python(value)
        except ValidationError:
            out.append(
                WithheldAction(
                    action=action,
                    id=None,
                    reason=WithheldReason.INVALID_REQUEST,
                    message=f"annotation {key}={value!r} is not a valid request id: lower-case letters, "
                    "digits, '-', '.', '_' (at most 63)",
                )
            )
    return out


def _candidates(ctx: PlanContext, withheld: list[WithheldAction]) -> list[_Candidate]:
    out: list[_Candidate] = []
    restarts = {r.id: r for r in ctx.status.rolling_restarts or []}
    for request in restart_requests(ctx):
        result = restarts.get(request.id)
        if result is not None and result.state.terminal:
            continue
        if result is not None and result.state is RequestState.RUNNING:
            out.append(_Candidate(ActionType.ROLLING_RESTART, request.id, [_orphaned(request.id)]))
            continue
        out.append(_restart_candidate(ctx, request))
    resets = {r.id: r for r in ctx.status.offset_resets or []}
    for reset in ctx.spec.remediation.offset_resets.requests or []:
        reset_result = resets.get(reset.id)
        if reset_result is not None and reset_result.state.terminal:
            continue
        if reset_result is not None and reset_result.state is RequestState.RUNNING:
            out.append(_Candidate(ActionType.OFFSET_RESET, reset.id, [_orphaned(reset.id)]))
            continue
        out.append(_offset_candidate(ctx, reset))
    election = _election_candidate(ctx, withheld)
    if election is not None:
        out.append(election)
    return out


def _orphaned(request_id: str) -> Hold:
    """Running in status but not in flight: it may have acted; never repeat it automatically."""
    return Hold(
        WithheldReason.INVALID_REQUEST,
        f"request {request_id} is recorded as Running but no action is in flight; it may have been applied, "
        "so it is not repeated: check its result and commit a new id to run it again",
    )


# --------------------------------------------------------------------------------------------
# Choosing


def _withheld(cand: _Candidate, hold: Hold) -> WithheldAction:
    return WithheldAction(
        action=cand.action, id=cand.id, reason=hold.reason, message=hold.message, retry_at=hold.retry_at
    )


def _update(cand: _Candidate, state: RequestState, message: str, **extra: object) -> RequestUpdate | None:
    if cand.id is None or cand.action is ActionType.PREFERRED_LEADER_ELECTION:
        return None
    plan = None
    if cand.planned is not None and cand.planned.offset_reset is not None:
        plan = cand.planned.offset_reset.entries
    return RequestUpdate.model_validate(
        {"action": cand.action, "id": cand.id, "state": state, "message": message, "plan": plan, **extra}
    )


def _pending_plan(ctx: PlanContext, planned: PlannedAction) -> PendingPlan:
    previous = ctx.status.pending_plan
    created = previous.created_at if previous is not None and previous.plan_id == planned.plan_id else ctx.now
    return PendingPlan(
        plan_id=planned.plan_id,
        action=planned.action,
        id=planned.id,
        summary=planned.summary,
        details=planned.details[:MAX_DETAILS],
        created_at=created,
    )


def _choose(ctx: PlanContext, candidates: list[_Candidate], withheld: list[WithheldAction]) -> Decision:  # noqa: PLR0915
    mode = ctx.spec.remediation.mode
    updates: list[RequestUpdate] = []
    chosen: _Candidate | None = None
    verdict = Verdict.NONE
    pending: PendingPlan | None = None
    reason = ""

    def note(update: RequestUpdate | None) -> None:
        if update is not None:
            updates.append(update)

    for cand in candidates:
        planned = cand.planned
        if cand.holds or planned is None:
            holds = cand.holds or [Hold(WithheldReason.SNAPSHOT_UNREADABLE, "no plan could be made")]
            withheld.extend(_withheld(cand, h) for h in holds)
            state = (
                RequestState.PLANNED if planned is not None and mode is Mode.DRY_RUN else RequestState.PENDING
            )
            note(_update(cand, state, holds[0].message))
            continue
        if chosen is not None:
            hold = Hold(
                WithheldReason.QUEUED, f"waits for {chosen.action} {chosen.id or ''}: one action at a time"
            )
            withheld.append(_withheld(cand, hold))
            note(_update(cand, RequestState.PENDING, hold.message))
            continue
        gate = None
        if cand.offset_request is not None:
            request = cand.offset_request
            results = {r.id: r for r in ctx.status.offset_resets or []}
            previous = results.get(request.id)
            group = (
                next((g for g in ctx.snapshot.groups if g.group_id == request.group), None)
                if ctx.snapshot
                else None
            )
            gate = group_gate(
                group,
                waiting_since=previous.waiting_since if previous else None,
                timeout=parse_duration(request.empty_group_timeout),
                now=ctx.now,
            )
        if mode is Mode.DRY_RUN:
            chosen, verdict = cand, Verdict.DRY_RUN
            extra = (
                f" ({gate.message}: it would wait)"
                if gate is not None and gate.state is not GateState.READY
                else ""
            )
            reason = f"DryRun: would {planned.summary}{extra}"
            withheld.append(
                _withheld(
                    cand, Hold(WithheldReason.DRY_RUN, f"mode is DryRun: would {planned.summary}{extra}")
                )
            )
            note(_update(cand, RequestState.PLANNED, reason))
            continue
        approval = check_approval(
            ctx.spec.remediation.require_approval,
            planned.plan_id,
            approvals(ctx.spec.remediation, ctx.policy.annotations),
        )
        if approval is not None:
            chosen, verdict, pending = cand, Verdict.AWAIT_APPROVAL, _pending_plan(ctx, planned)
            reason = approval.message
            withheld.append(_withheld(cand, approval))
            note(_update(cand, RequestState.PLANNED, approval.message))
            continue
        if gate is not None and gate.state is GateState.BLOCKED:
            note(_update(cand, RequestState.BLOCKED, gate.message, waiting_since=gate.waiting_since))
            continue
        if gate is not None and gate.state is GateState.WAIT:
            withheld.append(
                _withheld(cand, Hold(WithheldReason.GROUP_NOT_EMPTY, gate.message, gate.deadline))
            )
            note(_update(cand, RequestState.WAITING, gate.message, waiting_since=gate.waiting_since))
            continue
        chosen, verdict = cand, Verdict.ACT
        reason = planned.summary
        note(_update(cand, RequestState.RUNNING, f"starting: {planned.summary}"))

    if chosen is None:
        reason = withheld[0].message if withheld else "nothing to do"
    return Decision(
        verdict=verdict,
        action=chosen.planned if chosen is not None else None,
        reason=reason,
        withheld=withheld,
        pending_plan=pending,
        request_updates=updates,
    )


# --------------------------------------------------------------------------------------------
# An action in flight


def _queued_behind(ctx: PlanContext, current: CurrentRemediation) -> list[WithheldAction]:
    """Every other pending request (and a due election) waits for the action in flight."""
    message = f"waits for {current.action} {current.id} in flight: one action at a time"
    out = []
    restarts = {r.id: r for r in ctx.status.rolling_restarts or []}
    for r in restart_requests(ctx):
        result = restarts.get(r.id)
        if r.id != current.id and not (result is not None and result.state.terminal):
            out.append(
                WithheldAction(
                    action=ActionType.ROLLING_RESTART, id=r.id, reason=WithheldReason.QUEUED, message=message
                )
            )
    resets = {r.id: r for r in ctx.status.offset_resets or []}
    for o in ctx.spec.remediation.offset_resets.requests or []:
        reset_result = resets.get(o.id)
        if o.id != current.id and not (reset_result is not None and reset_result.state.terminal):
            out.append(
                WithheldAction(
                    action=ActionType.OFFSET_RESET, id=o.id, reason=WithheldReason.QUEUED, message=message
                )
            )
    ple = ctx.spec.remediation.preferred_leader_election
    requested = _election_request(ctx)
    due = (
        ctx.snapshot is not None
        and ple.enabled
        and imbalance_exceeds(ctx.snapshot, ple.imbalance_threshold)[0]
    )
    if (requested or due) and current.action is not ActionType.PREFERRED_LEADER_ELECTION:
        rolling = current.action is ActionType.ROLLING_RESTART
        out.append(
            WithheldAction(
                action=ActionType.PREFERRED_LEADER_ELECTION,
                id=requested,
                reason=WithheldReason.ROLL_IN_FLIGHT if rolling else WithheldReason.QUEUED,
                message="skipped while a rolling restart is in flight" if rolling else message,
            )
        )
    return out


def _in_flight(ctx: PlanContext, current: CurrentRemediation) -> Decision:
    queued = _queued_behind(ctx, current)
    if current.action is not ActionType.ROLLING_RESTART:
        return Decision(
            verdict=Verdict.RESUME,
            reason=f"{current.action} {current.id} in flight (step {current.step}): its executor continues it",
            withheld=queued,
        )
    if current.current_broker is not None:
        return Decision(
            verdict=Verdict.RESUME,
            reason=f"rolling restart {current.id}: broker {current.current_broker} in step {current.step}",
            withheld=queued,
        )
    planned = current.brokers_planned or []
    done = list(current.brokers_done or [])
    remaining = [b for b in planned if b not in done]
    if not remaining:
        return Decision(
            verdict=Verdict.RESUME,
            reason=f"rolling restart {current.id}: all brokers restarted; finish it (post-roll election, result)",
            withheld=queued,
        )
    holds = _holds(ctx, ActionType.ROLLING_RESTART, starting=False)
    if ctx.spec.remediation.mode is Mode.DRY_RUN:
        holds.append(Hold(WithheldReason.DRY_RUN, "mode changed to DryRun: the roll waits between brokers"))
    pause = parse_duration(ctx.spec.remediation.rolling_restart.pause_between_brokers)
    if current.last_broker_finished_at is not None and ctx.now < current.last_broker_finished_at + pause:
        resume_at = current.last_broker_finished_at + pause
        holds.append(
            Hold(
                WithheldReason.PAUSING_BETWEEN_BROKERS,
                f"pausing between brokers until {iso(resume_at)}",
                resume_at,
            )
        )
    step: RestartStep | None = None
    safety: RestartSafety | None = None
    if ctx.snapshot is not None and _snapshot_usable(holds):
        order, safety = _next_broker_safety(ctx, ctx.snapshot, remaining, holds)
        step = RestartStep(
            request_id=current.id,
            order=order,
            done=done,
            next_broker=order[0],
            safety=safety,
            post_roll_election=ctx.spec.remediation.rolling_restart.post_roll_preferred_election,
        )
    if holds or step is None:
        holds = holds or [Hold(WithheldReason.SNAPSHOT_UNREADABLE, "no cluster state")]
        withheld = [
            WithheldAction(
                action=ActionType.ROLLING_RESTART,
                id=current.id,
                reason=h.reason,
                message=h.message,
                retry_at=h.retry_at,
            )
            for h in holds
        ]
        nxt = remaining[0] if step is None else step.next_broker
        wait = _roll_wait(ctx, current, nxt, holds, safety)
        if wait is not None and wait.rules and ctx.now >= wait.deadline:
            timeout = ctx.spec.remediation.rolling_restart.timeouts.safe_to_restart
            return Decision(
                verdict=Verdict.HALT,
                reason=f"rolling restart {current.id} halted: broker {nxt} did not become safe to restart "
                f"within {timeout} (timeouts.safeToRestart): {wait.message}",
                withheld=queued,
                roll_wait=wait,
            )
        return Decision(
            verdict=Verdict.NONE,
            reason=f"rolling restart {current.id} waits before broker {nxt}: {holds[0].message}",
            withheld=withheld + queued,
            roll_wait=wait,
        )
    return Decision(
        verdict=Verdict.ACT,
        action=PlannedAction(
            action=ActionType.ROLLING_RESTART,
            id=current.id,
            plan_id=current.plan_id,
            summary=f"rolling restart {current.id}: restart broker {step.next_broker} "
            f"({len(done) + 1} of {len(planned)})",
            details=[step.safety.summary()],
            restart=step,
        ),
        reason=f"rolling restart {current.id}: broker {step.next_broker} is next and safe to restart",
        withheld=queued,
    )


# Holds that mean "the cluster is not safe for the next broker": a roll in flight waits on them,
# up to timeouts.safeToRestart, then halts.
_SAFETY_HOLDS = frozenset(
    {
        WithheldReason.UNSAFE_TO_RESTART,
        WithheldReason.BROKER_NOT_READY,
        WithheldReason.OFFLINE_PARTITIONS,
        WithheldReason.NO_QUORUM_LEADER,
    }
)
# Holds that say nothing about safety (the state could not be read): the wait neither starts,
# nor ends, nor times out on them.
_UNKNOWN_HOLDS = frozenset(_SNAPSHOT_HOLDS)


def _roll_wait(
    ctx: PlanContext,
    current: CurrentRemediation,
    broker: int,
    holds: list[Hold],
    safety: RestartSafety | None,
) -> RollWait | None:
    """The wait for the next broker to become safe, when every hold is a safety hold (or the
    state is unreadable while a wait is on). Any other hold (paused, window, DryRun, the pause
    between brokers) is a choice, not a wait: it ends the wait and its clock."""
    reasons = {h.reason for h in holds}
    if not reasons & _SAFETY_HOLDS or reasons - _SAFETY_HOLDS - _UNKNOWN_HOLDS:
        if reasons <= _UNKNOWN_HOLDS and current.waiting_since is not None and current.waiting_reason:
            since = current.waiting_since
            return RollWait(
                reason=current.waiting_reason,
                broker=broker,
                since=since,
                deadline=since
                + parse_duration(ctx.spec.remediation.rolling_restart.timeouts.safe_to_restart),
                rules=[],
                message=f"the cluster state could not be read: {holds[0].message}",
            )
        return None
    since = current.waiting_since or ctx.now
    deadline = since + parse_duration(ctx.spec.remediation.rolling_restart.timeouts.safe_to_restart)
    rules: list[str] = []
    partitions: list[str] = []
    if WithheldReason.BROKER_NOT_READY in reasons:
        rules.append("one_at_a_time")
    if WithheldReason.OFFLINE_PARTITIONS in reasons:
        rules.append("offline")
    if WithheldReason.NO_QUORUM_LEADER in reasons:
        rules.append("quorum")
    for b in safety.blockers if safety is not None else []:
        if b.rule not in rules:
            rules.append(b.rule)
        partitions += [p for p in b.partitions if p not in partitions]
    reason = (
        RollWaitReason.WAITING_FOR_BROKER_READY
        if WithheldReason.BROKER_NOT_READY in reasons
        else RollWaitReason.WAITING_FOR_SAFETY
    )
    blocking = "; ".join(h.message for h in holds if h.reason in _SAFETY_HOLDS)
    return RollWait(
        reason=reason,
        broker=broker,
        since=since,
        deadline=deadline,
        rules=rules,
        partitions=partitions[:MAX_LISTED],
        message=f"broker {broker} is not safe to restart (rules: {', '.join(rules) or 'unknown'}): {blocking}; "
        f"waiting since {iso(since)}, the roll halts at {iso(deadline)}",
        started=current.waiting_since is None,
    )


# --------------------------------------------------------------------------------------------


def plan(ctx: PlanContext) -> Decision:
    """The one thing to do now (or nothing), with the reason for everything withheld."""
    current = ctx.status.current_remediation
    if current is not None:
        return _in_flight(ctx, current)
    withheld = _invalid_annotation_requests(ctx)
    candidates = _candidates(ctx, withheld)
    return _choose(ctx, candidates, withheld)
