"""Why each replica out of sync is out of sync: the cause the replication checks carry.

Counting the replicas missing from an ISR says how exposed a partition is, not what to do. Each
replica out of the ISR (of a partition whose check reports it) gets one cause, the first that
holds, in this order:

1. `fenced`: its broker is registered but fenced (stopped, paused, or lost its session);
2. `broker_down`: its broker is not in the cluster metadata at all;
3. `reassigning`: a reassignment in flight is adding it (out of sync on purpose until copied);
4. `throttled`: the topic's `follower.replication.throttled.replicas` names it (or
   `leader.replication.throttled.replicas` names the leader), so it copies at the brokers'
   throttle rate: a throttle a reassignment left behind, most often;
5. `catching_up`: alive, and its lag (bytes behind the leader, `ClusterSnapshot.replica_lags`)
   shrank since the reference sample: the newest at least `replica_stuck_minutes` old, else
   the oldest in the history; its rate over that span gives an ETA;
6. `stuck`: alive, and its lag has not shrunk over `replica_stuck_minutes` (a reference sample
   that old exists): a replica fetcher that stopped, a full or failing disk, a network path;
7. `lagging`: alive, and too little history (or no size read) to tell 5 from 6.

The lag history is `replica_lag_samples` (the history's window over twice `replica_stuck_minutes`),
read by the reused plans like every other window.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_health_spark.checks.reassignment import throttled
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

CAUSES = ("fenced", "broker_down", "stuck", "throttled", "reassigning", "lagging", "catching_up")
"""Every cause, the one a partition's remediation follows first (its `cause`) first."""


def replica_trend(frames: Frames, t: Thresholds) -> DataFrame:
    """Per replica behind now (`topic`, `partition`, `broker`): `lag_bytes` now (and its
    leader's size, `leader_size_bytes`), whether it
    `shrank` since its reference sample, whether that reference is at least
    `replica_stuck_minutes` old (`aged`), and at the rate it shrank, `eta_seconds`."""

    def build(f: Frames) -> DataFrame:
        now = f.now_col
        cutoff = now - F.expr(f"INTERVAL {int(t.replica_stuck_minutes * 60)} SECONDS")
        past = f.replica_lag_samples.where(F.col("ts") < now)
        ref = past.groupBy("topic", "partition", "broker").agg(
            F.max_by(F.struct("ts", "lag_bytes"), F.when(F.col("ts") <= cutoff, F.col("ts"))).alias(
                "aged_ref"
            ),
            F.min_by(F.struct("ts", "lag_bytes"), F.col("ts")).alias("first"),
        )
        current = f.replica_lags.select("topic", "partition", "broker", "lag_bytes", "leader_size_bytes")
        df = f.join(current, ref, ["topic", "partition", "broker"], "left").withColumn(
            "ref", F.coalesce("aged_ref", "first")
        )
        seconds = now.cast("double") - F.col("ref.ts").cast("double")
        shrank = F.col("lag_bytes") < F.col("ref.lag_bytes")
        rate = (F.col("ref.lag_bytes") - F.col("lag_bytes")) / seconds
        return df.select(
            "topic",
            "partition",
            "broker",
            "lag_bytes",
            "leader_size_bytes",
            F.coalesce(shrank, F.lit(False)).alias("shrank"),
            F.col("aged_ref").isNotNull().alias("aged"),
            F.when(shrank & (seconds > 0), F.ceil(F.col("lag_bytes") / rate)).alias("eta_seconds"),
        )

    return frames.shared("behind.replica_trend", build, materialize=True)


def _cause(adding: Column, follower_thr: Column, leader_thr: Column) -> Column:
    alive = F.coalesce(F.col("alive"), F.lit(False))
    return (
        F.when(~alive & F.coalesce(F.col("fenced"), F.lit(False)), F.lit("fenced"))
        .when(~alive, F.lit("broker_down"))
        .when(F.coalesce(F.array_contains(adding, F.col("broker")), F.lit(False)), F.lit("reassigning"))
        .when(
            F.coalesce(throttled(follower_thr, F.col("partition"), F.array(F.col("broker"))), F.lit(False))
            | F.coalesce(
                F.col("leader").isNotNull()
                & throttled(leader_thr, F.col("partition"), F.array(F.col("leader"))),
                F.lit(False),
            ),
            F.lit("throttled"),
        )
        .when(F.col("shrank"), F.lit("catching_up"))
        .when(F.col("aged"), F.lit("stuck"))
        .otherwise(F.lit("lagging"))
    )


def _detail() -> Column:
    """One replica's cause in words: "2 catching_up (1048576 B behind, ETA 40 s)"."""
    lag = F.when(F.col("lag_bytes").isNotNull(), F.format_string("%d B behind", F.col("lag_bytes")))
    eta = F.when(
        (F.col("cause") == "catching_up") & F.col("eta_seconds").isNotNull(),
        F.format_string("ETA %d s", F.col("eta_seconds")),
    )
    extra = F.concat_ws(", ", lag, eta)
    return F.concat(
        F.col("broker").cast("string"),
        F.lit(" "),
        F.col("cause"),
        F.when(extra != "", F.concat(F.lit(" ("), extra, F.lit(")"))).otherwise(F.lit("")),
    )


def with_causes(frames: Frames, df: DataFrame, t: Thresholds) -> DataFrame:
    """`df` (partition rows with `replicas`, `isr`, `leader`) with `cause` (the causes of its
    replicas out of sync, the first in `CAUSES` order first, comma-separated), `causes` (each
    replica's in words), `lag_bytes` (their total, where read) and `eta_seconds` (the last of
    them to catch up, where all that are behind are catching up)."""
    brokers = frames.brokers.select("broker", "alive", "fenced")
    moves = frames.reassignments.select("topic", "partition", F.col("adding").alias("_c_adding"))
    configs = frames.topic_configs.select(
        "topic",
        F.col("leader_replication_throttled_replicas").alias("_c_lthr"),
        F.col("follower_replication_throttled_replicas").alias("_c_fthr"),
    )
    per = df.select(
        "topic", "partition", "leader", F.explode(F.array_except("replicas", "isr")).alias("broker")
    )
    per = frames.join(per, frames.small_side(brokers), "broker", "left")
    per = frames.join(per, frames.small_side(moves), ["topic", "partition"], "left")
    per = frames.join(per, frames.small_side(configs), "topic", "left")
    per = frames.join(per, replica_trend(frames, t), ["topic", "partition", "broker"], "left")
    per = per.withColumn("cause", _cause(F.col("_c_adding"), F.col("_c_fthr"), F.col("_c_lthr")))
    rank = F.array_position(F.array(*map(F.lit, CAUSES)), F.col("cause"))
    causes = per.groupBy("topic", "partition").agg(
        F.array_sort(F.collect_set(F.struct(rank.alias("r"), F.col("cause").alias("c")))).alias("_c_set"),
        F.array_join(F.sort_array(F.collect_list(_detail())), "; ").alias("causes"),
        F.sum("lag_bytes").alias("lag_bytes"),
        F.when(F.min(F.col("cause") == "catching_up"), F.max("eta_seconds")).alias("eta_seconds"),
    )
    causes = causes.select(
        "topic",
        "partition",
        F.array_join(F.transform("_c_set", lambda s: s["c"]), ",").alias("cause"),
        "causes",
        "lag_bytes",
        "eta_seconds",
    )
    return frames.join(df, causes, ["topic", "partition"], "left")
