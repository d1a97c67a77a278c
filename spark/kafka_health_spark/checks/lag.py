"""Consumer lag judged the Burrow way, plus committed offsets that are out of range or about to expire.

Lag alone says little (a busy group always trails a bit), so each group partition gets a status
from its samples in the newest `lag_window_samples` snapshots of the window, after LinkedIn
Burrow's evaluation rules:
1. lag is zero now or at any sample of the window → OK;
2. the committed offset went backwards between two samples → REWIND;
3. the committed offset never moved: STALL when the group has members (running, not
   progressing), STOP when it has none (nobody consumes). Burrow tells these apart by commit
   timestamps, which Kafka's admin API does not return; membership is what we can see;
4. the offset moves but the lag never shrank from one sample to the next → WARN (falling behind);
5. otherwise OK.
Then a partition that is OK or WARN but lags by `lag_critical_messages` or more is CRITICAL_LAG
(critical): a ceiling on lag, whatever its trend (the policy's consumerLag.criticalLag). The
same in time: lag in seconds (`checks/lag_time.py`) at or above `lag_critical_seconds` makes an
OK or WARN partition CRITICAL_LAG, at or above `lag_warn_seconds` an OK one WARN (the policy's
consumerLag.maxLagSeconds; off unless set). A STALL
partition whose committed offset is its last stable offset, below its log end, is BLOCKED
(critical): the group read everything a read_committed consumer may read, and an open
transaction holds the rest back. That is no slow consumer: the transaction must end (the
`hanging_transaction` finding names it when its coordinator has lost it).
With fewer than `lag_min_samples` samples (no history yet), a partition is WARN only if its lag
reaches `lag_warn_messages`. Lag is Kafka's: log end offset minus committed offset, exactly what
`kafka-consumer-groups --describe` prints; partitions where the group committed nothing have no
lag and are skipped, as the tool shows "-" for them. Beside it, `stable_lag` is the lag a
read_committed consumer has: last stable offset minus committed offset (unknown when the last
stable offset was not read).
A share group (KIP-932, kind `share`) is judged the same way over its start offsets (the first
record not yet acknowledged for good, `collect/share_groups.py`): a start offset that does not
move while members are present is a stalled queue (STALL), records pending with no member STOP.
Its lag here runs to the log end, so it can exceed the lag Kafka reports for it, which leaves out
records acknowledged past the start offset (kept as `reported_lag` in the snapshot).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.checks.lag_time import lag_seconds
from kafka_health_spark.findings import OFFSET_RESET, finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

STATUSES = ["OK", "WARN", "CRITICAL_LAG", "STALL", "BLOCKED", "STOP", "REWIND"]

_REMEDIATION = {
    "WARN": "consumers fall behind: add consumers (and partitions) or speed up processing",
    "CRITICAL_LAG": "lag is over the critical limit: add consumers (and partitions) or speed up processing",
    "STALL": "consumers are up but not committing (in a share group: not acknowledging): look for a stuck "
    "or poisoned record, restart them",
    "BLOCKED": "an open transaction holds the last stable offset: read_committed consumers wait until it "
    "ends; find it (kafka-transactions describe-producers, or the hanging_transaction finding) and let its "
    "producer end it, or abort it (kafka-health abort-transaction)",
    "STOP": "no consumer runs for this group: start its consumers",
    "REWIND": "committed offsets moved backwards: check for an offset reset or consumers restarting from earliest",
}


def _rank(status: Column) -> Column:
    expr = F.lit(0)
    for i, name in enumerate(STATUSES):
        expr = F.when(status == name, F.lit(i)).otherwise(expr)
    return expr


def _status_name(rank: Column) -> Column:
    return F.element_at(F.array(*[F.lit(s) for s in STATUSES]), rank + 1)


def _severity(status: Column) -> Column:
    return F.when(status == "WARN", F.lit(Severity.WARNING.value)).otherwise(F.lit(Severity.CRITICAL.value))


def _remediation(status: Column) -> Column:
    expr: Column = F.lit(None).cast("string")
    for name, text in _REMEDIATION.items():
        expr = F.when(status == name, F.lit(text)).otherwise(expr)
    return expr


def _at_least(limit: float | None) -> Column:
    """Lag in seconds known and at or above `limit` (never, without a limit)."""
    if limit is None:
        return F.lit(False)
    return F.coalesce(F.col("lag_seconds") >= F.lit(float(limit)), F.lit(False))


def partition_status(frames: Frames, t: Thresholds) -> DataFrame:
    """One row per group partition with a committed offset now: lag, window statistics, status."""
    samples = frames.group_offset_samples.where(
        F.col("committed_offset").isNotNull() & F.col("log_end_offset").isNotNull()
    ).withColumn("lag", F.col("log_end_offset") - F.col("committed_offset"))
    key = ["group_id", "topic", "partition"]
    # Every snapshot samples every group, so "the newest N samples" of a partition are those of
    # the newest N snapshots: a cut-off found over a handful of distinct timestamps, no per-partition
    # ranking of every sample.
    cutoff = (
        samples.select("ts")
        .distinct()
        .orderBy(F.col("ts").desc())
        .limit(t.lag_window_samples)
        .agg(F.min("ts").alias("cutoff"))
    )
    recent = samples.crossJoin(F.broadcast(cutoff)).where(F.col("ts") >= F.col("cutoff"))
    w = Window.partitionBy(*key).orderBy("ts")
    stepped = recent.withColumn("prev_committed", F.lag("committed_offset").over(w)).withColumn(
        "prev_lag", F.lag("lag").over(w)
    )
    per_partition = stepped.groupBy(*key).agg(
        F.count(F.lit(1)).alias("samples"),
        F.max("ts").alias("last_ts"),
        F.max_by("lag", "ts").alias("lag"),
        F.max_by("committed_offset", "ts").alias("committed_offset"),
        F.max_by("log_end_offset", "ts").alias("log_end_offset"),
        F.min("lag").alias("min_lag"),
        F.sum(F.when(F.col("committed_offset") < F.col("prev_committed"), 1).otherwise(0)).alias("rewinds"),
        F.min("committed_offset").alias("min_committed"),
        F.max("committed_offset").alias("max_committed"),
        F.sum(F.when(F.col("lag") < F.col("prev_lag"), 1).otherwise(0)).alias("lag_decreases"),
    )
    # Only partitions the group still has committed offsets for in the snapshot being diagnosed.
    current = per_partition.where(F.col("last_ts") == frames.now_col)
    members = frames.groups.select("group_id", "members", "state", "kind")
    burrow = (
        F.when(
            F.col("samples") < t.lag_min_samples,
            F.when(F.col("lag") >= t.lag_warn_messages, F.lit("WARN")).otherwise(F.lit("OK")),
        )
        .when((F.col("lag") <= 0) | (F.col("min_lag") <= 0), F.lit("OK"))
        .when(F.col("rewinds") > 0, F.lit("REWIND"))
        .when(
            F.col("min_committed") == F.col("max_committed"),
            F.when(F.coalesce(F.col("members"), F.lit(0)) > 0, F.lit("STALL")).otherwise(F.lit("STOP")),
        )
        .when(F.col("lag_decreases") == 0, F.lit("WARN"))
        .otherwise(F.lit("OK"))
    )
    seconds = lag_seconds(samples, current, frames.now_col, frames.group_offsets)
    current = frames.join(current, seconds, key, "left")
    held = (F.col("committed_offset") == F.col("last_stable_offset")) & (
        F.col("last_stable_offset") < F.col("log_end_offset")
    )
    status = (
        F.when(
            F.col("burrow").isin("OK", "WARN") & (F.col("lag") >= t.lag_critical_messages),
            F.lit("CRITICAL_LAG"),
        )
        .when(F.col("burrow").isin("OK", "WARN") & _at_least(t.lag_critical_seconds), F.lit("CRITICAL_LAG"))
        .when((F.col("burrow") == "OK") & _at_least(t.lag_warn_seconds), F.lit("WARN"))
        .when((F.col("burrow") == "STALL") & F.coalesce(held, F.lit(False)), F.lit("BLOCKED"))
        .otherwise(F.col("burrow"))
    )
    stable = frames.offsets.select("topic", "partition", "last_stable_offset")
    return (
        frames.join(frames.join(current, members, "group_id", "left"), stable, ["topic", "partition"], "left")
        .withColumn(  # greatest() skips nulls: an unread last stable offset stays unknown
            "stable_lag",
            F.when(
                F.col("last_stable_offset").isNotNull(),
                F.greatest(F.col("last_stable_offset") - F.col("committed_offset"), F.lit(0)),
            ),
        )
        .withColumn("burrow", burrow)
        .withColumn("status", status)
        .drop("burrow")
    )


def consumer_lag(frames: Frames, t: Thresholds) -> DataFrame:
    """A finding per group partition that is not OK, and one per group with its worst status."""
    # Read twice below (partition rows, group rows): computed once.
    parts = frames.shared("lag.partition_status", lambda f: partition_status(f, t), materialize=True)
    return _partition_findings(parts).unionByName(_group_findings(_group_status(parts)))


def _behind() -> Column:
    """ ", 42 s behind" (", at least 600 s behind" past the window's reach; "" when unknown)."""
    return F.coalesce(
        F.when(
            F.col("lag_seconds_lower_bound"),
            F.format_string(", at least %.0f s behind (older than the history)", "lag_seconds"),
        ).when(F.col("lag_seconds").isNotNull(), F.format_string(", %.0f s behind", "lag_seconds")),
        F.lit(""),
    )


def _partition_findings(parts: DataFrame) -> DataFrame:
    """One finding per group partition whose status is not OK."""
    return finding_rows(
        parts.where(F.col("status") != "OK"),
        check="consumer_lag",
        severity=_severity(F.col("status")),
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        group=F.col("group_id"),
        message=F.format_string(
            "Group %s on %s-%d: %s, lag %d%s (committed %d, log end %d%s, %d samples).",
            "group_id",
            "topic",
            "partition",
            "status",
            "lag",
            _behind(),
            "committed_offset",
            "log_end_offset",
            F.coalesce(
                F.when(
                    F.col("last_stable_offset") < F.col("log_end_offset"),
                    F.format_string(", last stable %d: an open transaction", "last_stable_offset"),
                ),
                F.lit(""),
            ),
            "samples",
        ),
        evidence={
            "status": F.col("status"),
            "lag": F.col("lag"),
            "stable_lag": F.col("stable_lag"),
            "lag_seconds": F.round("lag_seconds", 1),
            "lag_seconds_lower_bound": F.col("lag_seconds_lower_bound").cast("int"),
            "committed_offset": F.col("committed_offset"),
            "log_end_offset": F.col("log_end_offset"),
            "last_stable_offset": F.col("last_stable_offset"),
            "samples": F.col("samples"),
            "members": F.col("members"),
        },
        remediation=_remediation(F.col("status")),
    )


def _group_status(parts: DataFrame) -> DataFrame:
    """Each group's worst partition status and its totals; groups whose worst is OK left out."""
    return (
        parts.groupBy("group_id")
        .agg(
            F.max(_rank(F.col("status"))).alias("worst"),
            F.sum(F.greatest(F.col("lag"), F.lit(0))).alias("total_lag"),
            F.max("lag").alias("max_lag"),
            F.max("lag_seconds").alias("max_lag_seconds"),
            # The partition with the most lag; of equal lags the first by topic and partition, so
            # the message does not depend on the order Spark happens to read the rows in.
            F.min_by(
                F.format_string("%s-%d", "topic", "partition"), F.struct(-F.col("lag"), "topic", "partition")
            ).alias("max_lag_partition"),
            F.count(F.lit(1)).alias("partitions"),
            F.sum(F.when(F.col("status") != "OK", 1).otherwise(0)).alias("partitions_not_ok"),
            F.first("members").alias("members"),
            F.first("state").alias("state"),
            F.first("kind").alias("kind"),
        )
        .withColumn("status", _status_name(F.col("worst")))
        .where(F.col("status") != "OK")
    )


def _group_findings(groups: DataFrame) -> DataFrame:
    """One finding per group that is not OK, naming its worst partition."""
    return finding_rows(
        groups,
        check="consumer_lag",
        severity=_severity(F.col("status")),
        kind=SubjectKind.GROUP,
        group=F.col("group_id"),
        message=F.format_string(
            "%s %s is %s: total lag %d, %d of %d partitions not OK (worst %s, lag %d).",
            F.when(F.col("kind") == "share", F.lit("Share group")).otherwise(F.lit("Group")),
            "group_id",
            "status",
            "total_lag",
            "partitions_not_ok",
            "partitions",
            "max_lag_partition",
            "max_lag",
        ),
        evidence={
            "status": F.col("status"),
            "total_lag": F.col("total_lag"),
            "max_lag": F.col("max_lag"),
            "max_lag_partition": F.col("max_lag_partition"),
            "max_lag_seconds": F.round("max_lag_seconds", 1),
            "partitions": F.col("partitions"),
            "partitions_not_ok": F.col("partitions_not_ok"),
            "members": F.col("members"),
            "state": F.col("state"),
            "kind": F.coalesce(F.col("kind"), F.lit("unknown")),
        },
        remediation=_remediation(F.col("status")),
    )


def offset_out_of_range(frames: Frames, t: Thresholds) -> DataFrame:
    """Committed offsets outside [log start, log end]: retention deleted the data under the
    group, or the topic was recreated. The consumer falls back to auto.offset.reset; an
    explicit reset makes that choice deliberate."""
    committed = frames.group_offsets.where(F.col("committed_offset").isNotNull())
    df = (
        frames.join(committed, frames.offsets, ["topic", "partition"])
        .where(
            (F.col("committed_offset") < F.col("log_start_offset"))
            | (F.col("committed_offset") > F.col("log_end_offset"))
        )
        .withColumn(
            "side",
            F.when(F.col("committed_offset") < F.col("log_start_offset"), "before log start").otherwise(
                "after log end"
            ),
        )
    )
    return finding_rows(
        df,
        check="offset_out_of_range",
        severity=Severity.WARNING,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        group=F.col("group_id"),
        message=F.format_string(
            "Group %s's committed offset %d on %s-%d is %s (log %d..%d).",
            "group_id",
            "committed_offset",
            "topic",
            "partition",
            "side",
            "log_start_offset",
            "log_end_offset",
        ),
        evidence={
            "committed_offset": F.col("committed_offset"),
            "log_start_offset": F.col("log_start_offset"),
            "log_end_offset": F.col("log_end_offset"),
        },
        remediation=F.lit(OFFSET_RESET),
    )


def offset_expiry(frames: Frames, t: Thresholds) -> DataFrame:
    """Empty groups whose committed offsets Kafka deletes soon (offsets.retention.minutes after
    the last member left); once gone, the group restarts from auto.offset.reset."""
    committed = (
        frames.group_offsets.where(F.col("committed_offset").isNotNull()).select("group_id").distinct()
    )
    empty_now = frames.join(
        frames.groups.where(F.col("state") == "Empty").select("group_id"), committed, "group_id"
    )
    activity = frames.group_activity.groupBy("group_id").agg(
        F.max(F.when(~F.col("state").isin("Empty", "Dead"), F.col("ts"))).alias("last_active"),
        F.min("ts").alias("first_seen"),
    )
    now = frames.now_col
    df = (
        frames.join(empty_now, activity, "group_id", "left")
        .withColumn("empty_since", F.coalesce("last_active", "first_seen", now))
        # Never seen active in the history: empty at least since the first sample (a lower bound).
        .withColumn("lower_bound", F.col("last_active").isNull().cast("int"))
        .withColumn("empty_hours", (F.unix_micros(now) - F.unix_micros(F.col("empty_since"))) / F.lit(3.6e9))
        .withColumn("expires_in_hours", F.lit(t.offsets_retention_hours) - F.col("empty_hours"))
        .where(F.col("expires_in_hours") <= t.offset_expiry_warn_hours)
    )
    return finding_rows(
        df,
        check="offset_expiry",
        severity=Severity.WARNING,
        kind=SubjectKind.GROUP,
        group=F.col("group_id"),
        message=F.format_string(
            "Group %s has been empty for %s%.1f h; its committed offsets expire in about %.1f h "
            "(offsets.retention.minutes = %.0f h).",
            "group_id",
            F.when(F.col("lower_bound") == 1, F.lit("at least ")).otherwise(F.lit("")),
            "empty_hours",
            F.greatest(F.col("expires_in_hours"), F.lit(0.0)),
            F.lit(t.offsets_retention_hours),
        ),
        evidence={
            "empty_hours": F.round("empty_hours", 2),
            "expires_in_hours": F.round("expires_in_hours", 2),
            "empty_since_is_lower_bound": F.col("lower_bound"),
            "retention_hours": F.lit(t.offsets_retention_hours),
        },
        remediation=F.lit(
            "start the group's consumers (or commit its offsets) before they expire, "
            "or raise offsets.retention.minutes"
        ),
    )


CHECKS: list[Check] = [consumer_lag, offset_out_of_range, offset_expiry]
