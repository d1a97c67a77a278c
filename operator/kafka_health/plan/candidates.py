"""The candidates: each action that could run now, with its plan and what holds it back.

In priority order: requested rolling restarts, requested offset resets, requested transaction
aborts, then preferred leader election (requested by annotation, or automatic when the live leader imbalance is over the
threshold). Which one runs is `kafka_health.plan.choose`'s business.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import TypeAdapter, ValidationError

from kafka_health.models.policy import (
    ANNOTATION_ELECT_LEADERS,
    ANNOTATION_ROLLING_RESTART,
    ActionType,
    OffsetResetRequest,
    OffsetResetResult,
    RequestId,
    RequestState,
    RollingRestartRequest,
    RollingRestartResult,
    TransactionAbortRequest,
    TransactionAbortResult,
    WithheldAction,
    WithheldReason,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.approval import plan_id
from kafka_health.plan.decision import (
    PlannedElection,
    PlannedOffsetReset,
    PlannedRestart,
    PlannedTransactionAbort,
    RestartStep,
)
from kafka_health.plan.hold import Hold
from kafka_health.plan.leader_election_plan import ElectionPlan, imbalance_exceeds, plan_preferred_election
from kafka_health.plan.offset_reset_plan import plan_offset_reset, resolve_partitions, target_timestamp
from kafka_health.plan.plan_context import (
    MAX_DETAILS,
    Candidate,
    PlanContext,
    election_request,
    holds_for,
    next_broker_safety,
    observing,
    refuses_never_safe,
    refuses_reassignments,
    restart_requests,
    snapshot_usable,
)
from kafka_health.plan.reassignment_safety import reassignment_progress, reassignments_involving
from kafka_health.plan.restart_safety import (
    NeverSafeVerdict,
    controller_only_nodes,
    describe_order,
    never_safe_verdict,
)
from kafka_health.plan.roll_batches import BatchBy, plan_batches

_REQUEST_ID: TypeAdapter[str] = TypeAdapter(RequestId)


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


def _restart_brokers(
    ctx: PlanContext, snapshot: ClusterSnapshot, request: RollingRestartRequest
) -> tuple[list[int], Hold | None]:
    """The nodes the request restarts, or why it names nodes this policy cannot restart."""
    controllers = controller_only_nodes(snapshot)
    known = {b.id for b in snapshot.brokers}
    if ctx.spec.cluster.controller_pods is not None:
        known |= controllers
    brokers = sorted(request.brokers) if request.brokers else sorted(known)
    unpodded = [b for b in brokers if b in controllers and b not in known]
    if unpodded:
        return brokers, Hold(
            WithheldReason.INVALID_REQUEST,
            f"node(s) {', '.join(map(str, unpodded))} are dedicated controllers: set "
            "spec.cluster.controllerPods to restart them",
        )
    unknown = [b for b in brokers if b not in known]
    if unknown:
        return brokers, Hold(
            WithheldReason.INVALID_REQUEST, f"broker(s) {', '.join(map(str, unknown))} not in the cluster"
        )
    return brokers, None


def _restart_candidate(ctx: PlanContext, request: RollingRestartRequest) -> Candidate:
    action = ActionType.ROLLING_RESTART
    holds = holds_for(ctx, action)
    cand = Candidate(action, request.id, holds)
    if ctx.spec.cluster.broker_pods is None:
        holds.append(
            Hold(WithheldReason.INVALID_REQUEST, "spec.cluster.brokerPods is required to restart brokers")
        )
    snapshot = ctx.snapshot
    if observing(ctx) or snapshot is None or not snapshot_usable(holds):
        return cand
    brokers, invalid = _restart_brokers(ctx, snapshot, request)
    if invalid is not None:
        holds.append(invalid)
        return cand
    # The never-safe rule: the same decision as the CLI's `kafka-health restart --never-safe`.
    verdict = never_safe_verdict(snapshot, brokers, refuse=refuses_never_safe(ctx))
    if verdict.refused:
        holds.append(
            Hold(
                WithheldReason.NEVER_SAFE_PARTITIONS,
                verdict.refusal("set spec.remediation.rollingRestart.neverSafePartitions: Proceed"),
            )
        )
        return cand
    moving = reassignments_involving(snapshot, brokers)
    if moving is not None and refuses_reassignments(ctx):
        holds.append(
            Hold(
                WithheldReason.REASSIGNMENT_IN_PROGRESS,
                f"{moving}{reassignment_progress(ctx.diagnosis)}; set "
                "spec.remediation.rollingRestart.reassignmentsInFlight: Proceed to start "
                "anyway (it then holds before each broker they involve)",
            )
        )
        return cand
    cand.planned = _restart_plan(ctx, snapshot, request, brokers, verdict, holds)
    return cand


def _restart_plan(
    ctx: PlanContext,
    snapshot: ClusterSnapshot,
    request: RollingRestartRequest,
    brokers: list[int],
    verdict: NeverSafeVerdict,
    holds: list[Hold],
) -> PlannedRestart:
    """The roll's plan: its order, what each broker waits for, and whether the first may go now."""
    never_safe = verdict.partitions
    order, safety = next_broker_safety(ctx, snapshot, brokers, holds)
    rr = ctx.spec.remediation.rolling_restart
    pace = "one at a time" if rr.max_concurrent < 2 else f"up to {rr.max_concurrent} together, below"
    details = [
        f"order: {describe_order(snapshot, order)} ({pace}; dedicated controllers first, the "
        "active one last of them; then brokers: non-voters, combined voters, the active controller last)",
        *_batches(snapshot, order, rr.max_concurrent, rr.batch_by.value),
        f"after each: pod Ready ({rr.timeouts.pod_ready}), broker registered ({rr.timeouts.broker_registered}), "
        f"under-replicated partitions 0 ({rr.timeouts.urp_zero}); pause {rr.pause_between_brokers}",
    ]
    if never_safe:
        details.append(verdict.proceeding("neverSafePartitions: Proceed"))
    if rr.post_roll_preferred_election:
        details.append("then: preferred leader election for the restarted brokers")
    return PlannedRestart(
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


def _batches(
    snapshot: ClusterSnapshot, order: list[int], max_concurrent: int, batch_by: BatchBy
) -> list[str]:
    """maxConcurrent > 1: the batches as planned on this snapshot, each with why (re-checked live
    before each one); nothing at 1."""
    if max_concurrent < 2:
        return []
    plan = plan_batches(snapshot, order, max_concurrent=max_concurrent, batch_by=batch_by)
    return [f"batchBy {batch_by}: {line}" for line in plan.lines()]


def _offset_candidate(ctx: PlanContext, request: OffsetResetRequest) -> Candidate:
    action = ActionType.OFFSET_RESET
    holds = holds_for(ctx, action, group=request.group)
    cand = Candidate(action, request.id, holds, offset_request=request)
    snapshot = ctx.snapshot
    if observing(ctx) or snapshot is None or not snapshot_usable(holds):
        return cand
    reset = plan_offset_reset(
        request, snapshot, now=ctx.now, offsets_for_times=ctx.offsets_for_times.get(request.id)
    )
    if reset.problems:
        holds.append(Hold(WithheldReason.INVALID_REQUEST, "; ".join(reset.problems[:5])))
    if reset.missing:
        holds.append(Hold(WithheldReason.SNAPSHOT_INCOMPLETE, "not read: " + "; ".join(reset.missing[:5])))
    cand.planned = PlannedOffsetReset(
        id=request.id,
        plan_id=plan_id(
            "reset", request.model_dump(mode="json", by_alias=True, exclude_none=True), ctx.status.history
        ),
        summary=f"reset offsets of group {request.group} ({request.strategy}) on {len(reset.entries)} partition(s)",
        details=reset.lines()[:MAX_DETAILS],
        offset_reset=reset,
    )
    return cand


def _abort_candidate(ctx: PlanContext, request: TransactionAbortRequest) -> Candidate:
    """An abort's plan is the request itself: whether the transaction is hanging is read live by
    its executor just before it acts (`remediate.transaction_abort`); what the last collect saw of
    it (the hangingTransactions check) is shown in the plan's details."""
    action = ActionType.TRANSACTION_ABORT
    holds = holds_for(ctx, action)
    cand = Candidate(action, request.id, holds)
    if observing(ctx):
        return cand
    where = f"{request.topic}-{request.partition} offset {request.start_offset}"
    seen = next(
        (
            t
            for t in (ctx.snapshot.open_transactions if ctx.snapshot else [])
            if (t.topic, t.partition, t.start_offset)
            == (request.topic, request.partition, request.start_offset)
        ),
        None,
    )
    check = ctx.spec.diagnostics.checks.hanging_transactions
    details = [
        "read live before it is sent: aborted only when hanging (its coordinator does not list the partition "
        f"and its producer was silent for more than {check.max_transaction_timeout_minutes} min)",
        f"last collect: producer {seen.producer_id} (epoch {seen.producer_epoch}), "
        + (
            "not listed by its coordinator"
            if not seen.coordinator_lists_partition
            else "listed by its coordinator"
        )
        if seen is not None
        else "last collect: not seen (checks.hangingTransactions off, or not open that long)",
    ]
    cand.planned = PlannedTransactionAbort(
        id=request.id,
        plan_id=plan_id("abort", request.model_dump(mode="json", by_alias=True), ctx.status.history),
        summary=f"abort the hanging transaction at {where}",
        details=details,
        abort=request,
        timeout_minutes=check.max_transaction_timeout_minutes,
    )
    return cand


def _election_candidate(ctx: PlanContext, withheld: list[WithheldAction]) -> Candidate | None:
    action = ActionType.PREFERRED_LEADER_ELECTION
    ple = ctx.spec.remediation.preferred_leader_election
    requested = election_request(ctx)
    snapshot = ctx.snapshot
    holds = holds_for(ctx, action)
    if not snapshot_usable(holds) or snapshot is None:
        # Without a readable cluster nobody knows whether an election is due; report requests only.
        return Candidate(action, requested, holds) if requested else None
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
        withheld.append(_nothing_to_elect(requested, why, election))
        return None
    return Candidate(action, requested, holds, planned=_election_plan(ctx, requested, why, election))


def _nothing_to_elect(requested: str | None, why: str, election: ElectionPlan) -> WithheldAction:
    reasons = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(election.not_electable.items()))
    return WithheldAction(
        action=ActionType.PREFERRED_LEADER_ELECTION,
        id=requested,
        reason=WithheldReason.NOTHING_TO_DO,
        message=f"{why}, but no partition can be elected now" + (f" ({reasons})" if reasons else ""),
    )


