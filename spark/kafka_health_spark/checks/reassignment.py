"""Partition reassignments in flight, and replication throttles left behind.

- `partition_reassigning` (info): a partition whose replicas are being moved
  (ListPartitionReassignments, as `kafka-reassign-partitions --verify` and Cruise Control's or
  Strimzi's rebalances make them). The replicas it adds are out of the ISR on purpose until they
  have caught up: the replication checks name the reassignment as their cause (`reassigning`
  evidence) and the incident `reassignment:cluster` gathers them, instead of a broker "out of
  sync" that needs no fixing.
- `replication_throttle_left` (warning): a topic that keeps `leader.replication.throttled.replicas`
  or `follower.replication.throttled.replicas` while none of its partitions is being reassigned.
  `kafka-reassign-partitions --verify` removes a reassignment's throttles once it sees it
  complete; when nobody runs it they stay, and the throttled replicas then catch up at the
  brokers' throttle rate every time they fall behind (after any restart): slow recoveries weeks
  later. Not judged when the reassignments could not be read (`diagnose.missing.UNJUDGED`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check, id_list
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

THROTTLE_KEYS = "leader.replication.throttled.replicas,follower.replication.throttled.replicas"


def throttled(config: Column, partition: Column, brokers: Column) -> Column:
    """Whether a `*.replication.throttled.replicas` value ("*", or "partition:broker,...") covers
    one of `brokers`' replicas of `partition`."""
    entries = F.split(F.coalesce(config, F.lit("")), ",")
    return (config == "*") | F.exists(
        brokers,
        lambda b: F.array_contains(entries, F.concat_ws(":", partition.cast("string"), b.cast("string"))),
    )


def partition_reassigning(frames: Frames, t: Thresholds) -> DataFrame:
    """Each partition being reassigned, with how far its new replicas are."""
    moves = frames.reassignments.select("topic", "partition", "adding", "removing")
    state = frames.partitions.select("topic", "partition", "replicas", "isr")
    configs = frames.topic_configs.select(
        "topic", F.col("follower_replication_throttled_replicas").alias("thr")
    )
    df = (
        frames.join(
            frames.join(state, frames.small_side(moves), ["topic", "partition"]), configs, "topic", "left"
        )
        .withColumn("added_in_sync", F.size(F.array_intersect("adding", "isr")))
        .withColumn("throttled", throttled(F.col("thr"), F.col("partition"), F.col("adding")))
    )
    return finding_rows(
        df,
        check="partition_reassigning",
        severity=Severity.INFO,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=F.format_string(
            "%s-%d is being reassigned: adding broker(s) %s (%d of %d in sync), removing broker(s) %s%s.",
            "topic",
            "partition",
            id_list(F.col("adding")),
            "added_in_sync",
            F.size("adding"),
            id_list(F.col("removing")),
            F.when(F.col("throttled"), F.lit("; its new replicas are throttled")).otherwise(F.lit("")),
        ),
        evidence={
            "replicas": id_list(F.col("replicas")),
            "isr": id_list(F.col("isr")),
            "adding": id_list(F.col("adding")),
            "removing": id_list(F.col("removing")),
            "added_in_sync": F.col("added_in_sync"),
            "throttled": F.when(F.col("throttled"), F.lit("yes")).otherwise(F.lit("no")),
        },
        remediation=F.lit(
            "nothing to fix while it progresses: kafka-reassign-partitions --verify with its plan "
            "reports it and removes its throttles once complete (--cancel stops it)"
        ),
    )


def replication_throttle_left(frames: Frames, t: Thresholds) -> DataFrame:
    """Topics keeping replication throttles with no reassignment of theirs in flight."""
    moving = frames.reassignments.select("topic").distinct()
    kept = frames.topic_configs.where(
        F.col("leader_replication_throttled_replicas").isNotNull()
        | F.col("follower_replication_throttled_replicas").isNotNull()
    )
    df = frames.join(kept, moving, "topic", "left_anti")
    leader = F.coalesce(F.col("leader_replication_throttled_replicas"), F.lit("none"))
    follower = F.coalesce(F.col("follower_replication_throttled_replicas"), F.lit("none"))
    return finding_rows(
        df,
        check="replication_throttle_left",
        severity=Severity.WARNING,
        kind=SubjectKind.TOPIC,
        topic=F.col("topic"),
        message=F.format_string(
            "Topic %s keeps replication throttles with no reassignment in flight (leader: %s; "
            "follower: %s): its throttled replicas catch up at the brokers' throttle rate whenever "
            "they fall behind.",
            "topic",
            leader,
            follower,
        ),
        evidence={
            "leader_replication_throttled_replicas": leader,
            "follower_replication_throttled_replicas": follower,
        },
        remediation=F.format_string(
            "kafka-configs --entity-type topics --entity-name %s --alter --delete-config %s "
            "(and, on brokers whose leader/follower.replication.throttled.rate is set: "
            "kafka-configs --entity-type brokers --entity-name <id> --alter --delete-config "
            "leader.replication.throttled.rate,follower.replication.throttled.rate)",
            "topic",
            F.lit(THROTTLE_KEYS),
        ),
    )


CHECKS: list[Check] = [partition_reassigning, replication_throttle_left]
