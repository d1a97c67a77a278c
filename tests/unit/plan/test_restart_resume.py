"""Honest halts and their resume (plan/restart_resume.py), and the never-safe verdict shared by
the operator and the CLI (plan/restart_safety.never_safe_verdict): pure, exhaustive."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from kafka_health.models.policy import (
    ActionType,
    CurrentRemediation,
    RemediationStep,
    RequestState,
    RestartBegun,
    RollingRestartResult,
)
from kafka_health.plan.restart_resume import (
    BEGUN,
    IN_FLIGHT_STEPS,
    begun_before,
    halt_advice,
    restart_begun,
    restarts_begun,
    resume_step,
)
from kafka_health.plan.restart_safety import never_safe_verdict

from .factories import balanced, partition, snapshot

T0 = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
Step = RemediationStep


def current(step: Step, broker: int | None = 2, pod_uid: str | None = "old-uid") -> CurrentRemediation:
    return CurrentRemediation(
        action=ActionType.ROLLING_RESTART,
        id="r1",
        plan_id="roll-r1",
        step=step,
        started_at=T0,
        brokers_planned=[0, 2, 1],
        brokers_done=[0],
        current_broker=broker,
        pod_uid=pod_uid,
    )


# ------------------------------------------------------------------------ restart_begun
@pytest.mark.parametrize("step", list(Step))
def test_a_restart_began_exactly_when_the_broker_in_flight_is_past_its_pod_delete(step: Step) -> None:
    begun = restart_begun(current(step))
    if step in IN_FLIGHT_STEPS:
        assert begun == RestartBegun(broker=2, pod_uid="old-uid")
    else:  # CheckingSafety, DeletingPod (delete refused), between brokers, other executors: nothing began
        assert begun is None


@pytest.mark.parametrize("step", sorted(IN_FLIGHT_STEPS))
def test_no_restart_began_without_a_broker_in_flight_or_a_recorded_pod(step: Step) -> None:
    assert restart_begun(current(step, broker=None)) is None
    assert restart_begun(current(step, pod_uid=None)) is None
    assert restart_begun(None) is None


# ------------------------------------------------------------------------ resume_step
BEGUN_2 = RestartBegun(broker=2, pod_uid="old-uid")


@pytest.mark.parametrize(
    ("begun", "broker", "pod_uid", "terminating", "expected"),
    [
        # No earlier restart, or one of another broker: a restart from the start.
        (None, 2, "old-uid", False, Step.CHECKING_SAFETY),
        (None, 2, None, False, Step.CHECKING_SAFETY),
        (BEGUN_2, 1, "new-uid", False, Step.CHECKING_SAFETY),
        (BEGUN_2, 1, None, True, Step.CHECKING_SAFETY),
        # The pod the earlier roll deleted still runs: the delete never took effect: restart.
        (BEGUN_2, 2, "old-uid", False, Step.CHECKING_SAFETY),
        # Its restart happened: deleted pod terminating, gone (no pod yet), or replaced.
        (BEGUN_2, 2, "old-uid", True, Step.WAITING_POD_READY),
        (BEGUN_2, 2, None, False, Step.WAITING_POD_READY),
        (BEGUN_2, 2, "new-uid", False, Step.WAITING_POD_READY),
        (BEGUN_2, 2, "new-uid", True, Step.WAITING_POD_READY),
    ],
)
def test_resume_step_checks_health_only_when_the_deleted_pod_is_gone(
    begun: RestartBegun | None, broker: int, pod_uid: str | None, terminating: bool, expected: Step
) -> None:
    assert resume_step(begun, broker, pod_uid, pod_terminating=terminating) is expected


def test_resume_step_never_restarts_a_broker_whose_pod_was_replaced_all_inputs() -> None:
    """Exhaustive over brokers, pods and termination: WaitingPodReady iff the record names the
    broker and its deleted pod is not the one running."""
    for begun, broker, pod_uid, terminating in itertools.product(
        [None, BEGUN_2], [0, 1, 2], [None, "old-uid", "new-uid"], [False, True]
    ):
        got = resume_step(begun, broker, pod_uid, pod_terminating=terminating)
        happened = begun is not None and broker == 2 and (pod_uid != "old-uid" or terminating)
        assert got is (Step.WAITING_POD_READY if happened else Step.CHECKING_SAFETY)


# ------------------------------------------------------------------------ begun_before
def result(
    id: str, state: RequestState, minutes: int | None, begun: RestartBegun | None = None
) -> RollingRestartResult:
    finished = T0 + timedelta(minutes=minutes) if minutes is not None else None
    return RollingRestartResult(id=id, state=state, finished_at=finished, restart_begun=begun)


def test_begun_before_reads_the_last_roll_that_ran_and_ended() -> None:
    halted = result("r1", RequestState.FAILED, 1, BEGUN_2)
    assert begun_before([halted], "r2") == [BEGUN_2]
    # The roll now (r2, Running) and requests that never ran (Blocked) say nothing.
    assert begun_before([halted, result("r2", RequestState.RUNNING, None)], "r2") == [BEGUN_2]
    assert begun_before([halted, result("r3", RequestState.BLOCKED, 5)], "r2") == [BEGUN_2]
    # A later roll that ended: its own record (none) is what counts, whatever the list order.
    later = result("r3", RequestState.SUCCEEDED, 5)
    assert begun_before([later, halted], "r2") == []
    assert begun_before([halted, result("r3", RequestState.FAILED, 5)], "r2") == []
    # The record of the roll itself (its own earlier halt under the same id) is not read.
    assert begun_before([halted], "r1") == []
    assert begun_before(None, "r2") == [] and begun_before([], "r2") == []
    # A halted batch: the first member and the others, all to be checked, none restarted again.
    batch = halted.model_copy(update={"batch_begun": [RestartBegun(broker=5, pod_uid="uid-5")]})
    assert begun_before([batch], "r2") == [BEGUN_2, RestartBegun(broker=5, pod_uid="uid-5")]


# ------------------------------------------------------------------------ halt_advice
def request(ids: list[int]) -> str:
    return f"add a new request with brokers: {ids}"


def test_halt_advice_names_the_broker_in_flight_and_never_repeats_its_restart() -> None:
    text = halt_advice([0, 2, 1], [0], [BEGUN_2], new_request=request)
    assert text.startswith(
        f"brokers 0 were restarted; broker 2: {BEGUN} (its pod old-uid was deleted); 1 was not."
    )
    assert "add a new request with brokers: [2, 1]" in text
    assert "broker 2 is not restarted again" in text and "only checks its broker's health" in text
    # Before this change the advice read "2, 1 were not" and asked for a restart of [2, 1].
    assert "2, 1 were not" not in text


def test_halt_advice_last_broker_in_flight_and_none_in_flight() -> None:
    last = halt_advice([0, 1, 2], [0, 1], [BEGUN_2], new_request=request)
    assert f"broker 2: {BEGUN}" in last and "brokers: [2]" in last and "were not" not in last
    none = halt_advice([0, 2, 1], [0], [], new_request=request)
    assert (
        none
        == "brokers 0 were restarted; 2, 1 were not. To finish: fix what blocked it, then "
        + request([2, 1])
        + "."
    )
    assert BEGUN not in none
    first = halt_advice([2, 1], [], [BEGUN_2], new_request=request)
    assert first.startswith(f"no broker was restarted; broker 2: {BEGUN}")
    assert halt_advice([0, 1], [0, 1], [], new_request=request) == "brokers 0, 1 were restarted."


# ------------------------------------------------------------------------ never_safe_verdict
def test_never_safe_verdict_refuses_only_when_asked_and_names_the_partitions() -> None:
    parts = [*balanced("orders"), *(partition("strict", p, [1, 2, 3]) for p in range(3))]
    snap = snapshot(parts, min_isr={"orders": 2, "strict": 3})
    refused = never_safe_verdict(snap, [1, 2, 3], refuse=True)
    assert refused.refused and refused.partitions == ["strict-0", "strict-1", "strict-2"]
    assert "strict-0, strict-1, strict-2" in refused.refusal("pass --never-safe proceed")
    assert refused.refusal("pass --never-safe proceed").endswith(
        "or pass --never-safe proceed to roll anyway"
    )
    proceeding = never_safe_verdict(snap, [1, 2, 3], refuse=False)
    assert not proceeding.refused and proceeding.partitions == refused.partitions
    assert "(--never-safe proceed): strict-0" in proceeding.proceeding("--never-safe proceed")
    # Nothing never-safe: never refused.
    clean = never_safe_verdict(
        snapshot(list(balanced("orders")), min_isr={"orders": 2}), [1, 2, 3], refuse=True
    )
    assert not clean.refused and clean.partitions == []


def test_never_safe_verdict_lists_twenty_then_counts() -> None:
    parts = [partition("strict", p, [1, 2]) for p in range(25)]
    verdict = never_safe_verdict(snapshot(parts, min_isr={"strict": 2}), [1], refuse=True)
    assert len(verdict.partitions) == 25 and verdict.listed().endswith(" and 5 more")
    # Only the brokers of the roll count.
    assert never_safe_verdict(snapshot(parts, min_isr={"strict": 2}), [3], refuse=True).partitions == []


# ------------------------------------------------------------------------ both entry points
def test_the_operator_and_the_cli_word_a_halt_in_flight_the_same_way() -> None:
    """The halted result (typed record, message) and each entry point's advice, from the
    executor's outcome as it halts in WaitingUrpZero with broker 2 in flight."""
    from kafka_health.cli.restart_honest import halt_lines, parse_begun
    from kafka_health.controller.remediation import _next_steps
    from kafka_health.remediate.rolling_restart import BrokerRestartOutcome, halted_result

    state = current(Step.WAITING_URP_ZERO)
    outcome = BrokerRestartOutcome(
        broker=2, result="failed", step=Step.WAITING_URP_ZERO, message="broker 2: URP remain", current=state
    )
    result = halted_result(outcome, clock=lambda: T0)
    assert result.restart_begun == BEGUN_2 and result.brokers_done == [0]
    assert result.message == f"halted at broker 2, {BEGUN} (WaitingUrpZero): broker 2: URP remain"
    operator = _next_steps(state, [BEGUN_2])
    assert "brokers: [2, 1]; broker 2 is not restarted again" in operator
    assert "spec.remediation.rollingRestart.requests" in operator
    cli = halt_lines(result, [0, 2, 1])
    assert "run kafka-health restart again with --brokers 2,1 --restart-begun 2=old-uid;" in cli
    assert operator.split(". To finish")[0] == cli.split(". To finish")[0]  # the same facts
    # What the CLI prints, it reads back.
    assert parse_begun("2=old-uid") == [BEGUN_2] and parse_begun(None) == []
    # A halt before the delete names no broker in flight.
    early = current(Step.DELETING_POD)
    refused = halted_result(
        BrokerRestartOutcome(broker=2, result="failed", step=Step.DELETING_POD, message="403", current=early)
    )
    assert refused.restart_begun is None and BEGUN not in (refused.message or "")
    assert "2, 1 were not" in _next_steps(early, [])


