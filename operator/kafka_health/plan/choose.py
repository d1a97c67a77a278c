"""Choosing: of the candidates, the first that passes every guardrail is the decision.

It acts in Enforce (after approval, if required; an offset reset only on an Empty group) and
is only shown in DryRun; each of the others is withheld with its reasons, or Queued: one action
at a time. Every request gets the state this cycle leaves it in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_health.models.policy import (
    ActionType,
    Mode,
    OffsetResetRequest,
    PendingPlan,
    RequestState,
    WithheldAction,
    WithheldReason,
    parse_duration,
)
from kafka_health.plan.approval import approvals, check_approval
from kafka_health.plan.decision import Decision, PlannedAction, PlannedOffsetReset, RequestUpdate, Verdict
from kafka_health.plan.hold import Hold
from kafka_health.plan.offset_reset_plan import GateState, GroupGate, group_gate
from kafka_health.plan.plan_context import MAX_DETAILS, Candidate, PlanContext


def _withheld(cand: Candidate, hold: Hold) -> WithheldAction:
    return WithheldAction(
        action=cand.action, id=cand.id, reason=hold.reason, message=hold.message, retry_at=hold.retry_at
    )


def _update(cand: Candidate, state: RequestState, message: str, **extra: object) -> RequestUpdate | None:
    if cand.id is None or cand.action is ActionType.PREFERRED_LEADER_ELECTION:
        return None
    plan = cand.planned.offset_reset.entries if isinstance(cand.planned, PlannedOffsetReset) else None
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


@dataclass
class _Choice:
    """The choice so far, as the candidates are gone through in priority order."""

    withheld: list[WithheldAction]
    updates: list[RequestUpdate] = field(default_factory=list)
    chosen: Candidate | None = None
    verdict: Verdict = Verdict.NONE
    pending: PendingPlan | None = None
    reason: str = ""

    def note(self, update: RequestUpdate | None) -> None:
        if update is not None:
            self.updates.append(update)

    def withhold(self, cand: Candidate, hold: Hold) -> None:
        self.withheld.append(_withheld(cand, hold))

    def pick(self, cand: Candidate, verdict: Verdict, reason: str) -> None:
        self.chosen, self.verdict, self.reason = cand, verdict, reason


def _group_gate(ctx: PlanContext, request: OffsetResetRequest | None) -> GroupGate | None:
    """An offset reset's gate: its group Empty, waited for up to emptyGroupTimeout."""
    if request is None:
        return None
    previous = {r.id: r for r in ctx.status.offset_resets or []}.get(request.id)
    group = (
        next((g for g in ctx.snapshot.groups if g.group_id == request.group), None) if ctx.snapshot else None
    )
    return group_gate(
        group,
        waiting_since=previous.waiting_since if previous else None,
        timeout=parse_duration(request.empty_group_timeout),
        now=ctx.now,
    )


def _held(ctx: PlanContext, choice: _Choice, cand: Candidate) -> None:
    """A candidate with holds (or no plan): each hold withheld, the request Pending (Planned in DryRun)."""
    holds = cand.holds or [Hold(WithheldReason.SNAPSHOT_UNREADABLE, "no plan could be made")]
    choice.withheld.extend(_withheld(cand, h) for h in holds)
    dry_run = cand.planned is not None and ctx.spec.remediation.mode is Mode.DRY_RUN
    choice.note(_update(cand, RequestState.PLANNED if dry_run else RequestState.PENDING, holds[0].message))


def _queued(choice: _Choice, cand: Candidate, chosen: Candidate) -> None:
    hold = Hold(WithheldReason.QUEUED, f"waits for {chosen.action} {chosen.id or ''}: one action at a time")
    choice.withhold(cand, hold)
    choice.note(_update(cand, RequestState.PENDING, hold.message))


def _dry_run(choice: _Choice, cand: Candidate, planned: PlannedAction, gate: GroupGate | None) -> None:
    extra = (
        f" ({gate.message}: it would wait)" if gate is not None and gate.state is not GateState.READY else ""
    )
    choice.pick(cand, Verdict.DRY_RUN, f"DryRun: would {planned.summary}{extra}")
    choice.withhold(cand, Hold(WithheldReason.DRY_RUN, f"mode is DryRun: would {planned.summary}{extra}"))
    choice.note(_update(cand, RequestState.PLANNED, choice.reason))


def _enforce(
    ctx: PlanContext, choice: _Choice, cand: Candidate, planned: PlannedAction, gate: GroupGate | None
) -> None:
    """Enforce: approval first, then an offset reset's group gate, then act."""
    approval = check_approval(
        ctx.spec.remediation.require_approval,
        planned.plan_id,
        approvals(ctx.spec.remediation, ctx.policy.annotations),
    )
    if approval is not None:
        choice.pick(cand, Verdict.AWAIT_APPROVAL, approval.message)
        choice.pending = _pending_plan(ctx, planned)
        choice.withhold(cand, approval)
        choice.note(_update(cand, RequestState.PLANNED, approval.message))
        return
    if gate is not None and gate.state is GateState.BLOCKED:
        choice.note(_update(cand, RequestState.BLOCKED, gate.message, waiting_since=gate.waiting_since))
        return
    if gate is not None and gate.state is GateState.WAIT:
        choice.withhold(cand, Hold(WithheldReason.GROUP_NOT_EMPTY, gate.message, gate.deadline))
        choice.note(_update(cand, RequestState.WAITING, gate.message, waiting_since=gate.waiting_since))
        return
    choice.pick(cand, Verdict.ACT, planned.summary)
    choice.note(_update(cand, RequestState.RUNNING, f"starting: {planned.summary}"))


def _consider(ctx: PlanContext, choice: _Choice, cand: Candidate) -> None:
    planned = cand.planned
    if cand.holds or planned is None:
        _held(ctx, choice, cand)
    elif choice.chosen is not None:
        _queued(choice, cand, choice.chosen)
    elif ctx.spec.remediation.mode is Mode.DRY_RUN:
        _dry_run(choice, cand, planned, _group_gate(ctx, cand.offset_request))
    else:
        _enforce(ctx, choice, cand, planned, _group_gate(ctx, cand.offset_request))


def choose(ctx: PlanContext, candidates: list[Candidate], withheld: list[WithheldAction]) -> Decision:
    """The decision among `candidates` (priority order); `withheld` gains every one not chosen."""
    choice = _Choice(withheld)
    for cand in candidates:
        _consider(ctx, choice, cand)
    reason = choice.reason
    if choice.chosen is None:
        reason = withheld[0].message if withheld else "nothing to do"
    return Decision(
        verdict=choice.verdict,
        action=choice.chosen.planned if choice.chosen is not None else None,
        reason=reason,
        withheld=withheld,
        pending_plan=choice.pending,
        request_updates=choice.updates,
    )
