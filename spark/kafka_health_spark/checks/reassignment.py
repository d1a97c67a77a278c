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


def _progress(frames: Frames, t: Thresholds) -> DataFrame:
    """Per partition being reassigned: what its new replicas still have to copy (`left_bytes`,
    where their sizes were read), the share copied (`copied_percent`, of the leader's size), when
    the last of them catches up at the rate its lag shrinks (`eta_seconds`: only when every one
    behind is shrinking), and the lowest follower throttle rate set on them (`rate`)."""
    from kafka_health_spark.checks.behind import replica_trend  # (behind imports `throttled`)

    adding = frames.reassignments.select("topic", "partition", F.explode("adding").alias("broker"))
    rates = frames.broker_throttles.select("broker", F.col("follower_rate").alias("rate"))
    per = frames.join(adding, replica_trend(frames, t), ["topic", "partition", "broker"], "left")
    per = frames.join(per, rates, "broker", "left")
    return per.groupBy("topic", "partition").agg(
        F.sum("lag_bytes").alias("left_bytes"),
        F.max("leader_size_bytes").alias("_size"),
        F.count("lag_bytes").alias("_read"),
        F.when(
            F.min(F.col("lag_bytes").isNull() | F.col("eta_seconds").isNotNull() | (F.col("lag_bytes") == 0)),
            F.max("eta_seconds"),
        ).alias("eta_seconds"),
        F.min("rate").alias("rate"),
        # A new replica behind whose lag has not shrunk over `replica_stuck_minutes`: the move
        # makes no progress (a throttle too low for the load, a broker that cannot fetch).
        F.max(F.coalesce(F.col("aged") & ~F.col("shrank") & (F.col("lag_bytes") > 0), F.lit(False))).alias(
            "stalled"
        ),
    )


def _progress_words(t: Thresholds) -> tuple[Column, Column]:
    """A reassigning partition's progress ("… B left to copy (… % copied), ETA … s") and its
    throttle ("; its new replicas are throttled at … B/s"), in words."""
    progress = F.concat_ws(
        ", ",
        F.when(
            F.col("left_bytes").isNotNull(),
            F.format_string(
                "%d B left to copy (%.1f %% copied)", "left_bytes", F.coalesce("copied_percent", F.lit(0.0))
            ),
        ),
        F.when(F.col("eta_seconds").isNotNull(), F.format_string("ETA %d s", "eta_seconds")),
        F.when(
            F.col("stalled"),
            F.lit(f"no progress in {t.replica_stuck_minutes:g} min"),
        ),
    )
    throttle_words = F.when(
        F.col("throttled"),
        F.concat(
            F.lit("; its new replicas are throttled"),
            F.when(F.col("rate").isNotNull(), F.format_string(" at %d B/s", "rate")).otherwise(F.lit("")),
        ),
    ).otherwise(F.lit(""))
    return progress, throttle_words


def partition_reassigning(frames: Frames, t: Thresholds) -> DataFrame:
    """Each partition being reassigned, with how far its new replicas are: in sync, bytes left
    to copy, share copied, ETA, and the throttle they copy under."""
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
    df = frames.join(df, _progress(frames, t), ["topic", "partition"], "left").withColumn(
        "copied_percent",
        F.when(
            (F.col("_read") > 0) & (F.col("_size") > 0),
            F.round(100 * (1 - F.col("left_bytes") / (F.col("_size") * F.col("_read"))), 1),
        ),
    )
    progress, throttle_words = _progress_words(t)
    return finding_rows(
        df,
        check="partition_reassigning",
        severity=Severity.INFO,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=F.format_string(
            "%s-%d is being reassigned: adding broker(s) %s (%d of %d in sync%s), removing broker(s) %s%s.",
            "topic",
            "partition",
            id_list(F.col("adding")),
            "added_in_sync",
            F.size("adding"),
            F.when(progress != "", F.concat(F.lit("; "), progress)).otherwise(F.lit("")),
            id_list(F.col("removing")),
            throttle_words,
        ),
        evidence={
            "replicas": id_list(F.col("replicas")),
            "isr": id_list(F.col("isr")),
            "adding": id_list(F.col("adding")),
            "removing": id_list(F.col("removing")),
            "added_in_sync": F.col("added_in_sync"),
            "throttled": F.when(F.col("throttled"), F.lit("yes")).otherwise(F.lit("no")),
            "follower_throttle_rate": F.when(F.col("throttled"), F.col("rate")),
            "left_bytes": F.col("left_bytes"),
            "copied_percent": F.col("copied_percent"),
            "eta_seconds": F.col("eta_seconds"),
            "stalled": F.when(F.col("stalled"), F.lit("yes")).otherwise(F.lit("no")),
        },
        remediation=F.when(
            F.col("stalled"),
            F.lit(
                "it makes no progress: raise its throttle (kafka-reassign-partitions --execute --additional "
                "--throttle <bytes/s> with its plan) or check the new replicas' brokers (ReplicaFetcherThread "
                "errors, disk, network); --cancel stops it"
            ),
        ).otherwise(
            F.lit(
                "nothing to fix while it progresses: kafka-reassign-partitions --verify with its plan "
                "reports it and removes its throttles once complete (--cancel stops it)"
            )
        ),
    )


def replication_throttle_left(frames: Frames, t: Thresholds) -> DataFrame:
    """Topics keeping replication throttles with no reassignment of theirs in flight, and brokers
    keeping throttle rates with no reassignment in flight at all."""
    moving = frames.reassignments.select("topic").distinct()
    kept = frames.topic_configs.where(
        F.col("leader_replication_throttled_replicas").isNotNull()
        | F.col("follower_replication_throttled_replicas").isNotNull()
    )
    df = frames.join(kept, moving, "topic", "left_anti")
    leader = F.coalesce(F.col("leader_replication_throttled_replicas"), F.lit("none"))
    follower = F.coalesce(F.col("follower_replication_throttled_replicas"), F.lit("none"))
    topics = finding_rows(
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
    return topics.unionByName(_broker_throttle_left(frames))


def _broker_throttle_left(frames: Frames) -> DataFrame:
    """Brokers keeping a replication throttle rate with no reassignment in flight anywhere."""
    key = F.lit(1).alias("_k")
    rates = frames.broker_throttles.select("*", key)
    moving = frames.reassignments.agg(F.count(F.lit(1)).alias("_moving")).select("_moving", key)
    df = frames.join(rates, moving, "_k").where(F.col("_moving") == 0)
    leader = F.coalesce(F.col("leader_rate").cast("string"), F.lit("none"))
    follower = F.coalesce(F.col("follower_rate").cast("string"), F.lit("none"))
    keys = F.concat_ws(
        ",",
        F.when(F.col("leader_rate").isNotNull(), F.lit("leader.replication.throttled.rate")),
        F.when(F.col("follower_rate").isNotNull(), F.lit("follower.replication.throttled.rate")),
    )
    return finding_rows(
        df,
        check="replication_throttle_left",
        severity=Severity.WARNING,
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string(
            "Broker %d keeps replication throttle rates with no reassignment in flight (leader: %s B/s; "
            "follower: %s B/s): any replica a topic names as throttled copies at that rate.",
            "broker",
            leader,
            follower,
        ),
        evidence={
            "leader_replication_throttled_rate": leader,
            "follower_replication_throttled_rate": follower,
        },
        remediation=F.format_string(
            "kafka-configs --entity-type brokers --entity-name %d --alter --delete-config %s", "broker", keys
        ),
    )


CHECKS: list[Check] = [partition_reassigning, replication_throttle_left]
