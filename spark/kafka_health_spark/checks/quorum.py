"""The control plane: the KRaft quorum has a leader, its voters and observers keep up; no broker is missing.

A voter lags when it trails the quorum leader by more than `quorum_lag_records` metadata records,
has not caught up for `quorum_caught_up_seconds`, or the leader has no offset for it at all (a
voter that is down when a new leader is elected); the finding is critical when the voters
still caught up are no longer a majority (one more failure stops all metadata changes). An
observer (a broker-only node replicating the metadata log) lags by the same two measures; the
leader's view of a broker that is down is left to `broker_missing`.
A broker is missing when something still expects it — it hosts replicas, the snapshot lists
it as not alive, or the history saw it in the window — but it does not serve now: either it is
registered but fenced (a stopped or paused KRaft broker stays registered, fenced by the
controller), or it is not registered at all.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check, replicas_per_broker
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def quorum_no_leader(frames: Frames, t: Thresholds) -> DataFrame:
    df = frames.quorum.where(F.col("leader_id").isNull())
    return finding_rows(
        df,
        check="quorum_no_leader",
        severity=Severity.CRITICAL,
        kind=SubjectKind.CLUSTER,
        message=F.lit(
            "The KRaft controller quorum has no leader: no metadata change (leader election, "
            "topic, ISR update) can happen."
        ),
        evidence={"leader_epoch": F.col("leader_epoch")},
        remediation=F.lit("bring a majority of the controller voters back up and able to reach each other"),
    )


def quorum_voter_lagging(frames: Frames, t: Thresholds) -> DataFrame:
    """Voters that trail the leader (`quorum_voter_lagging`) and, in the same job, observers that
    do (`quorum_observer_lagging`: a broker-only node replicating the metadata log late serves
    stale metadata; an observer the leader has no offset for yet is not reported)."""
    leader = frames.quorum.select("leader_id")
    now_ms = F.unix_millis(frames.now_col)
    members = (
        frames.quorum_voters.crossJoin(leader)
        .withColumn("since_caught_up_s", (now_ms - F.col("last_caught_up_ms")) / 1000.0)
        .withColumn(
            "behind",
            (F.col("lag") > t.quorum_lag_records) | (F.col("since_caught_up_s") > t.quorum_caught_up_seconds),
        )
    )
    voters = members.where(~F.col("observer")).withColumn(
        "lagging",
        ~F.col("voter").eqNullSafe(F.col("leader_id"))
        # No offset or catch-up time: the current leader has not heard from it at all.
        & (F.col("log_end_offset").isNull() | F.col("last_caught_up_ms").isNull() | F.col("behind")),
    )
    totals = voters.agg(
        F.count(F.lit(1)).alias("voters"), F.sum((~F.col("lagging")).cast("int")).alias("caught_up")
    )
    df = voters.where("lagging").crossJoin(totals)
    lag_text = F.coalesce(F.col("lag").cast("string"), F.lit("?"))
    since_text = F.coalesce(F.format_number("since_caught_up_s", 0), F.lit("?"))
    lagging_voters = finding_rows(
        df,
        check="quorum_voter_lagging",
        severity=F.when(F.col("caught_up") * 2 <= F.col("voters"), F.lit(Severity.CRITICAL.value)).otherwise(
            F.lit(Severity.WARNING.value)
        ),
        kind=SubjectKind.BROKER,
        broker=F.col("voter"),
        message=F.format_string(
            "Controller voter %d trails the quorum leader (lag %s records, last caught up %s s ago; "
            "%d of %d voters caught up).",
            "voter",
            lag_text,
            since_text,
            "caught_up",
            "voters",
        ),
        evidence={
            "lag": F.col("lag"),
            "seconds_since_caught_up": F.round("since_caught_up_s", 1),
            "voters": F.col("voters"),
            "caught_up_voters": F.col("caught_up"),
        },
        remediation=F.format_string("check controller %d: process, disk and network to the leader", "voter"),
    )
    alive = frames.brokers.where("alive").select(F.col("broker").alias("voter"))
    behind = members.where(F.col("observer") & F.coalesce(F.col("behind"), F.lit(False)))
    observers = frames.join(behind, alive, "voter", "left_semi")  # a broker that is down is broker_missing's
    lagging_observers = finding_rows(
        observers,
        check="quorum_observer_lagging",
        severity=Severity.WARNING,
        kind=SubjectKind.BROKER,
        broker=F.col("voter"),
        message=F.format_string(
            "Broker %d trails the metadata log as an observer of the quorum (lag %s records, last caught "
            "up %s s ago): it serves stale metadata (leaders, ISRs, topics).",
            "voter",
            lag_text,
            since_text,
        ),
        evidence={"lag": F.col("lag"), "seconds_since_caught_up": F.round("since_caught_up_s", 1)},
        remediation=F.format_string("check broker %d: process, disk and network to the controllers", "voter"),
    )
    return lagging_voters.unionByName(lagging_observers)


def broker_missing(frames: Frames, t: Thresholds) -> DataFrame:
    alive = frames.brokers.where("alive").select("broker")
    hosting = replicas_per_broker(frames)
    seen = (
        frames.broker_samples.where(F.col("ts") < frames.now_col)
        .groupBy("broker")
        .agg(F.max(F.when(F.col("alive"), F.col("ts"))).alias("last_seen_alive"))
    )
    listed = frames.brokers.where(~F.col("alive")).select("broker")
    expected = hosting.select("broker").unionByName(seen.select("broker")).unionByName(listed).distinct()
    gone = frames.join(expected, alive, "broker", "left_anti")
    gone = frames.join(frames.join(gone, hosting, "broker", "left"), seen, "broker", "left")
    df = (
        frames.join(gone, listed.withColumn("fenced", F.lit(True)), "broker", "left")
        .fillna(0, subset=["replicas"])
        .fillna(False, subset=["fenced"])
    )
    return finding_rows(
        df,
        check="broker_missing",
        severity=Severity.CRITICAL,
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.format_string(
            "Broker %d is %s but hosts %d replicas%s.",
            "broker",
            F.when(F.col("fenced"), F.lit("fenced (registered, not serving)")).otherwise(
                F.lit("not registered in the cluster")
            ),
            "replicas",
            F.when(
                F.col("last_seen_alive").isNotNull(),
                F.format_string(
                    "; last seen alive %s", F.date_format("last_seen_alive", "yyyy-MM-dd HH:mm:ss 'UTC'")
                ),
            ).otherwise(F.lit("")),
        ),
        evidence={
            "replicas": F.col("replicas"),
            "fenced": F.col("fenced").cast("int"),
            "last_seen_alive": F.date_format("last_seen_alive", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
        },
        remediation=F.format_string("start broker %d (check its process or pod, and its log)", "broker"),
    )


CHECKS: list[Check] = [quorum_no_leader, quorum_voter_lagging, broker_missing]
