"""Quorum checks: leader, lagging voters, missing brokers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health_spark.checks import quorum
from tests.spark.builders import at, balanced_topic, brokers, check_findings, part, record, snapshot
from tests.spark.builders import quorum as quorum_state

pytestmark = pytest.mark.spark


def test_healthy_quorum(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("t"))
    for check in quorum.CHECKS:
        assert check_findings(spark, check, snap) == []


def test_no_leader(spark: SparkSession) -> None:
    (f,) = check_findings(spark, quorum.quorum_no_leader, snapshot(quorum_state=quorum_state(leader=None)))
    assert f.severity is Severity.CRITICAL


def test_one_lagging_voter_warns_two_is_critical(spark: SparkSession) -> None:
    one = snapshot(quorum_state=quorum_state(lags={0: 0, 1: 5000, 2: 3}))
    (f,) = check_findings(spark, quorum.quorum_voter_lagging, one)
    assert f.subject.broker == 1 and f.severity is Severity.WARNING
    assert f.evidence["caught_up_voters"] == 2

    two = snapshot(quorum_state=quorum_state(lags={0: 0, 1: 5000, 2: 40}, caught_up_ago_s=120))
    found = check_findings(spark, quorum.quorum_voter_lagging, two)
    assert {f.subject.broker for f in found} == {1, 2}
    assert {f.severity for f in found} == {Severity.CRITICAL}


def test_broker_known_only_as_a_replica_is_missing(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[part("t", 0, 0, [0, 3]), *balanced_topic("u", 3)], broker_list=brokers(0, 1, 2)
    )
    (f,) = check_findings(spark, quorum.broker_missing, snap)
    assert f.subject.broker == 3 and f.evidence["replicas"] == 1
    assert f.evidence["fenced"] == 0 and "is not registered in the cluster" in f.message


def test_broker_seen_in_history_is_missing_even_without_replicas(spark: SparkSession, tmp_path: Path) -> None:
    record(tmp_path, [snapshot(broker_list=brokers(0, 1, 2, 5), taken_at=at(-10))])
    (f,) = check_findings(spark, quorum.broker_missing, snapshot(), tmp_path)
    assert f.subject.broker == 5
    assert f.evidence["last_seen_alive"] == "2026-03-02T11:50:00Z"


def test_fenced_broker_is_missing(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("t"), broker_list=brokers(0, 2, dead=(1,)))
    (f,) = check_findings(spark, quorum.broker_missing, snap)
    assert f.subject.broker == 1 and f.evidence["replicas"] == 6
    # A stopped or paused KRaft broker stays registered, fenced: the words say so.
    assert f.evidence["fenced"] == 1
    assert "Broker 1 is fenced (registered, not serving) but hosts 6 replicas" in f.message


def test_voter_unknown_to_a_new_leader_is_lagging(spark: SparkSession) -> None:
    q = quorum_state(leader=0)
    q.voters[1] = q.voters[1].model_copy(
        update={"log_end_offset": None, "lag": None, "last_caught_up_ms": None}
    )
    (f,) = check_findings(spark, quorum.quorum_voter_lagging, snapshot(quorum_state=q))
    assert f.subject.broker == 1 and f.severity is Severity.WARNING
    assert f.evidence["lag"] is None


def test_a_lagging_observer_is_its_own_finding_and_not_a_voter(spark: SparkSession) -> None:
    """Broker-only nodes observe the quorum: one far behind on the metadata log is reported as
    quorum_observer_lagging (warning), and observers never count among the voters."""
    q = quorum_state(leader=0, observers={3: 0, 4: 5000})
    snap = snapshot(partitions=balanced_topic("t", 5), broker_list=brokers(0, 1, 2, 3, 4), quorum_state=q)
    found = check_findings(spark, quorum.quorum_voter_lagging, snap)
    assert [(f.check, f.subject.broker, f.severity) for f in found] == [
        ("quorum_observer_lagging", 4, Severity.WARNING)
    ]
    assert found[0].evidence["lag"] == 5000 and "Broker 4 trails the metadata log" in found[0].message

    # Caught up long ago counts too; a voter lagging still sees 3 voters, not 5.
    stale = quorum_state(leader=0, lags={0: 0, 1: 5000, 2: 0}, observers={3: 10}, caught_up_ago_s=120)
    snap = snapshot(partitions=balanced_topic("t", 4), broker_list=brokers(0, 1, 2, 3), quorum_state=stale)
    found = {f.check: f for f in check_findings(spark, quorum.quorum_voter_lagging, snap)}
    assert found["quorum_observer_lagging"].subject.broker == 3
    assert found["quorum_voter_lagging"].evidence["voters"] == 3


def test_an_observer_that_is_down_is_left_to_broker_missing(spark: SparkSession) -> None:
    q = quorum_state(leader=0, observers={3: 5000})
    snap = snapshot(
        partitions=balanced_topic("t", 4), broker_list=brokers(0, 1, 2, dead=(3,)), quorum_state=q
    )
    assert check_findings(spark, quorum.quorum_voter_lagging, snap) == []
