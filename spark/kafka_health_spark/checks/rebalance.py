"""Rebalance storms: consumer groups that keep rebalancing instead of consuming.

A sample counts as a rebalance when the group is in PreparingRebalance or CompletingRebalance,
or its member set differs from the previous sample's (a rebalance finished between samples).
A group rebalancing in many samples of the window stops and restarts its consumption over and
over, and its lag grows: typically processing slower than max.poll.interval.ms, consumers
crashing or being redeployed in a loop, or an unstable network.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance")


def rebalance_storm(frames: Frames, t: Thresholds) -> DataFrame:
    """Groups seen rebalancing in at least `rebalance_storm_samples` samples and
    `rebalance_storm_fraction` of the window's samples."""
    w = Window.partitionBy("group_id").orderBy("ts")
    samples = frames.group_samples.withColumn("prev_hash", F.lag("member_hash").over(w)).withColumn(
        "rebalancing",
        F.col("state").isin(*REBALANCING_STATES)
        | (F.col("prev_hash").isNotNull() & (F.col("member_hash") != F.col("prev_hash"))),
    )
    per_group = samples.groupBy("group_id").agg(
        F.count(F.lit(1)).alias("samples"),
        F.sum(F.col("rebalancing").cast("int")).alias("rebalancing"),
        F.sum(F.col("state").isin(*REBALANCING_STATES).cast("int")).alias("in_rebalance_state"),
        F.max_by("state", "ts").alias("state"),
        F.max_by("members", "ts").alias("members"),
    )
    current = frames.groups.select("group_id")
    df = (
        frames.join(per_group, current, "group_id")
        .withColumn("fraction", F.col("rebalancing") / F.col("samples"))
        .where(
            (F.col("rebalancing") >= t.rebalance_storm_samples)
            & (F.col("fraction") >= t.rebalance_storm_fraction)
        )
    )
    return finding_rows(
        df,
        check="rebalance_storm",
        severity=Severity.WARNING,
        kind=SubjectKind.GROUP,
        group=F.col("group_id"),
        message=F.format_string(
            "Group %s was rebalancing in %d of %d samples over the last %.0f minutes (now %s, %d members).",
            "group_id",
            "rebalancing",
            "samples",
            F.lit(t.window_minutes),
            "state",
            "members",
        ),
        evidence={
            "rebalancing_samples": F.col("rebalancing"),
            "in_rebalance_state": F.col("in_rebalance_state"),
            "samples": F.col("samples"),
            "fraction": F.round("fraction", 3),
            "state": F.col("state"),
            "members": F.col("members"),
        },
        remediation=F.lit(
            "raise max.poll.interval.ms / session.timeout.ms or lower max.poll.records; "
            "use the cooperative-sticky assignor or static membership (group.instance.id)"
        ),
    )


CHECKS: list[Check] = [rebalance_storm]