@pytest.mark.parametrize("text", ["2", "two=abc", "2=", "=abc", "2=a b", "-1=abc"])
def test_restart_begun_option_refuses_malformed_values_naming_the_form(text: str) -> None:
    from kafka_health.cli.restart_honest import parse_begun

    with pytest.raises(ValueError, match=r"--restart-begun .*BROKER=POD_UID"):
        parse_begun(text)


def test_a_batch_halted_in_flight_names_every_member_and_restarts_none_again() -> None:
    """maxConcurrent > 1: a batch (2 and 5) halts in WaitingUrpZero: both are "restart begun",
    recorded (restartBegun, batchBegun), advised as health checks only, and the CLI prints both."""
    from kafka_health.cli.restart_honest import halt_lines, parse_begun
    from kafka_health.models.policy import BatchMember
    from kafka_health.remediate.rolling_restart import BrokerRestartOutcome, halted_result

    state = current(Step.WAITING_URP_ZERO).model_copy(
        update={
            "brokers_planned": [0, 2, 5, 1],
            "batch": [BatchMember(broker=2, pod_uid="old-uid"), BatchMember(broker=5, pod_uid="uid-5")],
        }
    )
    five = RestartBegun(broker=5, pod_uid="uid-5")
    assert restarts_begun(state) == [BEGUN_2, five]
    outcome = BrokerRestartOutcome(
        broker=2,
        result="failed",
        step=Step.WAITING_URP_ZERO,
        message="brokers 2, 5: URP remain",
        current=state,
    )
    result = halted_result(outcome, clock=lambda: T0)
    assert (result.restart_begun, result.batch_begun) == (BEGUN_2, [five])
    assert result.message is not None and result.message.startswith(f"halted at brokers 2, 5, {BEGUN}")
    cli = halt_lines(result, [0, 2, 5, 1])
    assert "--brokers 2,5,1 --restart-begun 2=old-uid,5=uid-5;" in cli
    assert "brokers 2, 5 are not restarted again" in cli and "1 was not" in cli
    assert parse_begun("2=old-uid,5=uid-5") == [BEGUN_2, five]
    # Before the delete of a batch (CheckingSafety, DeletingPod) nothing began.
    assert restarts_begun(state.model_copy(update={"step": Step.DELETING_POD})) == []
