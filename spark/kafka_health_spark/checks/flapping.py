"""Instability over the window: partitions whose leader keeps changing, brokers that keep
dropping out of ISRs.

One leader move after a restart is routine; clients refresh metadata and carry on. Leadership
that moves again and again keeps clients' metadata stale (sustained NotLeaderOrFollower
errors), and the usual cause is one broker repeatedly leaving and rejoining ISRs: a slow disk,
GC pauses, a flaky network. Both are read from the history's `partition_state` change log.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import ROLLING_RESTART, finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def _transitions(frames: Frames) -> DataFrame:
    """Each partition_state record of the window beside the one before it (computed once per
    cycle: both checks read it; the operator keeps it in memory between cycles)."""
    return frames.shared("flapping.transitions", lambda f: f.partition_transitions, materialize=True)


def leader_flapping(frames: Frames, t: Thresholds) -> DataFrame:
    """Partitions whose leader changed at least `leader_flapping_changes` times in the window."""
    changes = _transitions(frames).where(~F.col("leader").eqNullSafe(F.col("prev_leader")))
    df = (
        changes.groupBy("topic", "partition")
        .agg(
            F.count(F.lit(1)).alias("changes"),
            F.array_join(
                F.sort_array(F.collect_set(F.coalesce(F.col("leader").cast("string"), F.lit("none")))), ","
            ).alias("leaders"),
            F.min("ts").alias("first_change"),
            F.max("ts").alias("last_change"),
        )
        .where(F.col("changes") >= t.leader_flapping_changes)
    )
    return finding_rows(
        df,
        check="leader_flapping",
        severity=Severity.WARNING,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=F.format_string(
            "%s-%d changed leader %d times in the last %.0f minutes (leaders: %s).",
            "topic",
            "partition",
            "changes",
            F.lit(t.window_minutes),
            "leaders",
        ),
        evidence={
            "leader_changes": F.col("changes"),
            "leaders": F.col("leaders"),
            "window_minutes": F.lit(t.window_minutes),
            "first_change": F.date_format("first_change", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
            "last_change": F.date_format("last_change", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
        },
        remediation=F.lit("find the unstable broker among its replicas (see isr_churn findings)"),
    )


def isr_churn(frames: Frames, t: Thresholds) -> DataFrame:
    """Brokers that dropped out of ISRs at `isr_churn_episodes` or more separate samples."""
    tr = _transitions(frames)
    # A shrink: the broker left the ISR while staying assigned (a reassignment is not churn).
    shrinks = tr.select(
        "ts", "topic", "partition", "replicas", F.explode(F.array_except("prev_isr", "isr")).alias("broker")
    ).where(F.array_contains("replicas", F.col("broker")))
    expands = tr.select(F.explode(F.array_except("isr", "prev_isr")).alias("broker"))
    shrink_stats = shrinks.groupBy("broker").agg(
        F.countDistinct("ts").alias("episodes"),
        F.count(F.lit(1)).alias("shrinks"),
        F.countDistinct("topic", "partition").alias("partitions"),
    )
    expand_stats = expands.groupBy("broker").agg(F.count(F.lit(1)).alias("expands"))
    df = frames.join(
        shrink_stats.where(F.col("episodes") >= t.isr_churn_episodes), expand_stats, "broker", "left"
    ).fillna(0, subset=["expands"])
    return finding_rows(
        df,
        check="isr_churn",
        severity=Severity.WARNING,
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string(
            "Broker %d dropped out of ISRs at %d separate times in the last %.0f minutes "
            "(%d shrinks, %d expands over %d partitions): a flapping broker.",
            "broker",
            "episodes",
            F.lit(t.window_minutes),
            "shrinks",
            "expands",
            "partitions",
        ),
        evidence={
            "episodes": F.col("episodes"),
            "isr_shrinks": F.col("shrinks"),
            "isr_expands": F.col("expands"),
            "partitions": F.col("partitions"),
            "window_minutes": F.lit(t.window_minutes),
        },
        remediation=F.lit(ROLLING_RESTART),
    )


CHECKS: list[Check] = [leader_flapping, isr_churn]
