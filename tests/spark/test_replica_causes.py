"""Why each replica is out of sync (`checks/behind.py`): the cause the replication checks carry,
judged over a real history written by the history store, for every cause in its order."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Finding
from kafka_health.models.snapshot import ClusterSnapshot, Reassignment, ReplicaLag, TopicConfig
from kafka_health_spark.checks import replication
from tests.spark.builders import at, brokers, by_check, check_findings, config, part, record, snapshot

pytestmark = pytest.mark.spark

MB = 1 << 20


def behind(minutes: float, lag: int | None, *, broker: int = 2, **kw: object) -> ClusterSnapshot:
    """t-0 on brokers 0,1,2 led by 0, broker `broker` out of sync `lag` bytes behind (None: not read)."""
    s = snapshot(
        partitions=[part("t", 0, 0, [0, 1, 2], [0, 1] if broker == 2 else [0, 2])], taken_at=at(minutes), **kw
    )  # type: ignore[arg-type]
    if lag is not None:
        s.replica_lags = [
            ReplicaLag(
                topic="t", partition=0, broker=broker, size_bytes=100 * MB - lag, leader_size_bytes=100 * MB
            )
        ]
    return s


def urp(spark: SparkSession, now: ClusterSnapshot, history: Path | None = None, **t: object) -> Finding:
    (f,) = by_check(
        check_findings(spark, replication.under_replicated, now, history, **t), "under_replicated"
    )
    return f


def test_a_shrinking_lag_is_catching_up_with_an_eta_from_its_rate(
    spark: SparkSession, tmp_path: Path
) -> None:
    record(tmp_path, [behind(-12, 60 * MB), behind(-6, 40 * MB)])
    f = urp(spark, behind(0, 20 * MB), tmp_path)
    # reference: the newest sample at least 10 min old (-12 min, 60 MB): 40 MB in 720 s.
    assert f.evidence["cause"] == "catching_up"
    assert f.evidence["lag_bytes"] == 20 * MB
    assert f.evidence["catch_up_eta_seconds"] == 360
    assert "Cause: 2 catching_up (20971520 B behind, ETA 360 s)." in f.message
    assert f.remediation is not None and f.remediation.startswith("none: it is catching up")


def test_a_lag_not_shrunk_over_the_stuck_minutes_is_stuck(spark: SparkSession, tmp_path: Path) -> None:
    # It shrank once (-6 min) but not since the sample 10+ min ago: the reference is -12 min.
    record(tmp_path, [behind(-12, 20 * MB), behind(-6, 10 * MB)])
    f = urp(spark, behind(0, 20 * MB), tmp_path)
    assert f.evidence["cause"] == "stuck"
    assert f.evidence["catch_up_eta_seconds"] is None
    assert f.remediation is not None and "alive but not catching up" in f.remediation


def test_too_little_history_is_lagging_never_stuck(spark: SparkSession, tmp_path: Path) -> None:
    record(tmp_path, [behind(-4, 20 * MB)])  # 4 min of history: shorter than replica_stuck_minutes
    assert urp(spark, behind(0, 20 * MB), tmp_path).evidence["cause"] == "lagging"
    assert urp(spark, behind(0, 20 * MB), tmp_path, replica_stuck_minutes=3).evidence["cause"] == "stuck"
    # ... and without any history, or without a size read, it is lagging too.
    assert urp(spark, behind(0, 20 * MB)).evidence["cause"] == "lagging"
    f = urp(spark, behind(0, None), tmp_path)
    assert (f.evidence["cause"], f.evidence["lag_bytes"]) == ("lagging", None)
    # The shorter history still shows a shrink: catching up, at its own rate.
    f = urp(spark, behind(0, 10 * MB), tmp_path)
    assert (f.evidence["cause"], f.evidence["catch_up_eta_seconds"]) == ("catching_up", 240)


def test_down_fenced_reassigning_and_throttled_come_before_the_trend(
    spark: SparkSession, tmp_path: Path
) -> None:
    record(tmp_path, [behind(-12, 60 * MB)])
    # Broker 2 fenced (registered, stopped): its lag is not read.
    fenced = behind(0, None, broker_list=brokers(0, 1, dead=(2,)))
    assert urp(spark, fenced, tmp_path).evidence["cause"] == "fenced"
    gone = behind(0, None, broker_list=brokers(0, 1))  # not registered at all
    f = urp(spark, gone, tmp_path)
    assert f.evidence["cause"] == "broker_down" and f.remediation == "bring back broker(s) 2"
    moving = behind(0, 20 * MB)
    moving.reassignments = [Reassignment(topic="t", partition=0, replicas=[0, 1, 2], adding=[2])]
    f = urp(spark, moving, tmp_path)
    assert f.evidence["cause"] == "reassigning" and f.evidence["reassigning"] == "2"
    for key, value in (
        ("follower_replication_throttled_replicas", "0:2"),
        ("follower_replication_throttled_replicas", "*"),
        ("leader_replication_throttled_replicas", "0:0"),
    ):
        held = behind(0, 20 * MB)
        held.topic_configs = [TopicConfig(topic="t", min_insync_replicas=2, **{key: value})]
        f = urp(spark, held, tmp_path)
        assert f.evidence["cause"] == "throttled", (key, value)
        assert f.remediation is not None and "replication throttle holds it" in f.remediation
    other = behind(0, 20 * MB)  # a throttle on another replica does not hold this one
    other.topic_configs = [
        TopicConfig(topic="t", min_insync_replicas=2, follower_replication_throttled_replicas="0:1")
    ]
    assert urp(spark, other, tmp_path).evidence["cause"] == "catching_up"


def test_two_replicas_out_of_sync_each_carry_their_own_cause(spark: SparkSession, tmp_path: Path) -> None:
    def two(minutes: float, lag1: int) -> ClusterSnapshot:
        s = snapshot(
            partitions=[part("t", 0, 0, [0, 1, 2], [0])],
            broker_list=brokers(0, 1, dead=(2,)),
            configs=[config("t", min_isr=1)],
            taken_at=at(minutes),
        )
        s.replica_lags = [ReplicaLag(topic="t", partition=0, broker=1, size_bytes=0, leader_size_bytes=lag1)]
        return s

    record(tmp_path, [two(-11, 5 * MB)])
    f = urp(spark, two(0, 5 * MB), tmp_path)
    assert f.evidence["cause"] == "fenced,stuck"  # in the order a remediation follows them
    assert f.evidence["causes"] == "1 stuck (5242880 B behind); 2 fenced"
    assert f.remediation == "bring back broker(s) 1,2"
