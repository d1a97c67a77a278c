"""Replication checks on small snapshots: the partition sets follow Kafka's own definitions."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health.models.snapshot import EligibleLeaders
from kafka_health_spark.checks import replication
from tests.spark.builders import (
    balanced_topic,
    brokers,
    by_check,
    check_findings,
    config,
    part,
    partitions_of,
    snapshot,
)

pytestmark = pytest.mark.spark


def test_healthy_topic_has_no_replication_findings(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("orders"))
    for check in replication.CHECKS:
        assert check_findings(spark, check, snap) == []


def test_empty_cluster_has_no_findings(spark: SparkSession) -> None:
    snap = snapshot(partitions=[], broker_list=[])
    for check in replication.CHECKS:
        assert check_findings(spark, check, snap) == []


def test_offline_means_no_leader_or_a_dead_leader(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[
            part("t", 0, None, [1, 2, 0], [1]),  # leaderless
            part("t", 1, 1, [1, 2, 0], [1]),  # led by a broker that is gone
            part("t", 2, 0, [0, 1, 2], [0, 2]),  # fine: live leader
        ],
        broker_list=brokers(0, 2, dead=(1,)),
    )
    found = check_findings(spark, replication.offline_partitions, snap)
    assert partitions_of(found, "offline_partition") == {("t", 0), ("t", 1)}
    assert all(f.severity is Severity.CRITICAL for f in found)
    assert found[0].evidence["replicas"] == "0,1,2"


def test_an_offline_partition_says_how_it_comes_back(spark: SparkSession) -> None:
    """KIP-966: eligible leader replicas → cleanly when one returns; an empty ISR and no eligible
    replica → only an unclean election; an ISR member (no ELR, as without KIP-966) → as before."""
    snap = snapshot(
        partitions=[
            part("t", 0, None, [0, 1, 2], []),  # ISR emptied; ELR 0,1
            part("t", 1, None, [0, 1, 2], []),  # ISR emptied; no eligible replica left
            part("t", 2, None, [0, 1, 2], [1]),  # the last ISR member is down
        ],
        broker_list=brokers(2, dead=(0, 1)),
    )
    snap.eligible_leaders = [
        EligibleLeaders(topic="t", partition=0, elr=[0, 1], last_known_elr=[0]),
        EligibleLeaders(topic="t", partition=1, elr=[], last_known_elr=[1]),
    ]
    found = {f.subject.partition: f for f in check_findings(spark, replication.offline_partitions, snap)}
    assert set(found) == {0, 1, 2}
    clean = found[0]
    assert "eligible leader replicas 0,1" in clean.message and "elects cleanly" in clean.message
    assert clean.evidence["eligible_leaders"] == "0,1" and clean.evidence["last_known_elr"] == "0"
    assert "no unclean election is needed" in (clean.remediation or "")
    unclean = found[1]
    assert "no eligible leader replica; last known 1" in unclean.message
    assert "only an unclean election" in unclean.message
    assert "kafka-leader-election --election-type UNCLEAN --topic t --partition 1" in (
        unclean.remediation or ""
    )
    assert unclean.evidence["eligible_leaders"] == "none"
    isr = found[2]
    assert isr.message == "t-2 has no live leader (replicas 0,1,2, ISR 1): it serves no reads or writes."
    assert "unclean leader election only as a last resort" in (isr.remediation or "")


def test_under_replicated_names_the_out_of_sync_brokers(spark: SparkSession) -> None:
    snap = snapshot(partitions=[part("t", 0, 0, [0, 1, 2], [0]), part("t", 1, 1, [1, 2, 0])])
    (f,) = check_findings(spark, replication.under_replicated, snap)
    assert (f.subject.topic, f.subject.partition) == ("t", 0)
    assert f.severity is Severity.WARNING
    assert f.evidence["out_of_sync"] == "1,2"
    assert f.evidence["isr_size"] == 1 and f.evidence["rf"] == 3


def test_under_min_isr_counts_leaderless_partitions_like_kafka_topics(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[
            part("t", 0, 0, [0, 1, 2], [0]),  # 1 < 2
            part("t", 1, None, [0, 1, 2], [0, 1]),  # no leader: Kafka lists it too
            part("t", 2, 0, [0, 1, 2], [0, 1]),  # at min ISR, not under
        ]
    )
    found = check_findings(spark, replication.under_min_isr, snap)
    assert partitions_of(found, "under_min_isr") == {("t", 0), ("t", 1)}
    assert all(f.severity is Severity.CRITICAL for f in found)


def test_under_min_isr_is_not_judged_without_the_topic_config(spark: SparkSession) -> None:
    snap = snapshot(partitions=[part("t", 0, 0, [0, 1, 2], [0])], configs=[])
    assert check_findings(spark, replication.under_min_isr, snap) == []


def test_at_min_isr_warns_only_when_a_replica_is_out(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[
            part("lost", 0, 0, [0, 1, 2], [0, 1]),  # RF 3, ISR 2 = min ISR 2: warning
            part("tight", 0, 0, [0, 1], [0, 1]),  # RF 2 = min ISR 2, fully in sync: info
        ]
    )
    found = {f.subject.topic: f for f in check_findings(spark, replication.at_min_isr, snap)}
    assert found["lost"].severity is Severity.WARNING
    assert found["tight"].severity is Severity.INFO
    assert found["lost"].remediation == "restore broker(s) 2 to the ISR"


def test_min_isr_comes_from_each_topics_config(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[part("a", 0, 0, [0, 1, 2], [0, 1]), part("b", 0, 0, [0, 1, 2], [0, 1])],
        configs=[config("a", min_isr=3), config("b", min_isr=2)],
    )
    found = check_findings(spark, replication.under_min_isr, snap)
    assert partitions_of(found, "under_min_isr") == {("a", 0)}
    assert by_check(found, "under_min_isr")[0].evidence["min_isr"] == 3
