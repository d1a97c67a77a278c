"""Where leadership sits: partitions led away from their preferred replica, and leader-count skew.

A partition's preferred leader is its first assigned replica. After a broker restart its
leaderships stay with the others until a preferred leader election moves them back (Kafka's
auto rebalance may be off, and in KRaft ignores the per-broker percentage), so load piles up
on fewer brokers. Imbalance is measured per broker as Kafka does: of the partitions the broker
should lead, the share led elsewhere.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check, leadership_per_broker
from kafka_health_spark.findings import PREFERRED_LEADER_ELECTION, finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def _alive(frames: Frames) -> DataFrame:
    return frames.brokers.where("alive").select("broker")


def leader_imbalance(frames: Frames, t: Thresholds) -> DataFrame:
    """Per live broker: the share of its preferred partitions that another broker leads."""
    online = frames.partitions.where(F.col("leader").isNotNull() & (F.size("replicas") > 0)).withColumn(
        "preferred", F.element_at("replicas", 1)
    )
    per_broker = online.groupBy(F.col("preferred").alias("broker")).agg(
        F.count(F.lit(1)).alias("preferred_partitions"),
        F.sum(F.when(F.col("leader") != F.col("preferred"), 1).otherwise(0)).alias("not_preferred"),
        # The election can only move leadership to a preferred replica that is in sync.
        F.sum(
            F.when(
                (F.col("leader") != F.col("preferred")) & F.array_contains("isr", F.col("preferred")), 1
            ).otherwise(0)
        ).alias("electable"),
    )
    # One row per broker on both sides (`per_broker` already partitioned by broker): a plain join.
    df = (
        frames.join(per_broker, _alive(frames), "broker")
        .withColumn("ratio", F.col("not_preferred") / F.col("preferred_partitions"))
        .where(F.col("ratio") > t.leader_imbalance_ratio)
    )
    return finding_rows(
        df,
        check="leader_imbalance",
        severity=Severity.WARNING,
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string(
            "Broker %d leads %d of its %d preferred partitions (%.0f%% led elsewhere, threshold %.0f%%).",
            "broker",
            F.col("preferred_partitions") - F.col("not_preferred"),
            "preferred_partitions",
            F.col("ratio") * 100,
            F.lit(t.leader_imbalance_ratio * 100),
        ),
        evidence={
            "preferred_partitions": F.col("preferred_partitions"),
            "not_led_by_preferred": F.col("not_preferred"),
            "electable": F.col("electable"),
            "imbalance_ratio": F.round("ratio", 4),
            "threshold": F.lit(t.leader_imbalance_ratio),
        },
        remediation=F.when(F.col("electable") > 0, F.lit(PREFERRED_LEADER_ELECTION)).otherwise(
            F.lit("wait for the preferred replicas to rejoin the ISR, then run a preferred leader election")
        ),
    )


def _spread(name: str) -> list[F.Column]:
    """max, min, mean, the brokers at max and min, and "broker:count,..." of `name` over live brokers."""
    return [
        F.max(name).alias(f"{name}_max"),
        F.min(name).alias(f"{name}_min"),
        F.avg(name).alias(f"{name}_mean"),
        # Of brokers with equal counts, the lowest id: the same answer whatever the rows' order.
        F.min_by("broker", F.struct(-F.col(name), "broker")).alias(f"{name}_max_broker"),
        F.min_by("broker", F.struct(F.col(name), "broker")).alias(f"{name}_min_broker"),
        F.array_join(F.sort_array(F.collect_list(F.format_string("%d:%d", "broker", name))), ",").alias(
            f"{name}_per_broker"
        ),
    ]


def leader_skew(frames: Frames, t: Thresholds) -> DataFrame:
    """Leader counts spread across live brokers wider than the threshold allows."""
    # The preferred leaders of partitions that have a leader (an offline partition leads nowhere).
    per_broker = leadership_per_broker(frames).select(
        "broker", "leaders", F.col("preferred_led").alias("preferred")
    )
    counts = frames.join(_alive(frames), per_broker, "broker", "left").fillna(
        0, subset=["leaders", "preferred"]
    )
    stats = counts.agg(*_spread("leaders"), *_spread("preferred"))

    def tolerated(name: str) -> F.Column:
        return F.greatest(
            F.lit(float(t.leader_skew_min_partitions)), F.col(f"{name}_mean") * t.leader_skew_ratio
        )

    df = stats.where((F.col("leaders_max") - F.col("leaders_min")) > tolerated("leaders"))
    preferred_balanced = (F.col("preferred_max") - F.col("preferred_min")) <= tolerated("preferred")
    return finding_rows(
        df,
        check="leader_skew",
        severity=Severity.WARNING,
        kind=SubjectKind.CLUSTER,
        message=F.format_string(
            "Leader counts range from %d (broker %d) to %d (broker %d) across live brokers (mean %.1f).",
            "leaders_min",
            "leaders_min_broker",
            "leaders_max",
            "leaders_max_broker",
            "leaders_mean",
        ),
        evidence={
            "leaders_max": F.col("leaders_max"),
            "leaders_min": F.col("leaders_min"),
            "leaders_mean": F.round("leaders_mean", 2),
            "max_broker": F.col("leaders_max_broker"),
            "min_broker": F.col("leaders_min_broker"),
            "leaders_per_broker": F.col("leaders_per_broker"),
            "preferred_per_broker": F.col("preferred_per_broker"),
        },
        # If the preferred replicas are spread evenly, an election fixes the skew; if not, only
        # moving replicas does.
        remediation=F.when(preferred_balanced, F.lit(PREFERRED_LEADER_ELECTION)).otherwise(
            F.lit("reassign partitions (kafka-reassign-partitions) so preferred replicas spread evenly")
        ),
    )


CHECKS: list[Check] = [leader_imbalance, leader_skew]
