"""The reassignment checks and the `reassigning` cause on small snapshots (the real cluster's
version is tests/diagnose/test_kafka44_replication.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health.models.snapshot import BrokerThrottle, ClusterSnapshot, Reassignment, ReplicaLag
from kafka_health_spark.checks import reassignment, replication
from tests.spark.builders import at, by_check, check_findings, config, part, record, snapshot

pytestmark = pytest.mark.spark


def _snap() -> ClusterSnapshot:
    snap = snapshot(
        partitions=[
            part("moving", 0, 0, [0, 1, 2], [0, 1]),  # 2 being added, not yet in sync
            part("moving", 1, 1, [1, 0, 2], [1, 0, 2]),  # 2 added and in sync
            part("moving", 2, 0, [0, 1, 2], [0]),  # 2 being added; 1 out of sync too
            part("still", 0, 0, [0, 1, 2], [0, 1]),  # 2 out of sync, no reassignment
        ],
        configs=[
            config("moving").model_copy(
                update={
                    "leader_replication_throttled_replicas": "0:0,0:1,1:0,1:1,2:0,2:1",
                    "follower_replication_throttled_replicas": "0:2,1:2",
                }
            ),
            config("still").model_copy(update={"follower_replication_throttled_replicas": "*"}),
        ],
    )
    snap.reassignments = [
        Reassignment(topic="moving", partition=p, replicas=[0, 1, 2], adding=[2], removing=[])
        for p in range(3)
    ]
    return snap


def test_each_partition_being_reassigned_says_how_far_and_whether_it_is_throttled(
    spark: SparkSession,
) -> None:
    found = {
        f.subject.partition: f for f in check_findings(spark, reassignment.partition_reassigning, _snap())
    }
    assert set(found) == {0, 1, 2} and all(f.severity is Severity.INFO for f in found.values())
    assert found[0].message == (
        "moving-0 is being reassigned: adding broker(s) 2 (0 of 1 in sync), removing broker(s) none; "
        "its new replicas are throttled."
    )
    assert found[1].evidence["added_in_sync"] == 1 and found[1].evidence["throttled"] == "yes"
    assert found[2].evidence["throttled"] == "no"  # "2:2" is not in the follower list
    assert found[0].evidence["adding"] == "2" and found[0].evidence["removing"] == "none"


def test_a_throttle_is_left_behind_only_on_a_topic_with_no_reassignment(spark: SparkSession) -> None:
    (left,) = check_findings(spark, reassignment.replication_throttle_left, _snap())
    assert left.subject.topic == "still" and left.severity is Severity.WARNING
    assert left.evidence == {
        "leader_replication_throttled_replicas": "none",
        "follower_replication_throttled_replicas": "*",
    }
    assert str(left.remediation).startswith(
        "kafka-configs --entity-type topics --entity-name still --alter --delete-config "
        "leader.replication.throttled.replicas,follower.replication.throttled.replicas ("
    )


def test_under_replicated_names_the_reassignment_only_when_it_adds_every_replica_out_of_sync(
    spark: SparkSession,
) -> None:
    found = {
        (f.subject.topic, f.subject.partition): f
        for f in by_check(check_findings(spark, replication.under_replicated, _snap()), "under_replicated")
    }
    assert set(found) == {("moving", 0), ("moving", 2), ("still", 0)}
    added = found[("moving", 0)]
    assert added.evidence["reassigning"] == "2" and added.message.endswith(
        "They are being added by a reassignment (partition_reassigning)."
    )
    assert "kafka-reassign-partitions --verify" in str(added.remediation)
    for key in (("moving", 2), ("still", 0)):  # broker 1 out of sync too; no reassignment
        assert found[key].evidence["reassigning"] is None
        assert "reassignment" not in found[key].message


MB = 1 << 20


def _moving_at(minutes: float, left: int) -> ClusterSnapshot:
    """moving-0 adding broker 2, `left` bytes behind a 100 MB leader, broker 2 throttled at 1 MB/s."""
    snap = _snap().model_copy(update={"taken_at": at(minutes)})
    snap.replica_lags = [
        ReplicaLag(
            topic="moving", partition=0, broker=2, size_bytes=100 * MB - left, leader_size_bytes=100 * MB
        )
    ]
    snap.broker_throttles = [
        BrokerThrottle(broker=2, follower_rate=MB),
        BrokerThrottle(broker=0, leader_rate=MB),
    ]
    return snap


def test_a_reassignment_says_what_is_left_to_copy_its_eta_and_its_throttle_rate(
    spark: SparkSession, tmp_path: Path
) -> None:
    record(tmp_path, [_moving_at(-5, 80 * MB)])
    found = {
        f.subject.partition: f
        for f in check_findings(spark, reassignment.partition_reassigning, _moving_at(0, 50 * MB), tmp_path)
    }
    f = found[0]
    assert (f.evidence["left_bytes"], f.evidence["copied_percent"]) == (50 * MB, 50.0)
    assert f.evidence["eta_seconds"] == 500  # 30 MB in 300 s: 50 MB in 500 s
    assert f.evidence["follower_throttle_rate"] == MB
    assert f.message == (
        "moving-0 is being reassigned: adding broker(s) 2 (0 of 1 in sync; 52428800 B left to copy "
        "(50.0 % copied), ETA 500 s), removing broker(s) none; its new replicas are throttled at 1048576 B/s."
    )
    # No size read for moving-2's new replica: nothing guessed.
    assert found[2].evidence["left_bytes"] is None and found[2].evidence["eta_seconds"] is None
    # While it is in flight the brokers' rates are no throttle left behind.
    left = check_findings(spark, reassignment.replication_throttle_left, _moving_at(0, 50 * MB), tmp_path)
    assert [f.subject.topic for f in left] == ["still"]


def test_a_brokers_rate_left_with_no_reassignment_is_named_with_its_delete_command(
    spark: SparkSession,
) -> None:
    snap = _moving_at(0, 0)
    snap.reassignments = []
    found = check_findings(spark, reassignment.replication_throttle_left, snap)
    brokers = {f.subject.broker: f for f in found if f.subject.broker is not None}
    assert set(brokers) == {0, 2}
    assert brokers[2].remediation == (
        "kafka-configs --entity-type brokers --entity-name 2 --alter --delete-config follower.replication.throttled.rate"
    )
    assert brokers[0].evidence == {
        "leader_replication_throttled_rate": str(MB),
        "follower_replication_throttled_rate": "none",
    }
    assert sorted(f.subject.topic for f in found if f.subject.topic) == ["moving", "still"]


def test_a_reassignment_making_no_progress_says_so(spark: SparkSession, tmp_path: Path) -> None:
    record(tmp_path, [_moving_at(-12, 50 * MB)])  # as far behind 12 minutes ago
    found = {
        f.subject.partition: f
        for f in check_findings(spark, reassignment.partition_reassigning, _moving_at(0, 50 * MB), tmp_path)
    }
    f = found[0]
    assert f.evidence["stalled"] == "yes" and f.evidence["eta_seconds"] is None
    assert "no progress in 10 min" in f.message
    assert f.remediation is not None and f.remediation.startswith("it makes no progress: raise its throttle")
    assert found[1].evidence["stalled"] == "no"  # its new replica is in sync
