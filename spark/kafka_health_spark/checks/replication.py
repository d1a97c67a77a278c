"""Replication state of each partition right now: offline, under-replicated, under / at min ISR.

The definitions are Kafka's own (`kafka-topics --describe` with `--unavailable-partitions`,
`--under-replicated-partitions`, `--under-min-isr-partitions`, `--at-min-isr-partitions`), so
the lists agree with what an operator sees in Kafka's tools:
- unavailable: no leader, or the leader is not a live broker;
- under-replicated: fewer replicas in sync than assigned;
- under min ISR: no leader, or fewer in sync than `min.insync.replicas` (acks=all writes fail);
- at min ISR: exactly `min.insync.replicas` in sync (one more loss and acks=all writes fail).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check, id_list
from kafka_health_spark.checks.behind import with_causes
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def _with_state(frames: Frames) -> DataFrame:
    # (not materialized: copying every partition's joined row cost more than each check joining
    # again, after its own filter; docs/diagnostics.md, "2026-11-26 (night)")
    return frames.shared("replication.with_state", _build_with_state)


def _build_with_state(frames: Frames) -> DataFrame:
    alive = frames.brokers.where("alive").select(F.col("broker").alias("leader"), F.lit(True).alias("_live"))
    configs = frames.topic_configs.select("topic", F.col("min_insync_replicas").alias("min_isr"))
    with_live = frames.join(frames.partitions, frames.small_side(alive), "leader", "left")
    return (
        frames.join(with_live, frames.small_side(configs), "topic", "left")
        .withColumn("rf", F.size("replicas"))
        .withColumn("isr_size", F.size("isr"))
        .withColumn("leader_live", F.coalesce(F.col("_live"), F.lit(False)))
    )


def _with_missing(frames: Frames, df: DataFrame, t: Thresholds) -> DataFrame:
    """`df` with `missing`, the brokers out of sync as text, `reassigning`: true when every one
    of them is a replica a reassignment in flight is adding (out of sync on purpose until it
    has caught up), and why each is out of sync (`behind.with_causes`). Columns of a check's
    rows, not of the shared frame, so they are computed for the rows a check keeps, not for
    every partition."""
    moves = frames.reassignments.select("topic", "partition", F.col("adding").alias("_adding"))
    out_of_sync = F.array_except("replicas", "isr")
    return (
        with_causes(frames, frames.join(df, frames.small_side(moves), ["topic", "partition"], "left"), t)
        .withColumn("missing", id_list(out_of_sync))
        .withColumn(
            "reassigning",
            (F.size(out_of_sync) > 0)
            & F.coalesce(F.size(F.array_except(out_of_sync, F.col("_adding"))) == 0, F.lit(False)),
        )
    )


def _added(message: Column) -> Column:
    """`message`, saying when its out-of-sync replicas are being added by a reassignment, and
    else why each is out of sync."""
    return F.when(
        F.col("reassigning"),
        F.concat(message, F.lit(" They are being added by a reassignment (partition_reassigning).")),
    ).otherwise(
        F.when(
            F.col("causes").isNotNull(), F.concat(message, F.lit(" Cause: "), F.col("causes"), F.lit("."))
        ).otherwise(message)
    )


def _cause_evidence() -> dict[str, Column]:
    return {
        "out_of_sync": F.col("missing"),
        "reassigning": F.when(F.col("reassigning"), F.col("missing")),
        "cause": F.col("cause"),
        "causes": F.col("causes"),
        "lag_bytes": F.col("lag_bytes"),
        "catch_up_eta_seconds": F.col("eta_seconds"),
    }


def _fix_by_cause(otherwise: Column) -> Column:
    """What to do about the replicas out of sync, by the partition's first cause."""
    first = F.split(F.col("cause"), ",").getItem(0)
    return (
        F.when(
            F.col("reassigning"), F.lit("let the reassignment finish (kafka-reassign-partitions --verify)")
        )
        .when(first.isin("fenced", "broker_down"), F.format_string("bring back broker(s) %s", "missing"))
        .when(
            first == "stuck",
            F.format_string(
                "broker(s) %s are alive but not catching up: check their replica fetcher "
                "(ReplicaFetcherThread errors in the broker log), disk and network",
                "missing",
            ),
        )
        .when(
            first == "throttled",
            F.lit(
                "a replication throttle holds it: let its reassignment finish (kafka-reassign-partitions "
                "--verify) or remove the throttle (replication_throttle_left)"
            ),
        )
        .when(first == "catching_up", F.lit("none: it is catching up (see catch_up_eta_seconds)"))
        .otherwise(otherwise)
    )


def _evidence() -> dict[str, F.Column]:
    return {
        "leader": F.col("leader"),
        "replicas": id_list(F.col("replicas")),
        "isr": id_list(F.col("isr")),
        "rf": F.col("rf"),
        "isr_size": F.col("isr_size"),
        "min_isr": F.col("min_isr"),
    }


