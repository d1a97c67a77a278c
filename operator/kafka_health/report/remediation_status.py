"""What a planner `Decision` means for the policy's status: withheld reasons, the plan awaiting
approval, request results by id, the one-line remediation summary and the Remediating condition.

Pure: the previous status, the decision and the clock in; the new status out. Executors add
their own step records on top (currentRemediation, history).
"""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from kafka_health.models.policy import (
    MAX_REQUESTS,
    MAX_WITHHELD,
    ActionType,
    ConditionStatus,
    ConditionType,
    KafkaHealthPolicyStatus,
    OffsetResetResult,
    RollingRestartResult,
    TransactionAbortResult,
)
from kafka_health.models.reasons import StateReason, WithheldReason
from kafka_health.plan.decision import Decision, RequestUpdate, Verdict, merge_withheld
from kafka_health.report.status import set_condition

_Plain = TypeVar("_Plain", RollingRestartResult, TransactionAbortResult)


def _upsert(results: list[_Plain], u: RequestUpdate, now: datetime, model: type[_Plain]) -> list[_Plain]:
    """A roll's or an abort's result by id after `u`: its state and message, ended now if terminal."""
    others: list[_Plain] = [r for r in results if r.id != u.id]
    previous = next((r for r in results if r.id == u.id), None)
    updated: _Plain = (previous or model(id=u.id, state=u.state)).model_copy(
        update={"state": u.state, "message": u.message}
    )
    if u.state.terminal and updated.finished_at is None:
        updated.finished_at = now
    others.append(updated)
    return others[-MAX_REQUESTS:]


def _upsert_reset(
    results: list[OffsetResetResult], u: RequestUpdate, group: str, now: datetime
) -> list[OffsetResetResult]:
    out = [r for r in results if r.id != u.id]
    previous = next((r for r in results if r.id == u.id), None)
    changes: dict[str, object] = {"state": u.state, "message": u.message}
    if u.plan is not None:
        changes["plan"] = u.plan
    if u.waiting_since is not None:
        changes["waiting_since"] = u.waiting_since
    updated = (previous or OffsetResetResult(id=u.id, state=u.state, group=group)).model_copy(update=changes)
    if u.state.terminal and updated.finished_at is None:
        updated.finished_at = now
    return [*out, updated][-MAX_REQUESTS:]


def apply_decision(
    status: KafkaHealthPolicyStatus,
    decision: Decision,
    *,
    now: datetime,
    generation: int | None,
    groups: dict[str, str] | None = None,
) -> KafkaHealthPolicyStatus:
    """The status after `decision` (before any executor step). `groups`: offset-reset request id → group."""
    out = status.model_copy(deep=True)
    out.withheld = merge_withheld(status.withheld, decision.withheld, now)[:MAX_WITHHELD] or None
    if decision.verdict is Verdict.AWAIT_APPROVAL and decision.pending_plan is not None:
        previous = status.pending_plan
        keep_since = previous is not None and previous.plan_id == decision.pending_plan.plan_id
        out.pending_plan = decision.pending_plan.model_copy(
            update={"created_at": previous.created_at} if keep_since and previous else {}
        )
    elif not decision.acts:
        out.pending_plan = None
    _apply_request_updates(out, status, decision, now, groups or {})
    out.remediation_summary = decision.reason[:256]
    current = out.current_remediation
    if (
        current is not None
        and current.action is ActionType.ROLLING_RESTART
        and current.current_broker is None
    ):
        wait = decision.roll_wait
        out.current_remediation = current.model_copy(
            update={
                "waiting_since": wait.since if wait is not None else None,
                "waiting_reason": wait.reason if wait is not None else None,
            }
        )
    if decision.roll_wait is not None and decision.verdict is Verdict.NONE:
        out.remediation_summary = decision.roll_wait.message[:256]
    reason, message, remediating = _remediating(status, decision)
    out.conditions = set_condition(
        list(out.conditions or []),
        ConditionType.REMEDIATING,
        ConditionStatus.TRUE if remediating else ConditionStatus.FALSE,
        reason,
        message[:1024],
        now,
        generation,
    )
    return out


def _apply_request_updates(
    out: KafkaHealthPolicyStatus,
    status: KafkaHealthPolicyStatus,
    decision: Decision,
    now: datetime,
    groups: dict[str, str],
) -> None:
    """The decision's request results (by id) into `out`."""
    restarts = list(status.rolling_restarts or [])
    resets = list(status.offset_resets or [])
    aborts = list(status.transaction_aborts or [])
    for u in decision.request_updates:
        if u.action is ActionType.ROLLING_RESTART:
            restarts = _upsert(restarts, u, now, RollingRestartResult)
        elif u.action is ActionType.OFFSET_RESET:
            resets = _upsert_reset(resets, u, groups.get(u.id, ""), now)
        elif u.action is ActionType.TRANSACTION_ABORT:
            aborts = _upsert(aborts, u, now, TransactionAbortResult)
    out.rolling_restarts = restarts or None
    out.offset_resets = resets or None
    out.transaction_aborts = aborts or None


def _remediating(status: KafkaHealthPolicyStatus, decision: Decision) -> tuple[str, str, bool]:
    """The Remediating condition after `decision`: (reason, message, True when remediating): a
    roll waiting for safety, an action in flight held, acting or resuming, else why nothing runs."""
    if decision.roll_wait is not None and decision.verdict is Verdict.NONE:
        wait = decision.roll_wait
        return wait.reason.value, wait.message, True
    if status.current_remediation is not None and decision.verdict is Verdict.NONE and decision.withheld:
        return decision.withheld[0].reason.value, decision.reason, True
    if status.current_remediation is not None or decision.acts:
        what = decision.action.summary if decision.action is not None else decision.reason
        acting = StateReason.RESUMING if decision.verdict is Verdict.RESUME else StateReason.ACTING
        return acting, what, True
    first = decision.withheld[0] if decision.withheld else None
    reason: str = (
        first.reason.value
        if first is not None
        else (
            WithheldReason.AWAITING_APPROVAL
            if decision.verdict is Verdict.AWAIT_APPROVAL
            else WithheldReason.DRY_RUN
            if decision.verdict is Verdict.DRY_RUN
            else StateReason.IDLE
        )
    )
    return reason, decision.reason, False
