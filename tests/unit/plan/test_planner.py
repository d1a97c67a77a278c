"""The planner end to end: one decision per call, every withheld action with its reason."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.findings import Diagnosis, Finding, Severity, Subject, SubjectKind
from kafka_health.models.policy import (
    ANNOTATION_APPROVE_PLAN,
    ANNOTATION_ELECT_LEADERS,
    ANNOTATION_ROLLING_RESTART,
    ActionOutcome,
    ActionType,
    Mode,
    RequestState,
    WithheldAction,
    WithheldReason,
)
from kafka_health.models.snapshot import Partition
from kafka_health.plan.cluster_lock import ClusterLock
from kafka_health.plan.decision import Decision, Verdict, merge_withheld
from kafka_health.plan.planner import PlanContext, plan, timestamp_lookups

from .factories import NOW, balanced, context, group, partition, record, snapshot, spec

PLE = ActionType.PREFERRED_LEADER_ELECTION
ROLL = ActionType.ROLLING_RESTART
RESET = ActionType.OFFSET_RESET
WINDOW = [{"name": "nightly", "schedule": "0 2 * * *", "duration": "2h"}]  # open at NOW (02:30 UTC)


def imbalanced() -> list[Partition]:
    """Broker 1 is preferred leader of 3 partitions and leads none of them."""
    return [partition("orders", i, [1, 2, 3], leader=2) for i in range(3)] + balanced("payments", 3)


def reasons(decision: Decision, action: ActionType | None = None) -> list[WithheldReason]:
    return [w.reason for w in decision.withheld if action is None or w.action is action]


def reset_request(**extra: Any) -> dict[str, Any]:
    return {"id": "rewind", "group": "billing", "topics": ["orders"], "earliest": True, **extra}


# --- modes --------------------------------------------------------------------------------------


def test_observe_plans_nothing_and_says_so_for_every_candidate() -> None:
    s = spec(mode="Observe", rollingRestart={"requests": [{"id": "r1"}]})
    decision = plan(context(s, snapshot(imbalanced())))
    assert decision.verdict is Verdict.NONE and decision.action is None and not decision.acts
    assert reasons(decision, ROLL)[:1] == [WithheldReason.MODE_OBSERVE]
    assert WithheldReason.MODE_OBSERVE in reasons(decision, PLE)


def test_dry_run_shows_the_plan_and_acts_on_nothing() -> None:
    decision = plan(context(spec(mode="DryRun"), snapshot(imbalanced())))
    assert decision.verdict is Verdict.DRY_RUN and not decision.acts
    assert decision.action is not None and decision.action.election is not None
    assert [str(tp) for tp in decision.action.election.partitions] == ["orders-0", "orders-1", "orders-2"]
    assert reasons(decision) == [WithheldReason.DRY_RUN]
    assert decision.reason.startswith("DryRun: would elect preferred leaders of 3 partition(s)")


def test_enforce_elects_when_imbalance_is_over_the_threshold() -> None:
    decision = plan(context(spec(mode="Enforce"), snapshot(imbalanced())))
    assert decision.verdict is Verdict.ACT and decision.acts
    action = decision.action
    assert action is not None and action.action is PLE and action.plan_id.startswith("ple-")
    assert "75% of the partitions that prefer broker 1 are led by another broker" in action.summary
    assert decision.withheld == []


def test_enforce_does_nothing_on_a_balanced_cluster() -> None:
    decision = plan(context(spec(mode="Enforce"), snapshot()))
    assert decision.verdict is Verdict.NONE and decision.reason == "nothing to do" and not decision.withheld


def test_imbalance_at_or_below_the_threshold_is_left_alone() -> None:
    parts = [
        partition("orders", 0, [1, 2, 3], leader=2),
        *[partition("orders", i, [1, 2, 3]) for i in range(1, 10)],
    ]
    s = spec(mode="Enforce", preferredLeaderElection={"imbalanceThreshold": 10})
    assert plan(context(s, snapshot(parts))).verdict is Verdict.NONE  # exactly 10 %


def test_election_disabled_still_runs_on_request_once_per_id() -> None:
    s = spec(mode="Enforce", preferredLeaderElection={"enabled": False})
    assert plan(context(s, snapshot(imbalanced()))).verdict is Verdict.NONE
    asked = plan(context(s, snapshot(imbalanced()), annotations={ANNOTATION_ELECT_LEADERS: "now-1"}))
    assert asked.verdict is Verdict.ACT and asked.action is not None and asked.action.id == "now-1"
    done = {"history": [record(PLE, started=NOW - timedelta(hours=2), id="now-1").model_dump(mode="json")]}
    again = plan(
        context(s, snapshot(imbalanced()), annotations={ANNOTATION_ELECT_LEADERS: "now-1"}, status=done)
    )
    assert again.verdict is Verdict.NONE


def test_election_due_but_nothing_electable_is_reported() -> None:
    parts = [partition("orders", i, [1, 2, 3], isr=[2, 3], leader=2) for i in range(3)]
    # Broker 1 is alive but out of every ISR: nothing can move back to it (and URP holds restarts, not elections).
    decision = plan(
        context(spec(mode="Enforce", preferredLeaderElection={"imbalanceThreshold": 0}), snapshot(parts))
    )
    assert decision.verdict is Verdict.NONE
    assert reasons(decision) == [WithheldReason.NOTHING_TO_DO]
    assert "3 preferred not in isr" in decision.withheld[0].message


def test_findings_are_cited_in_the_plan() -> None:
    finding = Finding(
        check="leader_imbalance",
        severity=Severity.WARNING,
        subject=Subject(kind=SubjectKind.BROKER, broker=1),
        message="Broker 1 leads 0 of its 3 preferred partitions.",
        remediation="preferred_leader_election",
    )
    diagnosis = Diagnosis(cluster="test", taken_at=NOW, findings=[finding])
    decision = plan(context(spec(mode="Enforce"), snapshot(imbalanced()), diagnosis=diagnosis))
    assert decision.action is not None and decision.action.details[0].startswith("diagnosis: 1 finding(s)")


# --- approval -----------------------------------------------------------------------------------


def test_approval_required_posts_the_plan_until_its_id_is_approved() -> None:
    s = spec(mode="Enforce", requireApproval=True)
    first = plan(context(s, snapshot(imbalanced())))
    assert first.verdict is Verdict.AWAIT_APPROVAL and first.pending_plan is not None
    plan_id = first.pending_plan.plan_id
    assert first.pending_plan.created_at == NOW and reasons(first) == [WithheldReason.AWAITING_APPROVAL]
    # Next cycle: same plan, same id, creation time kept.
    later = NOW + timedelta(minutes=1)
    status = {"pendingPlan": first.pending_plan.model_dump(mode="json")}
    second = plan(context(s, snapshot(imbalanced(), taken_at=later), now=later, status=status))
    assert second.pending_plan is not None and second.pending_plan.plan_id == plan_id
    assert second.pending_plan.created_at == NOW
    # Approved by annotation (kubectl) or by the spec (GitOps).
    by_annotation = plan(context(s, snapshot(imbalanced()), annotations={ANNOTATION_APPROVE_PLAN: plan_id}))
    assert by_annotation.verdict is Verdict.ACT and by_annotation.action is not None
    assert by_annotation.action.plan_id == plan_id
    by_spec = plan(
        context(spec(mode="Enforce", requireApproval=True, approvedPlanId=plan_id), snapshot(imbalanced()))
    )
    assert by_spec.verdict is Verdict.ACT


def test_an_approval_covers_only_the_plan_it_names() -> None:
    s = spec(mode="Enforce", requireApproval=True)
    decision = plan(
        context(s, snapshot(imbalanced()), annotations={ANNOTATION_APPROVE_PLAN: "ple-0000000000"})
    )
    assert decision.verdict is Verdict.AWAIT_APPROVAL


def test_dry_run_needs_no_approval() -> None:
    assert (
        plan(context(spec(mode="DryRun", requireApproval=True), snapshot(imbalanced()))).verdict
        is Verdict.DRY_RUN
    )


# --- rolling restart ----------------------------------------------------------------------------


def roll_spec(**extra: Any) -> Any:
    return spec(
        mode="Enforce", maintenanceWindows=WINDOW, rollingRestart={"requests": [{"id": "r1"}]}, **extra
    )


def test_requested_roll_starts_with_a_non_controller_broker_inside_the_window() -> None:
    decision = plan(context(roll_spec()))
    assert decision.verdict is Verdict.ACT
    step = decision.action.restart if decision.action else None
    assert step is not None and step.order == [1, 2, 3] and step.next_broker == 1 and step.safety.safe
    assert decision.action is not None and decision.action.plan_id.startswith("roll-")
    assert [(u.id, u.state) for u in decision.request_updates] == [("r1", RequestState.RUNNING)]


def test_roll_outside_the_window_waits_and_says_when() -> None:
    decision = plan(
        context(roll_spec(), now=NOW + timedelta(hours=3), snap=snapshot(taken_at=NOW + timedelta(hours=3)))
    )
    assert decision.verdict is Verdict.NONE
    withheld = decision.withheld[0]
    assert withheld.reason is WithheldReason.OUTSIDE_MAINTENANCE_WINDOW and withheld.id == "r1"
    assert withheld.retry_at == NOW.replace(hour=2, minute=0) + timedelta(days=1)
    assert [(u.id, u.state) for u in decision.request_updates] == [("r1", RequestState.PENDING)]


def test_roll_needs_a_window_by_default() -> None:
    s = spec(mode="Enforce", rollingRestart={"requests": [{"id": "r1"}]})
    assert reasons(plan(context(s))) == [WithheldReason.OUTSIDE_MAINTENANCE_WINDOW]
    s2 = spec(mode="Enforce", rollingRestart={"requireMaintenanceWindow": False, "requests": [{"id": "r1"}]})
    assert plan(context(s2)).verdict is Verdict.ACT


def test_roll_is_held_while_the_cluster_is_under_replicated() -> None:
    parts = [*balanced(), partition("t", 0, [1, 2, 3], isr=[1, 2])]
    decision = plan(context(roll_spec(), snapshot(parts, min_isr={"orders": 2, "t": 2})))
    assert reasons(decision) == [WithheldReason.UNSAFE_TO_RESTART]
    assert "under-replicated" in decision.withheld[0].message


def test_roll_of_unknown_brokers_is_an_invalid_request() -> None:
    s = spec(
        mode="Enforce", maintenanceWindows=WINDOW, rollingRestart={"requests": [{"id": "r1", "brokers": [7]}]}
    )
    decision = plan(context(s))
    assert reasons(decision) == [WithheldReason.INVALID_REQUEST] and "7" in decision.withheld[0].message


def test_a_finished_request_is_never_repeated() -> None:
    for state in ("Succeeded", "Failed"):
        status = {"rollingRestarts": [{"id": "r1", "state": state}]}
        decision = plan(context(roll_spec(), status=status))
        assert decision.verdict is Verdict.NONE and decision.withheld == []


def test_roll_requested_by_annotation_and_a_bad_annotation_value() -> None:
    s = spec(mode="Enforce", maintenanceWindows=WINDOW)
    decision = plan(context(s, annotations={ANNOTATION_ROLLING_RESTART: "kubectl-1"}))
    assert (
        decision.verdict is Verdict.ACT and decision.action is not None and decision.action.id == "kubectl-1"
    )
    bad = plan(context(s, annotations={ANNOTATION_ROLLING_RESTART: "Not Valid!"}))
    assert bad.verdict is Verdict.NONE and reasons(bad) == [WithheldReason.INVALID_REQUEST]


def test_roll_by_annotation_needs_broker_pods() -> None:
    from kafka_health.models.policy import KafkaHealthPolicySpec

    s = KafkaHealthPolicySpec.model_validate(
        {
            "cluster": {"bootstrapServers": ["k:9092"]},
            "remediation": {"mode": "Enforce", "rollingRestart": {"requireMaintenanceWindow": False}},
        }
    )
    decision = plan(context(s, annotations={ANNOTATION_ROLLING_RESTART: "k1"}))
    assert (
        reasons(decision) == [WithheldReason.INVALID_REQUEST] and "brokerPods" in decision.withheld[0].message
    )


def test_recorded_running_without_an_action_in_flight_is_not_repeated() -> None:
    status = {"rollingRestarts": [{"id": "r1", "state": "Running"}]}
    decision = plan(context(roll_spec(), status=status))
    assert decision.verdict is Verdict.NONE and "not repeated" in decision.withheld[0].message


# --- a roll in flight ---------------------------------------------------------------------------


def in_flight(**current: Any) -> dict[str, Any]:
    base = {
        "action": "RollingRestart",
        "id": "r1",
        "planId": "roll-abc",
        "step": "Done",
        "startedAt": (NOW - timedelta(minutes=20)).isoformat(),
        "brokersPlanned": [1, 2, 3],
        "brokersDone": [1],
    }
    return {"currentRemediation": {**base, **current}}


def test_next_broker_of_a_roll_in_flight() -> None:
    decision = plan(context(roll_spec(), status=in_flight()))
    assert decision.verdict is Verdict.ACT and decision.action is not None
    step = decision.action.restart
    assert step is not None and step.next_broker == 2 and step.done == [1] and step.order == [2, 3]
    assert decision.action.plan_id == "roll-abc"


def test_active_controller_is_restarted_last_even_if_it_moved() -> None:
    decision = plan(context(roll_spec(), snapshot(controller=2), status=in_flight()))
    assert decision.action is not None and decision.action.restart is not None
    assert decision.action.restart.order == [3, 2]


def test_a_broker_being_restarted_is_left_to_its_executor() -> None:
    decision = plan(context(roll_spec(), status=in_flight(currentBroker=2, step="WaitingPodReady")))
    assert decision.verdict is Verdict.RESUME and "broker 2" in decision.reason


def test_a_roll_with_every_broker_done_is_finished_by_its_executor() -> None:
    decision = plan(context(roll_spec(), status=in_flight(brokersDone=[1, 2, 3])))
    assert decision.verdict is Verdict.RESUME and "post-roll election" in decision.reason


def test_pause_between_brokers() -> None:
    status = in_flight(lastBrokerFinishedAt=(NOW - timedelta(seconds=10)).isoformat())
    decision = plan(context(roll_spec(), status=status))
    assert decision.verdict is Verdict.NONE and reasons(decision) == [WithheldReason.PAUSING_BETWEEN_BROKERS]
    assert decision.withheld[0].retry_at == NOW + timedelta(seconds=20)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"paused": True}, WithheldReason.PAUSED),
        ({"mode": "DryRun"}, WithheldReason.DRY_RUN),
        ({"mode": "Observe"}, WithheldReason.MODE_OBSERVE),
        (
            {"maintenanceWindows": [{"schedule": "0 12 * * *", "duration": "1h"}]},
            WithheldReason.OUTSIDE_MAINTENANCE_WINDOW,
        ),
    ],
)
def test_a_roll_in_flight_waits_between_brokers(change: dict[str, Any], reason: WithheldReason) -> None:
    body = {
        "mode": "Enforce",
        "maintenanceWindows": WINDOW,
        "rollingRestart": {"requests": [{"id": "r1"}]},
        **change,
    }
    decision = plan(context(spec(**body), status=in_flight()))
    assert decision.verdict is Verdict.NONE and reason in reasons(decision, ROLL)
    assert "waits before broker 2" in decision.reason


def test_a_roll_in_flight_is_not_held_by_rate_limits_or_the_breaker() -> None:
    history = [
        record(ROLL, started=NOW - timedelta(minutes=m), outcome=ActionOutcome.FAILED) for m in (50, 40, 30)
    ]
    status = {**in_flight(), "history": [h.model_dump(mode="json") for h in history]}
    assert plan(context(roll_spec(), status=status)).verdict is Verdict.ACT


def test_a_roll_in_flight_stops_on_unsafe_state() -> None:
    decision = plan(context(roll_spec(), snapshot(down=[1]), status=in_flight()))
    assert decision.verdict is Verdict.NONE and WithheldReason.UNSAFE_TO_RESTART in reasons(decision)


def test_election_is_skipped_and_requests_queue_while_a_roll_is_in_flight() -> None:
    s = spec(
        mode="Enforce",
        maintenanceWindows=WINDOW,
        rollingRestart={"requests": [{"id": "r1"}, {"id": "r2"}]},
        offsetResets={"requests": [reset_request()]},
    )
    decision = plan(context(s, snapshot(imbalanced()), status=in_flight(currentBroker=2)))
    assert decision.verdict is Verdict.RESUME
    assert {(w.action, w.id, w.reason) for w in decision.withheld} == {
        (ROLL, "r2", WithheldReason.QUEUED),
        (RESET, "rewind", WithheldReason.QUEUED),
        (PLE, None, WithheldReason.ROLL_IN_FLIGHT),
    }


def test_other_actions_in_flight_are_resumed() -> None:
    status = {
        "currentRemediation": {
            "action": "OffsetReset",
            "id": "rewind",
            "planId": "reset-1",
            "step": "ResettingOffsets",
            "startedAt": NOW.isoformat(),
        }
    }
    decision = plan(context(spec(mode="Enforce"), snapshot(imbalanced()), status=status))
    assert decision.verdict is Verdict.RESUME and reasons(decision) == [WithheldReason.QUEUED]


# --- offset reset -------------------------------------------------------------------------------


def reset_snapshot(state: str = "Empty", members: int = 0, **kwargs: Any) -> Any:
    return snapshot(
        groups=[group("billing", state=state, members=members, committed={("orders", 0): 500})], **kwargs
    )


def test_offset_reset_on_an_empty_group_runs_with_its_plan() -> None:
    s = spec(mode="Enforce", offsetResets={"requests": [reset_request()]})
    decision = plan(context(s, reset_snapshot()))
    assert (
        decision.verdict is Verdict.ACT
        and decision.action is not None
        and decision.action.offset_reset is not None
    )
    assert decision.action.details[0] == "billing orders 0 500 -> 100"
    update = decision.request_updates[0]
    assert update.state is RequestState.RUNNING and update.plan is not None and len(update.plan) == 6


def test_offset_reset_waits_for_an_active_group_then_blocks() -> None:
    s = spec(mode="Enforce", offsetResets={"requests": [reset_request(emptyGroupTimeout="10m")]})
    waiting = plan(context(s, reset_snapshot("Stable", 2)))
    assert waiting.verdict is Verdict.NONE and reasons(waiting) == [WithheldReason.GROUP_NOT_EMPTY]
    update = waiting.request_updates[0]
    assert update.state is RequestState.WAITING and update.waiting_since == NOW
    later = NOW + timedelta(minutes=10)
    status = {
        "offsetResets": [
            {"id": "rewind", "state": "Waiting", "group": "billing", "waitingSince": NOW.isoformat()}
        ]
    }
    blocked = plan(context(s, reset_snapshot("Stable", 2, taken_at=later), now=later, status=status))
    assert [(u.state, u.waiting_since) for u in blocked.request_updates] == [(RequestState.BLOCKED, NOW)]
    assert blocked.verdict is Verdict.NONE and blocked.withheld == []
    # Blocked is final for this id.
    final = {"offsetResets": [{"id": "rewind", "state": "Blocked", "group": "billing"}]}
    assert plan(context(s, reset_snapshot(), status=final)).request_updates == []


def test_a_waiting_reset_does_not_stop_other_actions() -> None:
    s = spec(mode="Enforce", offsetResets={"requests": [reset_request()]})
    decision = plan(context(s, reset_snapshot("Stable", 1, partitions=imbalanced())))
    assert decision.verdict is Verdict.ACT and decision.action is not None and decision.action.action is PLE
    assert reasons(decision) == [WithheldReason.GROUP_NOT_EMPTY]


def test_dry_run_offset_reset_posts_its_plan() -> None:
    s = spec(mode="DryRun", offsetResets={"requests": [reset_request()]})
    decision = plan(context(s, reset_snapshot("Stable", 3)))
    assert decision.verdict is Verdict.DRY_RUN
    update = decision.request_updates[0]
    assert (
        update.state is RequestState.PLANNED and update.plan is not None and "it would wait" in update.message
    )


def test_offset_reset_of_a_missing_topic_is_invalid() -> None:
    s = spec(mode="Enforce", offsetResets={"requests": [reset_request(topics=["nope"])]})
    decision = plan(context(s, reset_snapshot()))
    assert reasons(decision) == [WithheldReason.INVALID_REQUEST] and "nope" in decision.withheld[0].message


def test_datetime_reset_uses_the_callers_lookups() -> None:
    s = spec(mode="Enforce", offsetResets={"requests": [reset_request(earliest=None, byDuration="1h")]})
    ctx = context(s, reset_snapshot())
    lookups = timestamp_lookups(ctx)
    assert lookups["rewind"][0] == NOW - timedelta(hours=1)
    assert lookups["rewind"][1] == [("orders", i) for i in range(6)]
    missing = plan(ctx)
    assert reasons(missing) == [WithheldReason.SNAPSHOT_INCOMPLETE]
    found = {"rewind": dict.fromkeys(lookups["rewind"][1], 700)}
    ready = plan(context(s, reset_snapshot(), offsets_for_times=found))
    assert ready.verdict is Verdict.ACT and ready.action is not None and ready.action.offset_reset is not None
    assert {e.target for e in ready.action.offset_reset.entries} == {700}


# --- one at a time, and global holds ------------------------------------------------------------


def test_first_ready_candidate_acts_and_the_rest_queue() -> None:
    s = spec(
        mode="Enforce",
        maintenanceWindows=WINDOW,
        rollingRestart={"requests": [{"id": "r1"}]},
        offsetResets={"requests": [reset_request()]},
    )
    decision = plan(context(s, reset_snapshot()))
    assert decision.action is not None and decision.action.action is ROLL
    assert {(w.action, w.reason) for w in decision.withheld} == {(RESET, WithheldReason.QUEUED)}


def test_another_policy_acting_on_the_same_cluster_is_a_conflict() -> None:
    lock = ClusterLock(
        cluster="id:kafka-cluster-1", holder="other/policy", action=ROLL, acquired_at=NOW, renewed_at=NOW
    )
    decision = plan(context(spec(mode="Enforce"), snapshot(imbalanced()), lock=lock))
    assert decision.verdict is Verdict.NONE and reasons(decision) == [WithheldReason.CLUSTER_LOCKED]


def test_no_automatic_action_while_partitions_are_offline() -> None:
    parts = [*imbalanced(), partition("dead", 0, [2], isr=[], leader=None)]
    decision = plan(context(spec(mode="Enforce"), snapshot(parts)))
    assert decision.verdict is Verdict.NONE and reasons(decision) == [WithheldReason.OFFLINE_PARTITIONS]


def test_no_action_without_a_readable_snapshot() -> None:
    s = spec(mode="Enforce", maintenanceWindows=WINDOW, rollingRestart={"requests": [{"id": "r1"}]})
    ctx = context(s)
    unreadable = PlanContext(policy=ctx.policy, spec=s, status=ctx.status, snapshot=None, now=NOW)
    decision = plan(unreadable)
    assert decision.verdict is Verdict.NONE and reasons(decision) == [WithheldReason.SNAPSHOT_UNREADABLE]
    assert plan(context(s, snapshot(missing=[("metadata", "timeout")]))).verdict is Verdict.NONE


def test_circuit_breaker_holds_new_actions() -> None:
    history = [record(PLE, started=NOW - timedelta(hours=h), outcome=ActionOutcome.FAILED) for h in (5, 4, 3)]
    status = {"history": [h.model_dump(mode="json") for h in history]}
    decision = plan(context(spec(mode="Enforce"), snapshot(imbalanced()), status=status))
    assert reasons(decision) == [WithheldReason.CIRCUIT_BREAKER_OPEN]
    assert (
        plan(context(spec(mode="Enforce"), snapshot(imbalanced()), status=status, generation=2)).verdict
        is Verdict.ACT
    )


def test_naive_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        context(spec(), now=NOW.replace(tzinfo=None))


def test_merge_withheld_keeps_since_while_the_reason_is_unchanged() -> None:
    before = [
        WithheldAction(
            action=PLE, reason=WithheldReason.PAUSED, message="paused", since=NOW - timedelta(hours=1)
        )
    ]
    now = [
        WithheldAction(action=PLE, reason=WithheldReason.PAUSED, message="paused"),
        WithheldAction(action=ROLL, id="r1", reason=WithheldReason.PAUSED, message="paused"),
    ]
    merged = merge_withheld(before, now, NOW)
    assert [m.since for m in merged] == [NOW - timedelta(hours=1), NOW]


# --- properties ---------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    mode=st.sampled_from(list(Mode)),
    paused=st.booleans(),
    window_hour=st.sampled_from([None, 2, 12]),
    offline=st.booleans(),
    roll=st.booleans(),
    reset_state=st.sampled_from([None, "Empty", "Stable"]),
    approval=st.booleans(),
)
def test_only_enforce_within_every_guardrail_acts(
    mode: Mode,
    paused: bool,
    window_hour: int | None,
    offline: bool,
    roll: bool,
    reset_state: str | None,
    approval: bool,
) -> None:
    remediation: dict[str, Any] = {"mode": mode.value, "paused": paused, "requireApproval": approval}
    if window_hour is not None:
        remediation["maintenanceWindows"] = [{"schedule": f"0 {window_hour} * * *", "duration": "1h"}]
        remediation["preferredLeaderElection"] = {"requireMaintenanceWindow": True}
    if roll:
        remediation["rollingRestart"] = {"requests": [{"id": "r1"}]}
    if reset_state:
        remediation["offsetResets"] = {"requests": [reset_request()]}
    parts = imbalanced() + ([partition("dead", 0, [2], isr=[], leader=None)] if offline else [])
    snap = snapshot(
        parts, groups=[group("billing", state=reset_state or "Empty", members=int(reset_state == "Stable"))]
    )
    decision = plan(context(spec(**remediation), snap))

    window_open = window_hour == 2
    if decision.verdict is Verdict.ACT:
        assert mode is Mode.ENFORCE and not paused and not offline and not approval
        assert decision.action is not None
        if decision.action.action is not RESET:
            assert window_open or (window_hour is None and decision.action.action is PLE)
    if mode is not Mode.ENFORCE:
        assert not decision.acts and decision.pending_plan is None
    # Everything not done says why, and there is at most one action.
    assert all(w.message for w in decision.withheld)
    assert decision.reason
    chosen = 0 if decision.action is None else 1
    assert chosen <= 1


def test_a_roll_plan_with_max_concurrent_shows_its_batches_and_why() -> None:
    """maxConcurrent 2 (batchBy Rack): the plan's details list each batch, a rack at a time, with
    why; at 1 they list none and say "one at a time"."""
    from tests.unit.test_roll_batches import SIX, cluster, rack_aware

    snap = cluster(SIX, rack_aware())
    rolling = {"requireMaintenanceWindow": False, "requests": [{"id": "r1"}]}
    batched = plan(context(spec(mode="Enforce", rollingRestart={**rolling, "maxConcurrent": 2}), snap))
    assert batched.verdict is Verdict.ACT and batched.action is not None
    details = batched.action.details
    assert "(up to 2 together, below;" in details[0]
    batches = [d for d in details if d.startswith("batchBy Rack: batch ")]
    assert batches == [
        "batchBy Rack: batch 1: 1, 2 — rack a: 2 brokers, no partition loses more than its ISR allows",
        "batchBy Rack: batch 2: 3, 4 — rack b: 2 brokers, no partition loses more than its ISR allows",
        "batchBy Rack: batch 3: 5, 6 — rack c: 2 brokers, no partition loses more than its ISR allows",
    ]
    alone = plan(context(spec(mode="Enforce", rollingRestart=rolling), snap))
    assert alone.action is not None and "(one at a time;" in alone.action.details[0]
    assert not any(d.startswith("batchBy") for d in alone.action.details)
