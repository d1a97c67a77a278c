"""The numbers behind a report's plots: per-broker load, lag over time, disk over time.

Computed in Spark beside the checks (the same frames) and kept small: per broker, and per
group only for the groups with the most lag.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import functions as F

from kafka_health.models.findings import BrokerSummary, DiagnosisSummary, SeriesPoint
from kafka_health_spark.checks.disk import disk_now
from kafka_health_spark.frames import Frames

TOP_GROUPS = 8


def _ts(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1e6, tz=UTC)


def summarize(frames: Frames) -> DiagnosisSummary:
    """Collect the summary: two Spark jobs (the per-broker table with the cluster's totals as one
    more row; the lag and disk series together), where six separate actions cost four more
    jobs' fixed overhead (~0.1 s each on 2 cores) every cycle."""
    p = frames.partitions
    hosted = (
        p.select(F.explode("replicas").alias("broker"))
        .groupBy("broker")
        .agg(F.count(F.lit(1)).alias("partitions"))
    )
    led = (
        p.where(F.col("leader").isNotNull())
        .groupBy(F.col("leader").alias("broker"))
        .agg(F.count(F.lit(1)).alias("leaders"))
    )
    preferred = (
        p.where(F.size("replicas") > 0)
        .groupBy(F.element_at("replicas", 1).alias("broker"))
        .agg(F.count(F.lit(1)).alias("preferred_leaders"))
    )
    disk = disk_now(frames).select("broker", "used_bytes", "total_bytes", "usable_bytes")
    ids = (
        frames.brokers.select("broker")
        .unionByName(hosted.select("broker"))
        .unionByName(disk.select("broker"))
        .distinct()
    )
    brokers = (
        ids.join(frames.brokers.select("broker", "alive"), "broker", "left")
        .join(hosted, "broker", "left")
        .join(led, "broker", "left")
        .join(preferred, "broker", "left")
        .join(disk, "broker", "left")
        .fillna(0, subset=["partitions", "leaders", "preferred_leaders"])
        .withColumn("row", F.lit("broker"))
    )
    totals = p.agg(
        F.countDistinct("topic").alias("topics"), F.count(F.lit(1)).alias("partition_count")
    ).unionByName(frames.groups.agg(F.count(F.lit(1)).alias("group_count")), allowMissingColumns=True)
    table = brokers.unionByName(totals.withColumn("row", F.lit("totals")), allowMissingColumns=True)

    lag = (
        frames.group_offset_samples.where(F.col("committed_offset").isNotNull())
        .groupBy("group_id", "ts")
        .agg(F.sum(F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0))).alias("lag"))
    )
    top = (
        lag.where(F.col("ts") == frames.now_col)
        .orderBy(F.col("lag").desc(), "group_id")
        .limit(TOP_GROUPS)
        .select("group_id")
    )
    series = (
        lag.join(top, "group_id")
        .select(
            F.lit("lag").alias("series"),
            F.col("group_id").alias("key"),
            F.unix_micros("ts").alias("us"),
            F.col("lag").cast("double").alias("value"),
        )
        .unionByName(
            frames.broker_samples.where(F.col("used_bytes").isNotNull()).select(
                F.lit("disk").alias("series"),
                F.col("broker").cast("string").alias("key"),
                F.unix_micros("ts").alias("us"),
                F.col("used_bytes").cast("double").alias("value"),
            )
        )
    )
    rows = table.collect()
    points = series.collect()
    broker_rows = sorted((r for r in rows if r["row"] == "broker"), key=lambda r: r["broker"])
    topics = sum(int(r["topics"] or 0) for r in rows if r["row"] == "totals")
    partitions = sum(int(r["partition_count"] or 0) for r in rows if r["row"] == "totals")
    groups = sum(int(r["group_count"] or 0) for r in rows if r["row"] == "totals")

    def points_of(name: str) -> list[SeriesPoint]:
        return sorted(
            (
                SeriesPoint(ts=_ts(r["us"]), key=r["key"], value=float(r["value"]))
                for r in points
                if r["series"] == name
            ),
            key=lambda s: (s.key, s.ts),
        )

    return DiagnosisSummary(
        topics=topics,
        partitions=partitions,
        groups=groups,
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
        lag=points_of("lag"),
        disk_used_bytes=points_of("disk"),
    )
