"""The checks, one module per rule family; each function takes `Frames` and `Thresholds` and
returns finding rows (see `kafka_health_spark.findings`). `ALL` is the list a diagnosis runs."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

Check = Callable[[Frames, Thresholds], DataFrame]


def id_list(col: Column) -> Column:
    """An array of broker ids as text, "1,2,3" ("none" when empty): readable in messages and
    JSON evidence alike."""
    return F.when(F.size(col) > 0, F.concat_ws(",", F.sort_array(col).cast("array<string>"))).otherwise(
        F.lit("none")
    )


def replicas_per_broker(frames: Frames) -> DataFrame:
    """How many replicas each broker is assigned (`broker`, `replicas`): read by `broker_missing`
    and the summary, so counted once per cycle."""
    return frames.shared(
        "replicas_per_broker",
        lambda f: (
            f.partitions.select(F.explode("replicas").alias("broker"))
            .groupBy("broker")
            .agg(F.count(F.lit(1)).alias("replicas"))
        ),
        materialize=True,
    )


def leadership_per_broker(frames: Frames) -> DataFrame:
    """Per broker (`broker`, `leaders`, `preferred`, `preferred_led`): the partitions it leads, the
    partitions whose preferred replica (the first listed) it is, and those of them that have a
    leader. Read by `leader_skew` and the summary, so counted in one pass over the partitions."""

    def build(f: Frames) -> DataFrame:
        preferred = F.when(F.size("replicas") > 0, F.element_at("replicas", 1))
        votes = f.partitions.select(
            F.explode(
                F.array(
                    F.struct(
                        F.col("leader").alias("broker"),
                        F.lit(1).alias("led"),
                        F.lit(0).alias("pref"),
                        F.lit(0).alias("pref_led"),
                    ),
                    F.struct(
                        preferred.alias("broker"),
                        F.lit(0).alias("led"),
                        F.lit(1).alias("pref"),
                        F.col("leader").isNotNull().cast("int").alias("pref_led"),
                    ),
                )
            ).alias("v")
        ).where(F.col("v.broker").isNotNull())
        return votes.groupBy("v.broker").agg(
            F.sum("v.led").alias("leaders"),
            F.sum("v.pref").alias("preferred"),
            F.sum("v.pref_led").alias("preferred_led"),
        )

    return frames.shared("leadership_per_broker", build, materialize=True)


def all_checks() -> list[Check]:
    """Every check, in the order a reader meets them in docs/diagnostics.md."""
    from kafka_health_spark.checks import (
        certificates,
        disk,
        durability,
        flapping,
        lag,
        leadership,
        quorum,
        reassignment,
        rebalance,
        reconciliation,
        replication,
        transactions,
    )

    return [
        *replication.CHECKS,
        *reassignment.CHECKS,
        *leadership.CHECKS,
        *flapping.CHECKS,
        *lag.CHECKS,
        *rebalance.CHECKS,
        *reconciliation.CHECKS,
        *disk.CHECKS,
        *durability.CHECKS,
        *quorum.CHECKS,
        *certificates.CHECKS,
        *transactions.CHECKS,
    ]