def _election_plan(
    ctx: PlanContext, requested: str | None, why: str, election: ElectionPlan
) -> PlannedElection:
    details = [f"batch {i + 1}: " + ", ".join(map(str, batch)) for i, batch in enumerate(election.batches)]
    findings = [
        f
        for f in (ctx.diagnosis.findings if ctx.diagnosis else [])
        if f.remediation == "preferred_leader_election"
    ]
    if findings:
        details.insert(0, f"diagnosis: {len(findings)} finding(s) suggest it, e.g. {findings[0].message}")
    return PlannedElection(
        id=requested,
        plan_id=plan_id("ple", {"partitions": [str(tp) for tp in election.partitions]}, ctx.status.history),
        summary=f"elect preferred leaders of {len(election.partitions)} partition(s) in "
        f"{len(election.batches)} batch(es): {why}",
        details=details[:MAX_DETAILS],
        election=election,
    )


def invalid_annotation_requests(ctx: PlanContext) -> list[WithheldAction]:
    """An annotation whose value is not a valid request id: withheld as InvalidRequest."""
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


def candidates(ctx: PlanContext, withheld: list[WithheldAction]) -> list[Candidate]:
    """Every action that could run now, in priority order (a due election with nothing to elect
    is added to `withheld` instead)."""
    remediation = ctx.spec.remediation
    out = [
        *_requested(ctx, ActionType.ROLLING_RESTART, restart_requests(ctx), ctx.status.rolling_restarts),
        *_requested(
            ctx, ActionType.OFFSET_RESET, remediation.offset_resets.requests, ctx.status.offset_resets
        ),
        *_requested(
            ctx,
            ActionType.TRANSACTION_ABORT,
            remediation.transaction_aborts.requests,
            ctx.status.transaction_aborts,
        ),
    ]
    election = _election_candidate(ctx, withheld)
    if election is not None:
        out.append(election)
    return out


