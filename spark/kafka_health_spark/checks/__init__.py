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


def all_checks() -> list[Check]:
    """Every check, in the order a reader meets them in docs/diagnostics.md."""
    from kafka_health_spark.checks import (
        disk,
        durability,
        flapping,
        lag,
        leadership,
        quorum,
        rebalance,
        replication,
    )

    return [
        *replication.CHECKS,
        *leadership.CHECKS,
        *flapping.CHECKS,
        *lag.CHECKS,
        *rebalance.CHECKS,
        *disk.CHECKS,
        *durability.CHECKS,
        *quorum.CHECKS,
    ]
