"""The unclean-stop finding (issue 36, point 3): a killed broker container (exit 137 or
OOMKilled) names its pod, its grace period and the fix; a clean stop is no finding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kafka_health.diagnose.unclean_stops import RECENT, LastTermination, killed, unclean_stop_findings

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def term(code: int, reason: str | None = "Error", grace: int | None = 30, broker: int = 2) -> LastTermination:
    return LastTermination(
        broker=broker,
        pod=f"kafka-{broker}",
        container="kafka",
        exit_code=code,
        reason=reason,
        grace_period_seconds=grace,
    )


@pytest.mark.parametrize(
    ("code", "reason", "is_killed"),
    [
        (137, "Error", True),
        (137, "OOMKilled", True),
        (137, None, True),
        (143, "Error", False),
        (0, "Completed", False),
        (1, "Error", False),
        (0, "OOMKilled", True),
    ],
)
def test_killed_is_sigkill_or_oom(code: int, reason: str | None, is_killed: bool) -> None:
    assert killed(term(code, reason)) is is_killed
    assert len(unclean_stop_findings([term(code, reason)], NOW)) == int(is_killed)


def test_a_sigkill_names_pod_grace_period_and_the_grace_fix() -> None:
    [f] = unclean_stop_findings([term(137, "Error", grace=5)], NOW)
    assert f.check == "unclean_stop" and f.subject.broker == 2
    assert "pod kafka-2" in f.message and "terminationGracePeriodSeconds 5 s" in f.message
    assert "container kafka, exit 137" in f.message and f.evidence["container"] == "kafka"
    assert f.remediation is not None and "raise terminationGracePeriodSeconds (now 5 s)" in f.remediation
    assert f.evidence["grace_period_seconds"] == 5 and f.evidence["exit_code"] == 137


def test_an_oom_kill_names_memory_not_the_grace_period() -> None:
    [f] = unclean_stop_findings([term(137, "OOMKilled", grace=60)], NOW)
    assert "OOMKilled" in f.message and "terminationGracePeriodSeconds 60 s" in f.message
    assert f.remediation is not None and "memory limit" in f.remediation
    assert "terminationGracePeriodSeconds" not in f.remediation


def test_an_unset_grace_period_is_said_so_and_findings_are_in_broker_order() -> None:
    found = unclean_stop_findings(
        [term(137, grace=None, broker=3), term(143, broker=1), term(137, broker=0)], NOW
    )
    assert [f.subject.broker for f in found] == [0, 3]
    assert "unset" in found[1].message


@pytest.mark.parametrize(
    ("ago", "reported"),
    [
        (None, True),
        (timedelta(0), True),
        (RECENT - timedelta(seconds=1), True),
        (RECENT, False),
        (timedelta(days=30), False),
    ],
)
def test_a_kill_is_reported_while_it_is_recent(ago: timedelta | None, reported: bool) -> None:
    """lastState stays until the container ends again: a kill of last month is history, not news."""
    t = term(137, "OOMKilled").model_copy(update={"finished_at": None if ago is None else NOW - ago})
    found = unclean_stop_findings([t], NOW)
    assert len(found) == int(reported)
    if found and ago is not None:
        assert found[0].evidence["finished_at"] == (NOW - ago).isoformat()


def test_a_fenced_broker_whose_pod_runs_is_recovering_and_groups_with_its_broker_down_incident() -> None:
    from kafka_health.diagnose.incidents import group_incidents
    from kafka_health.diagnose.unclean_stops import recovering_findings
    from kafka_health.models.snapshot import Broker
    from tests.unit.test_incidents import broker_missing

    brokers = [
        Broker(id=0, host="h", port=1, alive=True, fenced=False),
        Broker(id=1, host="h", port=2, alive=False, fenced=True),  # fenced, its pod runs: recovering
        Broker(id=2, host="h", port=3, alive=False, fenced=True),  # fenced, its container down: down
        Broker(id=3, host="", port=0, alive=False, fenced=None),  # unknown
    ]
    found = recovering_findings(brokers, {0: "kafka-0", 1: "kafka-1", 3: "kafka-3"})
    assert [(f.check, f.subject.broker, f.evidence["pod"]) for f in found] == [
        ("broker_recovering", 1, "kafka-1")
    ]
    assert "fenced while its pod kafka-1 runs" in found[0].message
    incidents = group_incidents([broker_missing(1), *found])
    assert [(i.id, sorted(f.check for f in i.findings)) for i in incidents] == [
        ("broker_down:1", ["broker_missing", "broker_recovering"])
    ]
