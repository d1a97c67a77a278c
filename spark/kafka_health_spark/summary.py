"""The numbers behind a report's plots and the lag metric: per-broker load, lag over time, disk
over time, each group's lag in seconds per topic now.

Computed in Spark beside the checks (the same frames) and kept small: per broker, and per
group only for the groups with the most lag.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from kafka_health.models.findings import BrokerSummary, DiagnosisSummary, GroupTopicLag, SeriesPoint
from kafka_health_spark.checks import leadership_per_broker, replicas_per_broker
from kafka_health_spark.checks.disk import disk_now
from kafka_health_spark.checks.lag_time import lag_seconds
from kafka_health_spark.frames import Frames, Totals

TOP_GROUPS = 8
# The parts of the summary's one collect.
BROKERS, LAG, DISK, LAG_SECONDS = "brokers", "lag", "disk", "lag_seconds"


def _ts(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1e6, tz=UTC)


def summarize(frames: Frames) -> DiagnosisSummary:
    """Collect the summary in one query (the totals come from the snapshot itself)."""
    return summary_from(frames, summary_rows(frames).collect())


def summary_rows(frames: Frames) -> DataFrame:
    """The summary's one query: its three parts as one union of rows tagged with their part."""
    hosted = replicas_per_broker(frames).withColumnRenamed("replicas", "partitions")
    leadership = leadership_per_broker(frames).select(
        "broker", "leaders", F.col("preferred").alias("preferred_leaders")
    )
    disk = disk_now(frames).select("broker", "used_bytes", "total_bytes", "usable_bytes")
    ids = (
        frames.brokers.select("broker")
        .unionByName(hosted.select("broker"))
        .unionByName(disk.select("broker"))
        .distinct()
    )
    brokers = frames.join(ids, frames.brokers.select("broker", "alive"), "broker", "left")
    for part in (hosted, leadership, disk):
        brokers = frames.join(brokers, part, "broker", "left")
    brokers = brokers.fillna(0, subset=["partitions", "leaders", "preferred_leaders"])

    offsets = frames.group_offset_samples.where(F.col("committed_offset").isNotNull())

    def lag_per_group(samples: DataFrame) -> DataFrame:
        return samples.groupBy("group_id", "ts").agg(
            F.sum(F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0))).alias("lag")
        )

    # The groups with the most lag now, from the snapshot's own sample; then the series of those
    # groups only: the window's other rows are not summed (the window holds an hour of samples).
    top = (
        lag_per_group(offsets.where(F.col("ts") == frames.now_col))
        .orderBy(F.col("lag").desc(), "group_id")
        .limit(TOP_GROUPS)
        .select("group_id")
    )
    lag_series = lag_per_group(frames.join(offsets, top, "group_id", "left_semi")).select(
        F.lit(LAG).alias("part"),
        F.col("group_id").alias("key"),
        F.unix_micros("ts").alias("us"),
        F.col("lag").cast("double").alias("value"),
    )
    disk_series = frames.broker_samples.where(F.col("used_bytes").isNotNull()).select(
        F.lit(DISK).alias("part"),
        F.col("broker").cast("string").alias("key"),
        F.unix_micros("ts").alias("us"),
        F.col("used_bytes").cast("double").alias("value"),
    )
    # One collect (one Spark job) for the parts: each part's columns, null in the others'.
    return (
        brokers.select(F.lit(BROKERS).alias("part"), "*")
        .unionByName(lag_series, allowMissingColumns=True)
        .unionByName(disk_series, allowMissingColumns=True)
        .unionByName(_lag_seconds_now(frames, offsets), allowMissingColumns=True)
    )


def _lag_seconds_now(frames: Frames, offsets: DataFrame) -> DataFrame:
    """Each group's largest lag in seconds per topic now (the metric
    kafka_health_consumer_lag_seconds; per partition it is in the lag findings)."""
    samples = offsets.where(F.col("log_end_offset").isNotNull()).withColumn(
        "lag", F.col("log_end_offset") - F.col("committed_offset")
    )
    current = samples.where(F.col("ts") == frames.now_col)
    seconds = lag_seconds(samples, current, frames.now_col, frames.group_offsets).where(
        F.col("lag_seconds").isNotNull()
    )
    worst = seconds.groupBy("group_id", "topic").agg(
        F.max_by(F.struct("lag_seconds", "lag_seconds_lower_bound"), "lag_seconds").alias("worst")
    )
    return frames.join(worst, frames.groups.select("group_id", "kind"), "group_id", "left").select(
        F.lit(LAG_SECONDS).alias("part"),
        F.col("group_id").alias("key"),
        "topic",
        F.coalesce(F.col("kind"), F.lit("unknown")).alias("kind"),
        F.col("worst.lag_seconds").alias("value"),
        F.col("worst.lag_seconds_lower_bound").alias("lower_bound"),
    )


def summary_from(frames: Frames | Totals, rows: Sequence[Row]) -> DiagnosisSummary:
    """The summary from the rows of `summary_rows` (and the snapshot's totals: `frames`')."""
    broker_rows = sorted((r for r in rows if r["part"] == BROKERS), key=lambda r: r["broker"])
    lag_rows = [r for r in rows if r["part"] == LAG]
    disk_rows = [r for r in rows if r["part"] == DISK]
    lag_seconds_rows = [r for r in rows if r["part"] == LAG_SECONDS]
    return DiagnosisSummary(
        topics=frames.topic_count,
        partitions=frames.partition_count,
        groups=frames.group_count,
        brokers=[
            BrokerSummary(
                broker=r["broker"],
                alive=r["alive"],
                partitions=r["partitions"],
                leaders=r["leaders"],
                preferred_leaders=r["preferred_leaders"],
                used_bytes=r["used_bytes"],
                total_bytes=r["total_bytes"],
                usable_bytes=r["usable_bytes"],
            )
            for r in broker_rows
        ],
        lag=sorted(
            (SeriesPoint(ts=_ts(r["us"]), key=r["key"], value=r["value"]) for r in lag_rows),
            key=lambda s: (s.key, s.ts),
        ),
        disk_used_bytes=sorted(
            (SeriesPoint(ts=_ts(r["us"]), key=r["key"], value=r["value"]) for r in disk_rows),
            key=lambda s: (s.key, s.ts),
        ),
        lag_seconds=sorted(
            (
                GroupTopicLag(
                    group=r["key"],
                    topic=r["topic"],
                    kind=r["kind"],
                    seconds=r["value"],
                    lower_bound=bool(r["lower_bound"]),
                )
                for r in lag_seconds_rows
            ),
            key=lambda g: (g.group, g.topic),
        ),
    )
