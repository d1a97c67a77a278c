"""Disk per broker: how full it is, how soon it fills at the current growth rate, failed log dirs.

A full disk is the most common way to take a broker down, and it comes slowly: usage warns at
80 % and is critical at 90 % (defaults), and the growth rate over `disk_growth_window_hours`
(a least-squares slope of Kafka's used bytes over the history's broker samples) turns the free
space into a time-to-full. Sizes are summed over a broker's log dirs (one volume per log dir);
the percentage needs the volume size, which brokers report since KIP-827 (DescribeLogDirs v4:
total and usable bytes) — without it the broker is skipped, not guessed.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

_FREE_SPACE = "lower retention.ms / retention.bytes of the largest topics, or add disk or brokers"
GIB = 1024**3


def disk_now(frames: Frames) -> DataFrame:
    """Per broker now: Kafka's bytes, the volume size, the free bytes, and how full the volume is.

    Fullness is (total - usable) / total when the broker reports usable bytes: the volume fills
    with anything written to it, not only Kafka's logs. Without usable bytes, Kafka's share
    (used / total) is the best estimate.
    """
    per_dir = F.count(F.lit(1))
    return (
        frames.log_dirs.where(F.col("error").isNull() | (F.upper("error") == "NONE"))
        .groupBy("broker")
        .agg(
            F.sum("used_bytes").alias("used_bytes"),
            F.when(F.count("total_bytes") == per_dir, F.sum("total_bytes")).alias("total_bytes"),
            F.when(F.count("usable_bytes") == per_dir, F.sum("usable_bytes")).alias("usable_bytes"),
        )
        .where(F.col("total_bytes") > 0)
        .withColumn(
            "percent",
            F.coalesce(
                (F.col("total_bytes") - F.col("usable_bytes")) * 100.0 / F.col("total_bytes"),
                F.col("used_bytes") * 100.0 / F.col("total_bytes"),
            ),
        )
        .withColumn(
            "free_bytes",
            F.coalesce(F.col("usable_bytes"), F.col("total_bytes") - F.col("used_bytes")),
        )
        .where(F.col("percent").isNotNull())
    )


def disk_usage(frames: Frames, t: Thresholds) -> DataFrame:
    """Brokers whose log-dir volumes are at least `disk_warn_percent` full."""
    df = disk_now(frames).where(F.col("percent") >= t.disk_warn_percent)
    return finding_rows(
        df,
        check="disk_usage",
        severity=F.when(
            F.col("percent") >= t.disk_critical_percent, F.lit(Severity.CRITICAL.value)
        ).otherwise(F.lit(Severity.WARNING.value)),
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string(
            "Broker %d's log-dir volumes are %.1f%% full (%.1f GiB free of %.1f GiB; Kafka's logs: %.1f GiB).",
            "broker",
            "percent",
            F.col("free_bytes") / GIB,
            F.col("total_bytes") / GIB,
            F.coalesce(F.col("used_bytes"), F.lit(0)) / GIB,
        ),
        evidence={
            "used_bytes": F.col("used_bytes"),
            "total_bytes": F.col("total_bytes"),
            "usable_bytes": F.col("usable_bytes"),
            "percent": F.round("percent", 2),
            "warn_percent": F.lit(t.disk_warn_percent),
            "critical_percent": F.lit(t.disk_critical_percent),
        },
        remediation=F.lit(_FREE_SPACE),
    )


def disk_time_to_full(frames: Frames, t: Thresholds) -> DataFrame:
    """Brokers whose disks fill within `disk_full_warn_hours` at the growth rate of the window."""
    seconds = (F.unix_micros("ts") - F.unix_micros(frames.now_col)) / F.lit(1e6)
    growth = (
        frames.broker_samples.where(F.col("used_bytes").isNotNull())
        .groupBy("broker")
        .agg(
            F.regr_slope(F.col("used_bytes").cast("double"), seconds).alias("bytes_per_second"),
            F.count(F.lit(1)).alias("samples"),
            ((F.max(F.unix_micros("ts")) - F.min(F.unix_micros("ts"))) / F.lit(3.6e9)).alias("span_hours"),
        )
        .where((F.col("samples") >= t.disk_min_samples) & (F.col("bytes_per_second") > 0))
    )
    df = (
        frames.join(disk_now(frames), growth, "broker")
        .withColumn(
            "hours_to_full",
            F.greatest(F.col("free_bytes"), F.lit(0)) / F.col("bytes_per_second") / 3600,
        )
        .where(F.col("hours_to_full") <= t.disk_full_warn_hours)
    )
    return finding_rows(
        df,
        check="disk_time_to_full",
        severity=F.when(
            F.col("hours_to_full") <= t.disk_full_critical_hours, F.lit(Severity.CRITICAL.value)
        ).otherwise(F.lit(Severity.WARNING.value)),
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string(
            "Broker %d's disks fill in about %.1f h at the last %.1f h's growth (%.1f MiB/min, %.1f%% used).",
            "broker",
            "hours_to_full",
            "span_hours",
            F.col("bytes_per_second") * 60 / (1024 * 1024),
            "percent",
        ),
        evidence={
            "hours_to_full": F.round("hours_to_full", 2),
            "bytes_per_second": F.round("bytes_per_second", 1),
            "free_bytes": F.col("free_bytes"),
            "total_bytes": F.col("total_bytes"),
            "samples": F.col("samples"),
            "span_hours": F.round("span_hours", 2),
        },
        remediation=F.lit(_FREE_SPACE),
    )


def log_dir_errors(frames: Frames, t: Thresholds) -> DataFrame:
    """Log dirs a broker reports as failed: the partitions on them are offline on that broker."""
    df = frames.log_dirs.where(
        F.col("error").isNotNull() & (F.trim("error") != "") & (F.upper("error") != "NONE")
    )
    return finding_rows(
        df,
        check="log_dir_error",
        severity=Severity.CRITICAL,
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string("Broker %d reports log dir %s as failed: %s.", "broker", "path", "error"),
        evidence={"path": F.col("path"), "error": F.col("error")},
        remediation=F.lit("replace or repair the disk, then restart the broker"),
    )


CHECKS: list[Check] = [disk_usage, disk_time_to_full, log_dir_errors]
