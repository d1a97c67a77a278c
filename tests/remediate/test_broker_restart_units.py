"""One broker's restart as a step table (remediate/broker_restart.py), without a server: a resumed wait
keeps its persisted start, a timeout is a typed StepFailed turned into outcome `failed` at that
step, and passing a wait persists the next one with its own timeout. The real roll:
tests/k8s/test_rolling_restart.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import (
    ActionType,
    BrokerPods,
    CurrentRemediation,
    RemediationStep,
    RestartTimeouts,
)
from kafka_health.remediate import broker_restart
from kafka_health.remediate.rolling_restart import restart_broker

NOW = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)
Step = RemediationStep


def in_flight(step: Step, started: datetime, pod_uid: str | None = "old-uid") -> CurrentRemediation:
    return CurrentRemediation(
        action=ActionType.ROLLING_RESTART,
        id="r1",
        plan_id="roll-r1",
        step=step,
        started_at=NOW - timedelta(hours=1),
        step_started_at=started,
        brokers_planned=[1, 2],
        brokers_done=[],
        current_broker=1,
        pod_uid=pod_uid,
    )


def resume(current: CurrentRemediation, saved: list[CurrentRemediation]) -> Any:
    return restart_broker(
        None,
        k8s=cast(K8s, None),
        admin=cast(KafkaAdmin, None),
        pods_spec=BrokerPods.model_validate({"statefulSet": "kafka"}),
        namespace="kafka",
        timeouts=RestartTimeouts(),
        current=current,
        persist=saved.append,
        clock=lambda: NOW,
        sleep=lambda _s: None,
    )


def test_the_table_has_one_row_per_wait_in_order() -> None:
    assert list(broker_restart.WAITS) == [
        Step.WAITING_POD_READY,
        Step.WAITING_BROKER_REGISTERED,
        Step.WAITING_URP_ZERO,
    ]
    assert [w.then for w in broker_restart.WAITS.values()] == [
        Step.WAITING_BROKER_REGISTERED,
        Step.WAITING_URP_ZERO,
        Step.DONE,
    ]
    assert broker_restart.timeout_of(Step.WAITING_URP_ZERO, RestartTimeouts()) == "15m"
    assert broker_restart.timeout_of(Step.DELETING_POD, RestartTimeouts()) is None


def test_a_resumed_wait_past_its_persisted_timeout_fails_at_that_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(broker_restart, "fully_replicated", lambda _admin: False)
    saved: list[CurrentRemediation] = []
    out = resume(in_flight(Step.WAITING_URP_ZERO, NOW - timedelta(minutes=16)), saved)
    assert out.result == "failed" and out.step is Step.WAITING_URP_ZERO
    assert out.message == "broker 1: under-replicated or offline partitions remain after 15m"
    assert out.current.message == out.message and out.current.current_broker == 1
    assert saved == [] and not out.deleted_pod


def test_await_step_raises_a_typed_step_failed() -> None:
    with pytest.raises(broker_restart.StepFailed) as failed:
        broker_restart.await_step(
            Step.WAITING_POD_READY, lambda: None, NOW, "no pod", clock=lambda: NOW, sleep=lambda _s: None
        )
    assert failed.value.step is Step.WAITING_POD_READY and failed.value.reason == "no pod"


def test_passing_a_wait_persists_the_next_with_its_own_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_restart, "node_back", lambda *_a, **_kw: True)
    monkeypatch.setattr(broker_restart, "fully_replicated", lambda _admin: True)
    saved: list[CurrentRemediation] = []
    out = resume(in_flight(Step.WAITING_BROKER_REGISTERED, NOW - timedelta(minutes=1)), saved)
    assert out.result == "done" and out.step is Step.DONE
    assert [s.step for s in saved] == [Step.WAITING_URP_ZERO, Step.WAITING_FOR_SAFETY]
    assert saved[0].step_deadline == NOW + timedelta(minutes=15)
    assert saved[0].message == "broker 1: registered; waiting for 0 under-replicated partitions"
    assert saved[1].brokers_done == [1] and saved[1].current_broker is None
    assert out.message == "broker 1 restarted and healthy (1 of 2)"


def test_a_resume_without_the_pod_uid_fails_rather_than_guess() -> None:
    out = resume(in_flight(Step.DELETING_POD, NOW, pod_uid=None), [])
    assert out.result == "failed" and out.step is Step.DELETING_POD
    assert "the pod uid was not recorded" in out.message