def offline_partitions(frames: Frames, t: Thresholds) -> DataFrame:
    """Partitions without a live leader: every read and write to them fails. How each comes back
    (KIP-966): an eligible leader replica (ELR) or an ISR member that returns leads it cleanly;
    with neither (the ISR emptied and no ELR: a cluster with ELR whose eligible replicas were lost
    or shut down uncleanly) only an unclean election does, losing what it had not replicated."""
    elr = frames.eligible_leaders.select("topic", "partition", "elr", "last_known_elr")
    df = frames.join(_with_state(frames).where(~F.col("leader_live")), elr, ["topic", "partition"], "left")
    eligible = F.coalesce(F.size("elr"), F.lit(0)) > 0
    unclean_only = ~eligible & (F.col("isr_size") == 0)
    where = F.format_string(
        "%s-%d has no live leader (replicas %s, ISR %s",
        "topic",
        "partition",
        id_list(F.col("replicas")),
        id_list(F.col("isr")),
    )
    message = (
        F.when(
            eligible,
            F.format_string(
                "%s, eligible leader replicas %s): it serves no reads or writes until one of them "
                "returns, which Kafka elects cleanly (no data loss).",
                where,
                id_list(F.col("elr")),
            ),
        )
        .when(
            unclean_only,
            F.format_string(
                "%s, no eligible leader replica; last known %s): only an unclean election brings it "
                "back, losing the records its replicas had not copied.",
                where,
                id_list(F.col("last_known_elr")),
            ),
        )
        .otherwise(F.format_string("%s): it serves no reads or writes.", where))
    )
    remediation = (
        F.when(
            eligible,
            F.format_string(
                "bring back broker %s (eligible leaders of %s); no unclean election is needed",
                id_list(F.col("elr")),
                "topic",
            ),
        )
        .when(
            unclean_only,
            F.format_string(
                "bring back a replica (brokers %s) and check its disk; as a last resort, accepting data "
                "loss: kafka-leader-election --election-type UNCLEAN --topic %s --partition %d "
                "(the operator never runs it)",
                id_list(F.col("replicas")),
                "topic",
                "partition",
            ),
        )
        .otherwise(
            F.format_string(
                "bring back a replica of %s (brokers %s); unclean leader election only as a last resort",
                "topic",
                id_list(F.col("replicas")),
            )
        )
    )
    return finding_rows(
        df,
        check="offline_partition",
        severity=Severity.CRITICAL,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=message,
        evidence={
            **_evidence(),
            "eligible_leaders": id_list(F.col("elr")),
            "last_known_elr": id_list(F.col("last_known_elr")),
        },
        remediation=remediation,
    )


def under_replicated(frames: Frames, t: Thresholds) -> DataFrame:
    """Partitions with a replica out of sync: one failure closer to losing data."""
    df = _with_missing(frames, _with_state(frames).where(F.col("isr_size") < F.col("rf")), t)
    return finding_rows(
        df,
        check="under_replicated",
        severity=Severity.WARNING,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=_added(
            F.format_string(
                "%s-%d has %d of %d replicas in sync; out of sync: broker(s) %s.",
                "topic",
                "partition",
                "isr_size",
                "rf",
                "missing",
            )
        ),
        evidence={**_evidence(), **_cause_evidence()},
        remediation=_fix_by_cause(
            F.format_string("check broker(s) %s: down, or unable to keep up", "missing")
        ),
    )


def under_min_isr(frames: Frames, t: Thresholds) -> DataFrame:
    """Partitions that reject acks=all writes (NOT_ENOUGH_REPLICAS) right now."""
    df = _with_missing(
        frames,
        _with_state(frames).where(
            F.col("leader").isNull() | (F.col("min_isr").isNotNull() & (F.col("isr_size") < F.col("min_isr")))
        ),
        t,
    )
    return finding_rows(
        df,
        check="under_min_isr",
        severity=Severity.CRITICAL,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=_added(
            F.format_string(
                "%s-%d has %d in sync, below min.insync.replicas=%s: producers with acks=all fail.",
                "topic",
                "partition",
                "isr_size",
                F.coalesce(F.col("min_isr").cast("string"), F.lit("?")),
            )
        ),
        evidence={**_evidence(), **_cause_evidence()},
        remediation=F.when(
            F.col("isr_size") < F.col("rf"), F.format_string("restore broker(s) %s to the ISR", "missing")
        )
        .when(F.col("leader").isNull(), F.lit("bring back a replica of the partition"))
        .otherwise(F.lit("min.insync.replicas exceeds the replication factor: see min_isr_too_high")),
    )


def at_min_isr(frames: Frames, t: Thresholds) -> DataFrame:
    """Partitions one replica loss away from rejecting acks=all writes.

    Warning when a replica is out of sync; info when the topic is configured that way
    (min.insync.replicas = RF, reported by the durability checks).
    """
    df = _with_missing(
        frames,
        _with_state(frames).where(F.col("min_isr").isNotNull() & (F.col("isr_size") == F.col("min_isr"))),
        t,
    )
    return finding_rows(
        df,
        check="at_min_isr",
        severity=F.when(F.col("isr_size") < F.col("rf"), F.lit(Severity.WARNING.value)).otherwise(
            F.lit(Severity.INFO.value)
        ),
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=_added(
            F.format_string(
                "%s-%d has exactly min.insync.replicas=%d in sync: one more loss stops acks=all writes.",
                "topic",
                "partition",
                "min_isr",
            )
        ),
        evidence={**_evidence(), **_cause_evidence()},
        remediation=F.when(
            F.col("isr_size") < F.col("rf"), F.format_string("restore broker(s) %s to the ISR", "missing")
        ),
    )


CHECKS: list[Check] = [offline_partitions, under_replicated, under_min_isr, at_min_isr]
