"""An action in flight (status.currentRemediation) comes first.

A roll between brokers gets its next broker (after the guardrails that gate a step and the
restart safety rules), or a reason to wait: a wait on safety is bounded by
timeouts.safeToRestart, then the roll halts. Any other step in flight is left to its executor
(Resume). Every other request waits behind it (Queued).
"""

from __future__ import annotations

from kafka_health.models.policy import (
    ActionType,
    CurrentRemediation,
    Mode,
    RollWaitReason,
    WithheldAction,
    WithheldReason,
    parse_duration,
)
from kafka_health.plan.decision import Decision, PlannedRestart, RestartStep, RollWait, Verdict
from kafka_health.plan.hold import Hold, iso
from kafka_health.plan.leader_election_plan import imbalance_exceeds
from kafka_health.plan.plan_context import (
    SNAPSHOT_HOLDS,
    PlanContext,
    election_request,
    holds_for,
    next_broker_safety,
    restart_requests,
    snapshot_usable,
)
from kafka_health.plan.restart_safety import RestartSafety
from kafka_health.plan.safety_model import MAX_LISTED

# Holds that mean "the cluster is not safe for the next broker": a roll in flight waits on them,
# up to timeouts.safeToRestart, then halts.
_SAFETY_HOLDS = frozenset(
    {
        WithheldReason.UNSAFE_TO_RESTART,
        WithheldReason.BROKER_NOT_READY,
        WithheldReason.OFFLINE_PARTITIONS,
        WithheldReason.NO_QUORUM_LEADER,
        WithheldReason.REASSIGNMENT_IN_PROGRESS,
    }
)
# Holds that say nothing about safety (the state could not be read): the wait neither starts,
# nor ends, nor times out on them.
_UNKNOWN_HOLDS = frozenset(SNAPSHOT_HOLDS)


def _queued_behind(ctx: PlanContext, current: CurrentRemediation) -> list[WithheldAction]:
    """Every other pending request (and a due election) waits for the action in flight."""
    message = f"waits for {current.action} {current.id} in flight: one action at a time"
    remediation = ctx.spec.remediation
    kinds = (
        (ActionType.ROLLING_RESTART, restart_requests(ctx), ctx.status.rolling_restarts),
        (ActionType.OFFSET_RESET, remediation.offset_resets.requests, ctx.status.offset_resets),
        (
            ActionType.TRANSACTION_ABORT,
            remediation.transaction_aborts.requests,
            ctx.status.transaction_aborts,
        ),
    )
    out = []
    for action, requests, results in kinds:
        finished = {r.id for r in results or [] if r.state.terminal}
        out += [
            WithheldAction(action=action, id=r.id, reason=WithheldReason.QUEUED, message=message)
            for r in requests or []
            if r.id != current.id and r.id not in finished
        ]
    election = _election_behind(ctx, current, message)
    return out + ([election] if election is not None else [])


def _election_behind(ctx: PlanContext, current: CurrentRemediation, message: str) -> WithheldAction | None:
    """A requested or due election, skipped while a roll is in flight and queued behind anything else."""
    ple = ctx.spec.remediation.preferred_leader_election
    requested = election_request(ctx)
    due = (
        ctx.snapshot is not None
        and ple.enabled
        and imbalance_exceeds(ctx.snapshot, ple.imbalance_threshold)[0]
    )
    if not (requested or due) or current.action is ActionType.PREFERRED_LEADER_ELECTION:
        return None
    rolling = current.action is ActionType.ROLLING_RESTART
    return WithheldAction(
        action=ActionType.PREFERRED_LEADER_ELECTION,
        id=requested,
        reason=WithheldReason.ROLL_IN_FLIGHT if rolling else WithheldReason.QUEUED,
        message="skipped while a rolling restart is in flight" if rolling else message,
    )


def _resume(current: CurrentRemediation, queued: list[WithheldAction]) -> Decision | None:
    """The executor continues: any action but a roll, a broker in its steps, or a roll whose
    brokers are all done (None: a roll between brokers, to be planned)."""
    if current.action is not ActionType.ROLLING_RESTART:
        reason = f"{current.action} {current.id} in flight (step {current.step}): its executor continues it"
    elif current.current_broker is not None:
        who = [m.broker for m in current.batch or []] or [current.current_broker]
        name = f"brokers {', '.join(map(str, who))}" if len(who) > 1 else f"broker {who[0]}"
        reason = f"rolling restart {current.id}: {name} in step {current.step}"
    elif not [b for b in current.brokers_planned or [] if b not in (current.brokers_done or [])]:
        reason = (
            f"rolling restart {current.id}: all brokers restarted; finish it (post-roll election, result)"
        )
    else:
        return None
    return Decision(verdict=Verdict.RESUME, reason=reason, withheld=queued)


