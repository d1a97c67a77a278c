"""A roll in flight that waits for safety: bounded (timeouts.safeToRestart), voiced (WaitingFor…),
halted on timeout; and partitions that can never roll safely (neverSafePartitions)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.findings import Diagnosis, Incident, IncidentKind, Severity, Subject, SubjectKind
from kafka_health.models.policy import (
    ActionType,
    Condition,
    ConditionStatus,
    ConditionType,
    KafkaHealthPolicyStatus,
    RollWaitReason,
    WithheldReason,
)
from kafka_health.models.snapshot import Reassignment
from kafka_health.plan.decision import Verdict
from kafka_health.plan.planner import plan
from kafka_health.report.remediation_status import apply_decision
from kafka_health.report.status import HALTED, merge_remediation

from .factories import NOW, balanced, context, partition, snapshot, spec
from .test_planner import in_flight as planner_in_flight

WINDOW = [{"name": "nightly", "schedule": "0 2 * * *", "duration": "2h"}]  # open at NOW


def roll_spec(
    timeout: str | None = None, never_safe: str | None = None, reassignments: str | None = None, **extra: Any
) -> Any:
    rr: dict[str, Any] = {"requests": [{"id": "r1"}]}
    if reassignments is not None:
        rr["reassignmentsInFlight"] = reassignments
    if timeout is not None:
        rr["timeouts"] = {"safeToRestart": timeout}
    if never_safe is not None:
        rr["neverSafePartitions"] = never_safe
    return spec(mode="Enforce", maintenanceWindows=WINDOW, rollingRestart=rr, **extra)


def in_flight(**current: Any) -> KafkaHealthPolicyStatus:
    """Broker 1 of 1, 2, 3 restarted; between brokers."""
    return KafkaHealthPolicyStatus.model_validate(planner_in_flight(**{"step": "Done", **current}))


def under_replicated(taken_at: Any = NOW) -> Any:
    """Broker 1 (already restarted) is out of the ISR of t-0: nothing else may restart."""
    parts = [*balanced(), partition("t", 0, [1, 2, 3], isr=[2, 3])]
    return snapshot(parts, min_isr={"orders": 2, "t": 2}, taken_at=taken_at)


# --- waiting for safety -------------------------------------------------------------------------


def test_unsafe_next_broker_starts_a_wait_naming_the_rule_and_partitions() -> None:
    decision = plan(context(roll_spec(), under_replicated(), status=in_flight()))
    assert decision.verdict is Verdict.NONE
    wait = decision.roll_wait
    assert wait is not None and wait.started
    assert wait.reason is RollWaitReason.WAITING_FOR_SAFETY
    assert wait.since == NOW and wait.deadline == NOW + timedelta(minutes=15)  # the documented default
    assert wait.broker == 2 and "under_replicated" in wait.rules and wait.partitions == ["t-0"]
    assert "t-0" not in wait.message or "under-replicated" in wait.message
    assert "halts at" in wait.message


def test_a_wait_keeps_its_start_and_halts_at_the_timeout() -> None:
    since = NOW - timedelta(minutes=10)
    status = in_flight(waitingSince=since.isoformat(), waitingReason="WaitingForSafety")
    decision = plan(context(roll_spec(), under_replicated(), status=status))
    assert decision.verdict is Verdict.NONE and decision.roll_wait is not None
    assert decision.roll_wait.since == since and not decision.roll_wait.started
    at = since + timedelta(minutes=15)
    halted = plan(context(roll_spec(), under_replicated(at), status=status, now=at))
    assert halted.verdict is Verdict.HALT and halted.acts
    assert "did not become safe to restart within 15m" in halted.reason


@settings(max_examples=60, deadline=None)
@given(
    waited=st.integers(min_value=0, max_value=3600),
    timeout=st.sampled_from(["30s", "5m", "15m", "1h"]),
)
def test_halt_exactly_when_the_wait_reaches_its_timeout(waited: int, timeout: str) -> None:
    limit = {"30s": 30, "5m": 300, "15m": 900, "1h": 3600}[timeout]
    since = NOW - timedelta(seconds=waited)
    status = in_flight(waitingSince=since.isoformat(), waitingReason="WaitingForSafety")
    decision = plan(context(roll_spec(timeout), under_replicated(), status=status))
    assert (decision.verdict is Verdict.HALT) == (waited >= limit)
    if decision.verdict is Verdict.NONE:
        assert [w.reason for w in decision.withheld] == [WithheldReason.UNSAFE_TO_RESTART]


def test_a_broker_pod_not_ready_is_its_own_wait() -> None:
    ctx = context(roll_spec(), status=in_flight(), broker_pods_ready={1: True, 2: True, 3: False})
    decision = plan(ctx)
    assert decision.verdict is Verdict.NONE
    assert WithheldReason.BROKER_NOT_READY in [w.reason for w in decision.withheld]
    wait = decision.roll_wait
    assert wait is not None and wait.reason is RollWaitReason.WAITING_FOR_BROKER_READY
    assert "one_at_a_time" in wait.rules and "broker(s) 3" in wait.message
    late = context(
        roll_spec(),
        status=in_flight(
            waitingSince=(NOW - timedelta(hours=1)).isoformat(), waitingReason="WaitingForBrokerReady"
        ),
        broker_pods_ready={1: True, 2: True, 3: False},
    )
    assert plan(late).verdict is Verdict.HALT


def test_pods_all_ready_and_a_safe_cluster_act_at_once() -> None:
    ctx = context(roll_spec(), status=in_flight(), broker_pods_ready={1: True, 2: True, 3: True})
    decision = plan(ctx)
    assert decision.verdict is Verdict.ACT and decision.roll_wait is None


@pytest.mark.parametrize(
    "change",
    [
        {"paused": True},
        {"mode": "DryRun"},
        {"maintenanceWindows": [{"schedule": "0 12 * * *", "duration": "1h"}]},
    ],
)
def test_a_hold_by_choice_is_not_a_wait_and_never_halts(change: dict[str, Any]) -> None:
    rr = {"requests": [{"id": "r1"}]}
    body = {"mode": "Enforce", "maintenanceWindows": WINDOW, "rollingRestart": rr, **change}
    status = in_flight(waitingSince=(NOW - timedelta(hours=2)).isoformat(), waitingReason="WaitingForSafety")
    decision = plan(context(spec(**body), under_replicated(), status=status))
    assert decision.verdict is Verdict.NONE and decision.roll_wait is None
    after = apply_decision(status, decision, now=NOW, generation=1)
    assert after.current_remediation is not None and after.current_remediation.waiting_since is None


def test_the_pause_between_brokers_is_not_a_wait() -> None:
    status = in_flight(lastBrokerFinishedAt=(NOW - timedelta(seconds=5)).isoformat())
    decision = plan(context(roll_spec(), under_replicated(), status=status))
    assert decision.verdict is Verdict.NONE and decision.roll_wait is None
    assert decision.withheld[0].reason is WithheldReason.PAUSING_BETWEEN_BROKERS


def test_an_unreadable_cluster_neither_starts_nor_ends_a_wait_nor_halts() -> None:
    since = NOW - timedelta(hours=2)
    status = in_flight(waitingSince=since.isoformat(), waitingReason="WaitingForSafety")
    stale = snapshot(taken_at=NOW - timedelta(minutes=10))
    decision = plan(context(roll_spec(), stale, status=status))
    assert decision.verdict is Verdict.NONE
    assert decision.roll_wait is not None and decision.roll_wait.since == since
    fresh = plan(context(roll_spec(), stale, status=in_flight()))
    assert fresh.roll_wait is None


def test_the_wait_is_in_status_and_the_remediating_condition() -> None:
    status = in_flight()
    decision = plan(context(roll_spec(), under_replicated(), status=status))
    after = apply_decision(status, decision, now=NOW, generation=1)
    current = after.current_remediation
    assert current is not None and current.waiting_since == NOW
    assert current.waiting_reason is RollWaitReason.WAITING_FOR_SAFETY
    cond = next(c for c in after.conditions or [] if c.type is ConditionType.REMEDIATING)
    assert cond.status is ConditionStatus.TRUE and cond.reason == "WaitingForSafety"
    assert "t-0" in cond.message or "under-replicated" in cond.message
    # Safe again: the next broker acts and the wait is cleared.
    go = plan(context(roll_spec(), status=after))
    assert go.verdict is Verdict.ACT
    cleared = apply_decision(after, go, now=NOW, generation=1)
    assert cleared.current_remediation is not None and cleared.current_remediation.waiting_since is None


# --- partitions that can never roll safely ------------------------------------------------------


def never_safe_cluster() -> Any:
    """t-0 has RF 2 and min.insync.replicas 2: unavailable to acks=all while broker 1 or 2 restarts."""
    return snapshot([*balanced(), partition("t", 0, [1, 2])], min_isr={"orders": 2, "t": 2})


def test_refuse_is_the_default_and_names_the_partitions_and_the_fix() -> None:
    decision = plan(context(roll_spec(), never_safe_cluster()))
    assert decision.verdict is Verdict.NONE
    held = [w for w in decision.withheld if w.action is ActionType.ROLLING_RESTART]
    assert [w.reason for w in held] == [WithheldReason.NEVER_SAFE_PARTITIONS]
    assert "t-0" in held[0].message and "neverSafePartitions: Proceed" in held[0].message


def test_proceed_rolls_and_carries_the_partitions_into_the_plan() -> None:
    decision = plan(context(roll_spec(never_safe="Proceed"), never_safe_cluster()))
    assert decision.verdict is Verdict.ACT and decision.action is not None
    step = decision.action.restart
    assert step is not None and step.never_safe == ["t-0"] and step.never_safe_count == 1
    assert any("unavailable to acks=all" in d and "t-0" in d for d in decision.action.details)


def test_refuse_ignores_never_safe_partitions_on_brokers_not_in_the_roll() -> None:
    s = spec(
        mode="Enforce", maintenanceWindows=WINDOW, rollingRestart={"requests": [{"id": "r1", "brokers": [3]}]}
    )
    assert plan(context(s, never_safe_cluster())).verdict is Verdict.ACT


def test_refuse_in_flight_blocks_the_broker_that_holds_one() -> None:
    # The topic appeared mid-roll: broker 2 (next) holds t-0.
    decision = plan(context(roll_spec(), never_safe_cluster(), status=in_flight()))
    assert decision.verdict is Verdict.NONE and decision.roll_wait is not None
    assert "never_safe" in decision.roll_wait.rules and decision.roll_wait.partitions == ["t-0"]
    proceed = plan(context(roll_spec(never_safe="Proceed"), never_safe_cluster(), status=in_flight()))
    assert proceed.verdict is Verdict.ACT


# --- reassignments in flight (restart safety rule 5, reassignmentsInFlight) ----------------------


def moving_cluster(taken_at: Any = NOW) -> Any:
    """`m-0` moves from {2, 3} to {1, 2}: broker 1 being added (out of sync on purpose), 3 removed."""
    snap = snapshot(
        [*balanced(), partition("m", 0, [2, 3, 1], isr=[2, 3])],
        min_isr={"orders": 2, "m": 1},
        taken_at=taken_at,
    )
    snap.reassignments = [Reassignment(topic="m", partition=0, replicas=[2, 3, 1], adding=[1], removing=[3])]
    return snap


def test_a_roll_does_not_start_while_a_reassignment_involves_its_brokers_unless_proceed() -> None:
    decision = plan(context(roll_spec(), moving_cluster()))
    assert decision.verdict is Verdict.NONE
    held = [w for w in decision.withheld if w.action is ActionType.ROLLING_RESTART]
    assert [w.reason for w in held] == [WithheldReason.REASSIGNMENT_IN_PROGRESS]
    assert "m-0" in held[0].message and "reassignmentsInFlight: Proceed" in held[0].message
    # Proceed: the roll starts, but its first broker (1, being added) is held by rule 5.
    proceed = plan(context(roll_spec(reassignments="Proceed"), moving_cluster()))
    held = [w for w in proceed.withheld if w.action is ActionType.ROLLING_RESTART]
    assert proceed.verdict is Verdict.NONE
    assert [w.reason for w in held] == [WithheldReason.REASSIGNMENT_IN_PROGRESS]
    assert "broker 1: 1 partition reassignment(s) in flight involve broker 1" in held[0].message


def test_a_roll_in_flight_waits_for_a_reassignment_with_its_own_reason_and_timeout() -> None:
    """Broker 2 is next and `m-0` involves it: the wait is ReassignmentInProgress, bounded by
    timeouts.reassignment (6h by default), not by safeToRestart (15m), and the replica being
    added is not an under-replicated partition."""
    decision = plan(context(roll_spec(), moving_cluster(), status=in_flight()))
    wait = decision.roll_wait
    assert decision.verdict is Verdict.NONE and wait is not None and wait.started
    assert wait.reason is RollWaitReason.REASSIGNMENT_IN_PROGRESS
    assert wait.rules == ["reassignment"] and wait.partitions == ["m-0"]
    assert wait.deadline == NOW + timedelta(hours=6)
    assert [w.reason for w in decision.withheld if w.id == "r1"] == [WithheldReason.REASSIGNMENT_IN_PROGRESS]
    status = in_flight(
        waitingSince=(NOW - timedelta(hours=1)).isoformat(), waitingReason="ReassignmentInProgress"
    )
    assert plan(context(roll_spec(), moving_cluster(), status=status)).verdict is Verdict.NONE  # past 15m
    since = (NOW - timedelta(hours=6)).isoformat()  # the maintenance window is open only at NOW
    long_ago = in_flight(waitingSince=since, waitingReason="ReassignmentInProgress")
    halted = plan(context(roll_spec(), moving_cluster(), status=long_ago))
    assert halted.verdict is Verdict.HALT
    assert (
        "the reassignments in flight on it did not complete within 6h (timeouts.reassignment)"
        in halted.reason
    )
    # Anything else blocking too (m-0 at min ISR 2 with broker 2 in it): the usual safety wait.
    both = moving_cluster()
    both.topic_configs = [c.model_copy(update={"min_insync_replicas": 2}) for c in both.topic_configs]
    mixed = plan(context(roll_spec(), both, status=in_flight())).roll_wait
    assert mixed is not None and mixed.reason is RollWaitReason.WAITING_FOR_SAFETY
    assert mixed.rules == ["min_isr", "reassignment"] and mixed.deadline == NOW + timedelta(minutes=15)
    short = roll_spec()
    short.remediation.rolling_restart.timeouts.reassignment = "30m"
    assert plan(context(short, moving_cluster(), status=status)).verdict is Verdict.HALT


def test_the_reassignment_hold_carries_what_is_left_to_copy_and_the_eta_the_diagnosis_saw() -> None:
    moving = Incident(
        id="reassignment:cluster",
        kind=IncidentKind.REASSIGNMENT,
        severity=Severity.INFO,
        subject=Subject(kind=SubjectKind.CLUSTER),
        title="1 partition being reassigned",
        evidence={"left_bytes": 5000, "eta_seconds": 120},
        remediation="",
    )
    diagnosis = Diagnosis(cluster="c", taken_at=NOW, findings=[], incidents=[moving])
    decision = plan(context(roll_spec(), moving_cluster(), status=in_flight(), diagnosis=diagnosis))
    (held,) = [w for w in decision.withheld if w.id == "r1"]
    assert held.message.endswith(
        "(kafka-reassign-partitions --verify) (5000 B left to copy, ETA 120 s at the rate they copy)"
    )
    assert decision.roll_wait is not None and held.message in decision.roll_wait.message
    # No ETA yet (too little history): nothing said of one.
    moving.evidence = {"left_bytes": 5000, "eta_seconds": None}
    (held,) = [
        w
        for w in plan(
            context(roll_spec(), moving_cluster(), status=in_flight(), diagnosis=diagnosis)
        ).withheld
        if w.id == "r1"
    ]
    assert held.message.endswith("(5000 B left to copy)")


# --- status written by the roll driver over the cycle's ------------------------------------------


def test_merge_keeps_the_cycles_diagnosis_and_takes_the_rolls_fields() -> None:
    def cond(type_: ConditionType, status: str, reason: str) -> Condition:
        return Condition(type=type_, status=ConditionStatus(status), reason=reason, last_transition_time=NOW)

    stored = KafkaHealthPolicyStatus(
        health="Critical",
        remediation_summary="old",
        conditions=[
            cond(ConditionType.READY, "True", "Diagnosed"),
            cond(ConditionType.HEALTHY, "False", "CriticalFindings"),
            cond(ConditionType.DEGRADED, "False", "AsExpected"),
            cond(ConditionType.REMEDIATING, "True", "Acting"),
        ],
    )
    ours = in_flight().model_copy(
        update={
            "health": "Healthy",
            "remediation_summary": "new",
            "conditions": [
                cond(ConditionType.HEALTHY, "True", "NoProblemsFound"),
                cond(ConditionType.REMEDIATING, "True", "WaitingForSafety"),
            ],
        }
    )
    merged = merge_remediation(stored, ours)
    assert merged.health == "Critical" and merged.remediation_summary == "new"
    assert merged.current_remediation == ours.current_remediation
    by_type = {c.type: c.reason for c in merged.conditions or []}
    assert by_type == {
        ConditionType.READY: "Diagnosed",
        ConditionType.HEALTHY: "CriticalFindings",
        ConditionType.DEGRADED: "AsExpected",
        ConditionType.REMEDIATING: "WaitingForSafety",
    }
    halted = ours.model_copy(
        update={
            "conditions": [
                cond(ConditionType.DEGRADED, "True", HALTED),
                cond(ConditionType.REMEDIATING, "False", HALTED),
            ]
        }
    )
    merged = merge_remediation(stored, halted)
    assert {c.type: c.reason for c in merged.conditions or []}[ConditionType.DEGRADED] == HALTED
