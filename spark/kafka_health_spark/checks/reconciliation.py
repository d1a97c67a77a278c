"""Stuck reconciliation (KIP-848): group members whose assignment stays unlike their target.

In a consumer-protocol group (`group.protocol=consumer`) the coordinator computes each member's
target assignment, and the member reconciles towards it: it revokes the partitions it owns
outside its target (its rebalance callback runs, it commits), acknowledges in its next heartbeat,
and only then gains the partitions freed for it. A member blocked in its revocation callback, or
one that stopped polling, keeps partitions that another member waits for: those partitions are
consumed by nobody, and their lag grows.

A member is stuck when its assignment has differed from its target since at least
`reconciliation_stuck_minutes` ago (`GroupMember.mismatch_since`, carried over the history's
recorded snapshots by `kafka_health.history.reconciliation`). A member reconciling for less, or
whose start is not known (a snapshot not recorded in a history), is not judged: no finding says
it is stuck, and none says it is not. Classic groups have no target assignment: not judged either.

One finding per group names every stuck member with the partitions it must still revoke and those
it is still to gain. The members with partitions to revoke (`blocking_member_ids`) hold the
others up: a member that only has partitions to gain waits for them to be revoked elsewhere.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

REMEDIATION = (
    "check the application of each member named (client id, host): a consumer blocked in its "
    "rebalance callback (onPartitionsRevoked / on_revoke, e.g. a slow commit or a lock) or not "
    "calling poll keeps partitions nobody else may consume; `kafka-consumer-groups --describe "
    "--group <group> --members --verbose` shows its ASSIGNMENT beside its TARGET-ASSIGNMENT; "
    "restarting or closing that consumer hands its partitions on"
)


def _names(column: str) -> Column:
    """An array of names as "a,b" ("none" when empty)."""
    return F.when(F.size(column) > 0, F.concat_ws(",", F.array_sort(column))).otherwise(F.lit("none"))


def reconciliation_stuck(frames: Frames, t: Thresholds) -> DataFrame:
    """Per group: its members whose assignment has differed from their target for at least
    `reconciliation_stuck_minutes`, each named with the partitions it must still revoke and
    those it is still to gain."""
    cutoff = frames.now_col - F.expr(f"INTERVAL {int(t.reconciliation_stuck_minutes * 60_000)} MILLISECONDS")
    stuck = frames.reconciling_members.where(
        F.col("mismatch_since").isNotNull() & (F.col("mismatch_since") <= cutoff)
    ).withColumn(
        "detail",
        F.format_string(
            "%s (client %s, host %s): to revoke %s; to gain %s; since %s",
            "member_id",
            "client_id",
            "host",
            _names("to_revoke"),
            _names("to_gain"),
            F.date_format("mismatch_since", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
        ),
    )
    per_group = stuck.groupBy("group_id").agg(
        F.count(F.lit(1)).alias("stuck_members"),
        F.array_sort(F.collect_list("member_id")).alias("member_ids"),
        F.array_sort(F.collect_list(F.when(F.size("to_revoke") > 0, F.col("member_id")))).alias("blocking"),
        F.array_sort(F.collect_list("client_id")).alias("client_ids"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("to_revoke")))).alias("to_revoke"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("to_gain")))).alias("to_gain"),
        # The blocking members (partitions to revoke) first, then by member id.
        F.transform(
            F.array_sort(
                F.collect_list(F.struct((F.size("to_revoke") == 0).alias("waits"), "member_id", "detail"))
            ),
            lambda m: m["detail"],
        ).alias("details"),
        F.min("mismatch_since").alias("since"),
    )
    minutes = (frames.now_col.cast("double") - F.col("since").cast("double")) / 60
    return finding_rows(
        per_group,
        check="reconciliation_stuck",
        severity=Severity.WARNING,
        kind=SubjectKind.GROUP,
        group=F.col("group_id"),
        message=F.format_string(
            "Group %s: %d member(s) stuck reconciling their assignment with their target for %.1f "
            "minutes or more: %s.",
            "group_id",
            "stuck_members",
            minutes,
            F.concat_ws("; ", "details"),
        ),
        evidence={
            "stuck_members": F.col("stuck_members"),
            "member_ids": F.concat_ws(",", "member_ids"),
            "blocking_member_ids": _names("blocking"),
            "client_ids": F.concat_ws(",", "client_ids"),
            "to_revoke": _names("to_revoke"),
            "to_gain": _names("to_gain"),
            "since": F.date_format("since", "yyyy-MM-dd'T'HH:mm:ss'Z'"),
            "members": F.concat_ws("; ", "details"),
        },
        remediation=F.lit(REMEDIATION),
    )


CHECKS: list[Check] = [reconciliation_stuck]