def _between_brokers_holds(ctx: PlanContext, current: CurrentRemediation) -> list[Hold]:
    """The guardrails that gate a roll's next step, DryRun, and the pause between brokers."""
    holds = holds_for(ctx, ActionType.ROLLING_RESTART, starting=False)
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
    return holds


def in_flight(ctx: PlanContext, current: CurrentRemediation) -> Decision:
    """The decision while `current` is in flight: resume it, its roll's next broker, or a wait."""
    queued = _queued_behind(ctx, current)
    resumed = _resume(current, queued)
    if resumed is not None:
        return resumed
    planned = current.brokers_planned or []
    done = list(current.brokers_done or [])
    remaining = [b for b in planned if b not in done]
    holds = _between_brokers_holds(ctx, current)
    step: RestartStep | None = None
    safety: RestartSafety | None = None
    if ctx.snapshot is not None and snapshot_usable(holds):
        order, safety = next_broker_safety(ctx, ctx.snapshot, remaining, holds)
        step = RestartStep(
            request_id=current.id,
            order=order,
            done=done,
            next_broker=order[0],
            safety=safety,
            post_roll_election=ctx.spec.remediation.rolling_restart.post_roll_preferred_election,
        )
    if holds or step is None:
        nxt = remaining[0] if step is None else step.next_broker
        return _waiting(ctx, current, nxt, holds, safety, queued)
    return Decision(
        verdict=Verdict.ACT,
        action=PlannedRestart(
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


def _waiting(
    ctx: PlanContext,
    current: CurrentRemediation,
    nxt: int,
    holds: list[Hold],
    safety: RestartSafety | None,
    queued: list[WithheldAction],
) -> Decision:
    """The roll waits before broker `nxt` for its holds; it halts once a wait on safety passes
    timeouts.safeToRestart."""
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
    wait = _roll_wait(ctx, current, nxt, holds, safety)
    if wait is not None and wait.rules and ctx.now >= wait.deadline:
        field, timeout = _wait_timeout(ctx, wait.reason)
        what = (
            "the reassignments in flight on it did not complete"
            if wait.reason is RollWaitReason.REASSIGNMENT_IN_PROGRESS
            else "did not become safe to restart"
        )
        return Decision(
            verdict=Verdict.HALT,
            reason=f"rolling restart {current.id} halted: broker {nxt}: {what} "
            f"within {timeout} (timeouts.{field}): {wait.message}",
            withheld=queued,
            roll_wait=wait,
        )
    return Decision(
        verdict=Verdict.NONE,
        reason=f"rolling restart {current.id} waits before broker {nxt}: {holds[0].message}",
        withheld=withheld + queued,
        roll_wait=wait,
    )


def _wait_timeout(ctx: PlanContext, reason: RollWaitReason) -> tuple[str, str]:
    """The timeout field (camelCase) a wait of `reason` halts after, and its value."""
    timeouts = ctx.spec.remediation.rolling_restart.timeouts
    if reason is RollWaitReason.REASSIGNMENT_IN_PROGRESS:
        return "reassignment", timeouts.reassignment
    return "safeToRestart", timeouts.safe_to_restart


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
                + parse_duration(_wait_timeout(ctx, RollWaitReason(current.waiting_reason))[1]),
                rules=[],
                message=f"the cluster state could not be read: {holds[0].message}",
            )
        return None
    since = current.waiting_since or ctx.now
    reason = (
        RollWaitReason.WAITING_FOR_BROKER_READY
        if WithheldReason.BROKER_NOT_READY in reasons
        else RollWaitReason.REASSIGNMENT_IN_PROGRESS
        if reasons & _SAFETY_HOLDS == {WithheldReason.REASSIGNMENT_IN_PROGRESS}  # nothing else blocks
        else RollWaitReason.WAITING_FOR_SAFETY
    )
    deadline = since + parse_duration(_wait_timeout(ctx, reason)[1])
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
