"""Transaction abort requests through the planner: the same guardrails as every request (mode,
approval, window, queueing, once per id); whether the transaction is hanging is read live by the
executor, so the plan only carries the request and what the last collect saw."""

from __future__ import annotations

from datetime import timedelta

from kafka_health.models.policy import ANNOTATION_APPROVE_PLAN, ActionType, RequestState, WithheldReason
from kafka_health.models.snapshot import OpenTransaction
from kafka_health.plan.decision import PlannedTransactionAbort, Verdict
from kafka_health.plan.planner import plan

from .factories import NOW, balanced, context, snapshot, spec

REQUEST = {"id": "unstick", "topic": "orders", "partition": 0, "startOffset": 40}


def aborts(**extra: object) -> dict[str, object]:
    return {"transactionAborts": {"requests": [REQUEST], **extra}}


def seen(listed: bool) -> OpenTransaction:
    return OpenTransaction(
        topic="orders",
        partition=0,
        producer_id=7,
        producer_epoch=1,
        coordinator_epoch=-1,
        start_offset=40,
        last_timestamp=NOW - timedelta(hours=1),
        coordinator_lists_partition=listed,
    )


def test_enforce_acts_with_the_request_and_the_check_s_timeout() -> None:
    s = spec(mode="Enforce", **aborts())
    snap = snapshot(balanced())
    snap.open_transactions = [seen(listed=False)]
    decision = plan(context(s, snap))
    assert decision.verdict is Verdict.ACT and isinstance(decision.action, PlannedTransactionAbort)
    assert decision.action.abort.start_offset == 40 and decision.action.timeout_minutes == 15
    assert decision.action.summary == "abort the hanging transaction at orders-0 offset 40"
    assert "last collect: producer 7 (epoch 1), not listed by its coordinator" in decision.action.details
    (update,) = decision.request_updates
    assert (update.action, update.id, update.state) == (
        ActionType.TRANSACTION_ABORT,
        "unstick",
        RequestState.RUNNING,
    )


def test_dry_run_and_observe_act_on_nothing() -> None:
    dry = plan(context(spec(mode="DryRun", **aborts()), snapshot(balanced())))
    assert dry.verdict is Verdict.DRY_RUN and dry.request_updates[0].state is RequestState.PLANNED
    assert dry.action is not None and "last collect: not seen" in dry.action.details[1]
    observe = plan(context(spec(**aborts()), snapshot(balanced())))
    assert observe.verdict is Verdict.NONE and observe.request_updates[0].state is RequestState.PENDING


def test_approval_and_window_gate_it_like_any_request() -> None:
    s = spec(mode="Enforce", requireApproval=True, **aborts())
    first = plan(context(s, snapshot(balanced())))
    assert first.verdict is Verdict.AWAIT_APPROVAL and first.pending_plan is not None
    assert first.pending_plan.action is ActionType.TRANSACTION_ABORT
    approved = plan(
        context(s, snapshot(balanced()), annotations={ANNOTATION_APPROVE_PLAN: first.pending_plan.plan_id})
    )
    assert approved.verdict is Verdict.ACT
    windowed = spec(
        mode="Enforce",
        maintenanceWindows=[{"name": "w", "schedule": "0 12 * * *", "duration": "1h"}],
        **aborts(requireMaintenanceWindow=True),
    )
    held = plan(context(windowed, snapshot(balanced())))
    assert held.verdict is Verdict.NONE
    assert WithheldReason.OUTSIDE_MAINTENANCE_WINDOW in [w.reason for w in held.withheld]


def test_a_finished_request_is_never_repeated_and_a_running_one_without_an_action_is_held() -> None:
    s = spec(mode="Enforce", **aborts())
    done = {"transactionAborts": [{"id": "unstick", "state": "Failed", "message": "not hanging"}]}
    assert plan(context(s, snapshot(balanced()), status=done)).verdict is Verdict.NONE
    running = {"transactionAborts": [{"id": "unstick", "state": "Running"}]}
    held = plan(context(s, snapshot(balanced()), status=running))
    assert held.verdict is Verdict.NONE
    assert [w.reason for w in held.withheld] == [WithheldReason.INVALID_REQUEST]
    assert "may have been applied" in held.withheld[0].message
