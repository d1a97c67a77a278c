"""Durability risks in topic settings: what a single failure would cost, before it happens.

- replication factor below 3: one broker loss leaves no margin (RF 1: it loses data);
- min.insync.replicas below 2: acks=all is acknowledged by a single copy;
- min.insync.replicas ≥ RF: one broker down (or a restart) blocks every acks=all write; what a
  rolling restart does about it is the policy's choice (the operator adds it to the message)
  (above RF: such writes never succeed);
- unclean.leader.election.enable: an out-of-sync replica may become leader and drop committed data.
RF per topic is its largest replica set (partitions of one topic normally agree).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def _topics(frames: Frames) -> DataFrame:
    # Read by four checks: one pass over the partitions per cycle, not four.
    return frames.shared("durability.topics", _build_topics, materialize=True)


def _build_topics(frames: Frames) -> DataFrame:
    rf = frames.partitions.groupBy("topic").agg(
        F.max(F.size("replicas")).alias("rf"), F.count(F.lit(1)).alias("partitions")
    )
    with_configs = frames.join(rf, frames.topic_configs, "topic", "left")
    return with_configs.withColumnRenamed("min_insync_replicas", "min_isr")


def _evidence() -> dict[str, F.Column]:
    return {
        "replication_factor": F.col("rf"),
        "min_insync_replicas": F.col("min_isr"),
        "partitions": F.col("partitions"),
    }


def low_replication_factor(frames: Frames, t: Thresholds) -> DataFrame:
    df = _topics(frames).where(F.col("rf") < t.min_replication_factor)
    return finding_rows(
        df,
        check="low_replication_factor",
        severity=Severity.WARNING,
        kind=SubjectKind.TOPIC,
        topic=F.col("topic"),
        message=F.format_string(
            "Topic %s has replication factor %d (< %d): %s",
            "topic",
            "rf",
            F.lit(t.min_replication_factor),
            F.when(F.col("rf") <= 1, F.lit("losing one broker loses its data.")).otherwise(
                F.lit("one broker loss leaves no margin.")
            ),
        ),
        evidence=_evidence(),
        remediation=F.format_string(
            "raise the replication factor to %d with kafka-reassign-partitions",
            F.lit(t.min_replication_factor),
        ),
    )


def low_min_isr(frames: Frames, t: Thresholds) -> DataFrame:
    df = _topics(frames).where((F.col("min_isr") < t.min_insync_replicas) & (F.col("rf") > F.col("min_isr")))
    return finding_rows(
        df,
        check="low_min_isr",
        severity=Severity.WARNING,
        kind=SubjectKind.TOPIC,
        topic=F.col("topic"),
        message=F.format_string(
            "Topic %s has min.insync.replicas=%d: acks=all writes can be acknowledged by %d copy.",
            "topic",
            "min_isr",
            "min_isr",
        ),
        evidence=_evidence(),
        remediation=F.format_string(
            "set min.insync.replicas=%d on %s (kafka-configs --alter)", F.lit(t.min_insync_replicas), "topic"
        ),
    )


def min_isr_too_high(frames: Frames, t: Thresholds) -> DataFrame:
    df = _topics(frames).where(F.col("min_isr") >= F.col("rf"))
    return finding_rows(
        df,
        check="min_isr_too_high",
        severity=F.when(F.col("min_isr") > F.col("rf"), F.lit(Severity.CRITICAL.value)).otherwise(
            F.lit(Severity.WARNING.value)
        ),
        kind=SubjectKind.TOPIC,
        topic=F.col("topic"),
        message=F.format_string(
            "Topic %s has min.insync.replicas=%d with replication factor %d: %s",
            "topic",
            "min_isr",
            "rf",
            F.when(F.col("min_isr") > F.col("rf"), F.lit("acks=all writes can never succeed.")).otherwise(
                F.lit("while any of its brokers is down or restarting, acks=all writes to it fail.")
            ),
        ),
        evidence=_evidence(),
        remediation=F.format_string(
            "lower min.insync.replicas on %s below the replication factor, or raise the replication factor",
            "topic",
        ),
    )


def unclean_leader_election(frames: Frames, t: Thresholds) -> DataFrame:
    df = _topics(frames).where(F.col("unclean_leader_election_enable"))
    return finding_rows(
        df,
        check="unclean_leader_election",
        severity=Severity.WARNING,
        kind=SubjectKind.TOPIC,
        topic=F.col("topic"),
        message=F.format_string(
            "Topic %s allows unclean leader election: an out-of-sync replica may become leader and "
            "drop acknowledged writes.",
            "topic",
        ),
        evidence={**_evidence(), "unclean_leader_election_enable": F.lit(1)},
        remediation=F.format_string(
            "set unclean.leader.election.enable=false on %s unless availability beats durability there",
            "topic",
        ),
    )


CHECKS: list[Check] = [low_replication_factor, low_min_isr, min_isr_too_high, unclean_leader_election]