_Request = RollingRestartRequest | OffsetResetRequest | TransactionAbortRequest


def _requested(
    ctx: PlanContext,
    action: ActionType,
    requests: Sequence[_Request] | None,
    results: Sequence[RollingRestartResult | OffsetResetResult | TransactionAbortResult] | None,
) -> list[Candidate]:
    """The candidates of one kind of request: those not finished; one recorded Running with nothing
    in flight is held (`_orphaned`), never run again."""
    done = {r.id: r for r in results or []}
    out = []
    for request in requests or []:
        result = done.get(request.id)
        if result is not None and result.state.terminal:
            continue
        if result is not None and result.state is RequestState.RUNNING:
            out.append(Candidate(action, request.id, [_orphaned(request.id)]))
        elif isinstance(request, RollingRestartRequest):
            out.append(_restart_candidate(ctx, request))
        elif isinstance(request, OffsetResetRequest):
            out.append(_offset_candidate(ctx, request))
        else:
            out.append(_abort_candidate(ctx, request))
    return out


def _orphaned(request_id: str) -> Hold:
    """Running in status but not in flight: it may have acted; never repeat it automatically."""
    return Hold(
        WithheldReason.INVALID_REQUEST,
        f"request {request_id} is recorded as Running but no action is in flight; it may have been applied, "
        "so it is not repeated: check its result and commit a new id to run it again",
    )
