"""Real faults on the real testbed, diagnosed end to end (collect → Spark), checked against Kafka's tools.

One test per check family, each fault caused for real: a stopped broker (replication, quorum),
a bounced broker (leadership), a paused consumer while producing (lag), topic configs altered
with kafka-configs and an RF-1 topic (durability).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health._kits.waiting import wait_for
from kafka_health.diagnose import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Diagnosis, Severity, SubjectKind
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.faults import create_topic
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import (
    describe_all,
    describe_list,
    group_lag,
    produce,
    snapshot_of,
    topic_configs,
)
from tests.spark.builders import partitions_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def diagnose(
    spark: SparkSession, bootstrap: str, history: Path | None = None, **overrides: object
) -> Diagnosis:
    return run_diagnosis(snapshot_of(bootstrap), history, Thresholds().with_overrides(overrides), spark)


def survivors(testbed: Testbed, down: int) -> str:
    return ",".join(f"127.0.0.1:{b.port}" for b in testbed.require().brokers if b.id != down)


def test_stopped_broker_lists_equal_kafka_topics(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession
) -> None:
    create_topic(bootstrap, unique_name, partitions=6)
    rf1 = f"{unique_name}-rf1"
    create_topic(bootstrap, rf1, assignment=[[1], [1]])  # lives only on broker 1
    kafka.stop(1)
    alive = survivors(kafka, 1)
    wait_for(
        lambda: (
            {tp for tp in faults.under_replicated(alive) if tp[0] == unique_name}
            == {(unique_name, p) for p in range(6)}
        ),
        timeout=60,
        what="every partition of the topic under-replicated",
    )
    flags = {
        "under_replicated": "--under-replicated-partitions",
        "under_min_isr": "--under-min-isr-partitions",
        "offline_partition": "--unavailable-partitions",
        "at_min_isr": "--at-min-isr-partitions",
    }

    def stable() -> tuple[Diagnosis, dict[str, set[tuple[str, int]]]] | None:
        before = {check: describe_list(kafka, flag) for check, flag in flags.items()}
        d = diagnose(spark, alive, quorum_caught_up_seconds=5)
        after = {check: describe_list(kafka, flag) for check, flag in flags.items()}
        return (d, after) if before == after else None

    d, tool = wait_for(stable, timeout=120, interval=1, what="the same lists from Kafka twice in a row")
    for check in flags:
        assert partitions_of(d.findings, check) == tool[check], check
    # The fault is visible in every list, not only as equal empty sets.
    assert {(rf1, 0), (rf1, 1)} <= tool["offline_partition"]
    assert {(unique_name, p) for p in range(6)} <= tool["under_replicated"] & tool["at_min_isr"]

    missing = [f for f in d.findings if f.check == "broker_missing"]
    assert [(f.subject.broker, f.severity) for f in missing] == [(1, Severity.CRITICAL)]
    # Broker 1 is also a KRaft voter: the quorum sees it fall behind.
    wait_for(
        lambda: any(
            f.check == "quorum_voter_lagging" and f.subject.broker == 1
            for f in diagnose(spark, alive, quorum_caught_up_seconds=5).findings
        ),
        timeout=60,
        interval=2,
        what="voter 1 reported as lagging",
    )
    assert d.exit_code() == 4


def test_bounced_broker_leaves_leaders_off_preferred_as_kafka_topics_shows(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession
) -> None:
    create_topic(bootstrap, unique_name, partitions=6)
    kafka.stop(2)
    wait_for(
        lambda: all(
            leader != 2 for (topic, _), (leader, _) in describe_all(kafka).items() if topic == unique_name
        ),
        timeout=60,
        what="leadership moved off broker 2",
    )
    faults.heal(
        kafka, restore_leaders=False
    )  # broker 2 back in every ISR, (auto rebalance off) leading nothing
    try:
        d = diagnose(spark, bootstrap)
        tool = describe_all(kafka)
        preferred = [tp for tp, (_, replicas) in tool.items() if replicas[0] == 2]
        not_led = [tp for tp in preferred if tool[tp][0] != 2]
        assert len(not_led) >= 2  # the new topic alone puts two preferred partitions on broker 2

        (imbalance,) = [f for f in d.findings if f.check == "leader_imbalance" and f.subject.broker == 2]
        assert imbalance.evidence["preferred_partitions"] == len(preferred)
        assert imbalance.evidence["not_led_by_preferred"] == len(not_led)
        assert imbalance.evidence["electable"] == len(not_led)  # all back in sync
        assert imbalance.remediation == "preferred_leader_election"
        (skew,) = [f for f in d.findings if f.check == "leader_skew"]
        assert skew.evidence["min_broker"] == 2
    finally:
        out = kafka.tool("kafka-leader-election", ["--election-type", "PREFERRED", "--all-topic-partitions"])
        assert out.returncode == 0, out.stderr


def test_paused_consumer_lag_equals_kafka_consumer_groups(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = group = unique_name
    create_topic(bootstrap, topic, partitions=3)
    produce(bootstrap, topic, {p: 20 for p in range(3)})
    consumer = faults.member_that_committed(bootstrap, group, topic, 30)
    try:
        consumer.pause(consumer.assignment())  # still a member, consuming nothing

        # History: a few cycles while producers keep writing and the group stays put.
        store = HistoryStore(tmp_path)
        for i in range(3):
            produce(bootstrap, topic, {p: 5 + i for p in range(3)})
            consumer.poll(0.1)  # a paused consumer still serves its group membership
            store.append(snapshot_of(bootstrap))
            time.sleep(1)
        produce(bootstrap, topic, {p: 7 for p in range(3)})
        consumer.poll(0.1)

        d = diagnose(spark, bootstrap, tmp_path)
        tool = group_lag(kafka, group)
    finally:
        consumer.close()

    lagging = {
        (f.subject.topic, f.subject.partition): f
        for f in d.findings
        if f.check == "consumer_lag" and f.subject.kind is SubjectKind.PARTITION and f.subject.group == group
    }
    assert {tp: f.evidence["lag"] for tp, f in lagging.items()} == {
        tp: lag for tp, lag in tool.items() if lag
    }
    assert {f.evidence["status"] for f in lagging.values()} == {"STALL"}  # members present, offsets frozen
    assert all(f.evidence["samples"] == 4 for f in lagging.values())
    (summary,) = [  # this group's: earlier tests on the session's cluster may leave lagging groups
        f
        for f in d.findings
        if f.check == "consumer_lag" and f.subject.kind is SubjectKind.GROUP and f.subject.group == group
    ]
    assert summary.evidence["total_lag"] == sum(lag or 0 for lag in tool.values())


def test_topic_configs_altered_with_kafka_configs(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession
) -> None:
    weak, tight = f"{unique_name}-weak", f"{unique_name}-tight"
    create_topic(bootstrap, weak, partitions=1)
    create_topic(bootstrap, tight, partitions=1)
    for topic, configs in (
        (weak, "min.insync.replicas=1,unclean.leader.election.enable=true"),
        (tight, "min.insync.replicas=3"),
    ):
        out = kafka.tool(
            "kafka-configs",
            ["--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", configs],
        )
        assert out.returncode == 0, out.stderr
    wait_for(
        lambda: topic_configs(kafka, tight).get("min.insync.replicas") == "3",
        timeout=30,
        what="the altered configs visible",
    )
    d = diagnose(spark, bootstrap)
    found = {(f.check, f.subject.topic): f for f in d.findings if f.subject.topic in (weak, tight)}
    assert set(found) == {
        ("low_min_isr", weak),
        ("unclean_leader_election", weak),
        ("min_isr_too_high", tight),
        ("at_min_isr", tight),  # ISR 3 = min ISR 3 by configuration (info)
    }
    assert found[("low_min_isr", weak)].evidence["min_insync_replicas"] == int(
        topic_configs(kafka, weak)["min.insync.replicas"]
    )
    assert found[("min_isr_too_high", tight)].severity is Severity.WARNING  # == RF: a restart blocks writes
    assert found[("at_min_isr", tight)].severity is Severity.INFO


def test_rf1_topic_is_a_durability_risk(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession
) -> None:
    create_topic(bootstrap, unique_name, partitions=2, rf=1)
    out = kafka.tool("kafka-topics", ["--describe", "--topic", unique_name])
    assert "ReplicationFactor: 1" in out.stdout
    d = diagnose(spark, bootstrap)
    found = {
        f.check: f
        for f in d.findings
        if f.subject.topic == unique_name and f.subject.kind is SubjectKind.TOPIC
    }
    assert set(found) == {"low_replication_factor", "min_isr_too_high"}
    assert found["low_replication_factor"].evidence["replication_factor"] == 1
    # The cluster default min.insync.replicas=2 exceeds RF 1: acks=all writes can never succeed.
    assert found["min_isr_too_high"].severity is Severity.CRITICAL


def test_stopped_broker_is_one_critical_incident_with_kafkas_under_replicated_partitions(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession
) -> None:
    """Issue 13: one stopped broker → exactly one critical incident, naming it, whose partitions
    are Kafka's own `kafka-topics --describe --under-replicated-partitions`, and which names the
    consumer group reading them; every finding of the diagnosis is in exactly one incident."""
    topic = group = unique_name
    create_topic(bootstrap, topic, partitions=6)
    produce(bootstrap, topic, {p: 10 for p in range(6)})
    faults.member_that_committed(bootstrap, group, topic, 60).close()  # committed offsets, no member
    kafka.stop(2)
    alive = survivors(kafka, 2)
    wait_for(
        lambda: (
            {tp for tp in faults.under_replicated(alive) if tp[0] == topic} == {(topic, p) for p in range(6)}
        ),
        timeout=60,
        what="every partition of the topic under-replicated",
    )

    def stable() -> tuple[Diagnosis, set[tuple[str, int]]] | None:
        before = describe_list(kafka, "--under-replicated-partitions")
        d = diagnose(spark, alive)
        after = describe_list(kafka, "--under-replicated-partitions")
        return (d, after) if before == after else None

    d, urp = wait_for(stable, timeout=120, interval=1, what="the same URP list from Kafka twice in a row")
    assert {(topic, p) for p in range(6)} <= urp  # the fault is in Kafka's list, not two empty sets

    critical = [i for i in d.incidents if i.severity is Severity.CRITICAL]
    assert [i.id for i in critical] == ["broker_down:2"], [(i.id, i.title) for i in d.incidents]
    (incident,) = critical
    assert incident.subject.broker == 2
    assert incident.title.startswith("Broker 2 is fenced")
    assert {(p.topic, p.partition) for p in incident.partitions} == urp
    assert incident.partitions_total == len(urp) and incident.evidence["offline"] == 0
    assert group in incident.groups
    # Its members: the broker itself and every under-replicated partition finding.
    assert {f.check for f in incident.findings} >= {"broker_missing", "under_replicated"}
    assert partitions_of(incident.findings, "under_replicated") == partitions_of(
        d.findings, "under_replicated"
    )
    # Nothing lost, nothing counted twice.
    assert sum(len(i.findings) for i in d.incidents) == len(d.findings)
    assert sorted(f.model_dump_json() for i in d.incidents for f in i.findings) == sorted(
        f.model_dump_json() for f in d.findings
    )
    assert len(d.findings) > len(urp) > len(d.incidents)  # the rows an operator reads shrink
