"""Leadership checks: preferred-leader imbalance per broker, and leader-count skew."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from kafka_health_spark.checks import leadership
from tests.spark.builders import balanced_topic, brokers, check_findings, part, snapshot

pytestmark = pytest.mark.spark


def bounced(broker: int, partitions: int = 6) -> list:
    """After `broker` restarted: its preferred partitions are led by the next replica, ISR full."""
    out = []
    for p in balanced_topic("orders", partitions):
        leader = p.replicas[1] if p.leader == broker else p.leader
        out.append(part(p.topic, p.partition, leader, p.replicas))
    return out


def test_balanced_cluster_has_no_findings(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("orders", 12))
    assert check_findings(spark, leadership.leader_imbalance, snap) == []
    assert check_findings(spark, leadership.leader_skew, snap) == []


def test_bounced_broker_is_imbalanced_and_election_is_suggested(spark: SparkSession) -> None:
    snap = snapshot(partitions=bounced(1))
    (f,) = check_findings(spark, leadership.leader_imbalance, snap)
    assert f.subject.broker == 1
    assert f.remediation == "preferred_leader_election"
    assert f.evidence["preferred_partitions"] == 2
    assert f.evidence["not_led_by_preferred"] == 2
    assert f.evidence["electable"] == 2
    assert f.evidence["imbalance_ratio"] == 1.0


def test_imbalance_threshold_is_per_run(spark: SparkSession) -> None:
    # Broker 0 prefers 4 partitions, one led elsewhere: 25 %.
    parts = balanced_topic("orders", 12)
    parts[0] = part("orders", 0, 1, parts[0].replicas)
    snap = snapshot(partitions=parts)
    assert [f.subject.broker for f in check_findings(spark, leadership.leader_imbalance, snap)] == [0]
    assert check_findings(spark, leadership.leader_imbalance, snap, leader_imbalance_ratio=0.3) == []


def test_no_election_when_the_preferred_replica_is_out_of_sync(spark: SparkSession) -> None:
    parts = [part("t", 0, 1, [0, 1, 2], [1, 2])]
    (f,) = check_findings(spark, leadership.leader_imbalance, snapshot(partitions=parts))
    assert f.evidence["electable"] == 0
    assert f.remediation is not None and f.remediation != "preferred_leader_election"


def test_dead_broker_is_left_to_the_broker_missing_check(spark: SparkSession) -> None:
    snap = snapshot(partitions=bounced(1), broker_list=brokers(0, 2, dead=(1,)))
    assert check_findings(spark, leadership.leader_imbalance, snap) == []


def test_skew_after_a_bounce_is_fixed_by_election(spark: SparkSession) -> None:
    snap = snapshot(partitions=bounced(1, partitions=12))
    (f,) = check_findings(spark, leadership.leader_skew, snap)
    assert f.evidence["min_broker"] == 1 and f.evidence["leaders_min"] == 0
    assert f.evidence["leaders_per_broker"] == "0:4,1:0,2:8"
    assert f.remediation == "preferred_leader_election"


def test_skew_from_uneven_preferred_replicas_needs_reassignment(spark: SparkSession) -> None:
    parts = [part("t", p, 0, [0, 1, 2]) for p in range(8)] + [part("t", 8, 1, [1, 2, 0])]
    (f,) = check_findings(spark, leadership.leader_skew, snapshot(partitions=parts))
    assert f.evidence["max_broker"] == 0
    assert f.remediation is not None and "reassign" in f.remediation


def test_small_spread_is_tolerated(spark: SparkSession) -> None:
    parts = balanced_topic("t", 4)  # leaders 2,1,1
    assert check_findings(spark, leadership.leader_skew, snapshot(partitions=parts)) == []


def test_of_brokers_with_equal_leader_counts_the_lowest_id_is_named(spark: SparkSession) -> None:
    """Ties name the lowest broker id, whatever order the partitions come in."""
    parts = [part("t", p, 2, [2, 0, 1]) for p in range(6)] + [
        part("t", 6 + p, 1, [1, 2, 0]) for p in range(6)
    ]
    (f,) = check_findings(spark, leadership.leader_skew, snapshot(partitions=parts))
    assert (f.evidence["max_broker"], f.evidence["min_broker"]) == (1, 0)
    assert f.evidence["leaders_per_broker"] == "0:0,1:6,2:6"
