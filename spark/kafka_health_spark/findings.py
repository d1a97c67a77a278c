"""Finding rows: the one DataFrame shape every check returns, and its trip to `Finding` models.

Checks build finding rows in Spark (messages and evidence included), so the rule and its
wording live together and only the capped rows of each check travel to the driver.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_health.models.findings import Finding, Severity, Subject, SubjectKind
from kafka_health_spark.session import jvm_generation

COLUMNS = [
    "check",
    "severity",
    "subject_kind",
    "broker",
    "topic",
    "partition",
    "group",
    "message",
    "evidence",
    "remediation",
]

# Remediation ids the planner understands; anything else in `remediation` is a hint for a person.
PREFERRED_LEADER_ELECTION = "preferred_leader_election"
ROLLING_RESTART = "rolling_restart"
OFFSET_RESET = "offset_reset"

Value = Column | str | int | float | None


def _col(value: Value, cast: str | None = None) -> Column:
    col = value if isinstance(value, Column) else F.lit(value)
    return col.cast(cast) if cast else col


def finding_rows(
    df: DataFrame,
    *,
    check: str,
    severity: Severity | Column,
    kind: SubjectKind,
    message: Column,
    evidence: Mapping[str, Column],
    remediation: Value = None,
    broker: Value = None,
    topic: Value = None,
    partition: Value = None,
    group: Value = None,
) -> DataFrame:
    """Shape `df` (one row per problem) into finding rows; evidence becomes a JSON object."""
    sev = F.lit(severity.value) if isinstance(severity, Severity) else severity
    evidence_json = (
        F.to_json(F.struct(*[c.alias(k) for k, c in evidence.items()]), {"ignoreNullFields": "false"})
        if evidence
        else F.lit("{}")
    )
    return df.select(
        F.lit(check).alias("check"),
        sev.cast("string").alias("severity"),
        F.lit(kind.value).alias("subject_kind"),
        _col(broker, "int").alias("broker"),
        _col(topic, "string").alias("topic"),
        _col(partition, "int").alias("partition"),
        _col(group, "string").alias("group"),
        message.cast("string").alias("message"),
        evidence_json.alias("evidence"),
        _col(remediation, "string").alias("remediation"),
    )


def severity_rank(col: Column) -> Column:
    return F.when(col == Severity.CRITICAL.value, 2).when(col == Severity.WARNING.value, 1).otherwise(0)


def capped(rows: DataFrame, cap: int) -> DataFrame:
    """Keep the `cap` worst rows per check (then by subject), each row carrying its check's total."""
    total, rank, kept = _cap_columns(cap, type(rows).__module__, jvm_generation())
    return rows.withColumn("check_total", total).withColumn("rank", rank).where(kept)


def worst_first(rows: DataFrame, limit: int) -> DataFrame:
    """The `limit` worst rows, in the capping order: Spark keeps a top `limit` per task and merges
    them on the driver, with no shuffle and no sort of the rest."""
    return rows.orderBy(*_worst_first_order(type(rows).__module__, jvm_generation())).limit(limit)


@functools.cache
def _worst_first_order(_frame_kind: str, _jvm: int) -> tuple[Column, ...]:
    """The capping order (worst severity, then subject), built once per driver JVM (and kind of
    session), as `_cap_columns` is."""
    return (
        severity_rank(F.col("severity")).desc(),
        F.col("topic").asc_nulls_first(),
        F.col("partition").asc_nulls_first(),
        F.col("group").asc_nulls_first(),
        F.col("broker").asc_nulls_first(),
    )


@functools.cache
def _cap_columns(cap: int, _frame_kind: str, _jvm: int) -> tuple[Column, Column, Column]:
    """The capping columns, built once per driver JVM (and kind of session): they name columns
    only, so every check's rows can reuse them, and building them took ~70 Py4J round trips
    per check and cycle."""
    per_check = Window.partitionBy("check")
    order = Window.partitionBy("check").orderBy(*_worst_first_order(_frame_kind, _jvm))
    return F.count(F.lit(1)).over(per_check), F.row_number().over(order), F.col("rank") <= cap


def to_finding(row: Mapping[str, Any]) -> Finding:
    evidence = json.loads(str(row["evidence"])) if row["evidence"] else {}
    return Finding(
        check=str(row["check"]),
        severity=Severity(str(row["severity"])),
        subject=Subject(
            kind=SubjectKind(str(row["subject_kind"])),
            broker=row["broker"],
            topic=row["topic"],
            partition=row["partition"],
            group=row["group"],
        ),
        message=str(row["message"]),
        evidence=evidence,
        remediation=row["remediation"],
    )


# The checks (by cluster and check) whose rows last came to more than their cap: their plan goes
# straight to `capped` next time, instead of a top k that would come back full and run again.
# Kept per process, bounded; a wrong guess costs one extra run of a plan, never a finding.
_OVERFLOWED: dict[tuple[str, str], bool] = {}
_OVERFLOWED_MAX = 4096


Collected = list[dict[str, Any]]


def _collect(rows: DataFrame) -> Collected:
    return [r.asDict() for r in rows.collect()]


def capped_rows(
    rows: DataFrame, cap: int, key: tuple[str, str] | None = None, *, top_k: bool = True
) -> Collected:
    """Run a check's plan and bring back its worst `cap` rows per check (see `choose_capped`)."""
    return choose_capped(
        lambda: _collect(worst_first(rows, cap + 1)),
        lambda: _collect(capped(rows, cap)),
        cap,
        key,
        top_k=top_k,
    )


def choose_capped(
    top: Callable[[], Collected],
    exact: Callable[[], Collected],
    cap: int,
    key: tuple[str, str] | None = None,
    *,
    top_k: bool = True,
) -> Collected:
    """A check's worst `cap` rows per check, from `top` (its plan run as a top `cap + 1`) or
    `exact` (its plan run through `capped`).

    Most checks find fewer rows than `cap`, so their plan runs once as a top `cap + 1` (one stage
    fewer than a window over the check's rows: no shuffle, no sort). When more come back the plan
    is run through `capped`, which counts and ranks each check's rows exactly (a plan may hold more
    than one check, as the quorum's voters and observers); its rows carry `check_total`. A check
    that came to more than `cap` last time (`key`: its cluster and name) goes to `capped` at once,
    so many findings do not run the plan twice every cycle. Without `top_k` (a cluster above
    `frames.SMALL_CLUSTER_PARTITIONS`, where the top k is not yet shown to pay) every plan goes to
    `capped`.
    """
    if not top_k or (key is not None and _OVERFLOWED.get(key)):
        collected = exact()
        overflowed = any(int(r["check_total"]) > cap for r in collected)
    else:
        collected = top()
        overflowed = len(collected) > cap
        if overflowed:
            collected = exact()
    if key is not None:
        if len(_OVERFLOWED) >= _OVERFLOWED_MAX and key not in _OVERFLOWED:
            _OVERFLOWED.clear()
        _OVERFLOWED[key] = overflowed
    return collected


def collect_findings(
    rows: DataFrame, cap: int, key: tuple[str, str] | None = None, *, top_k: bool = True
) -> list[Finding]:
    """Run a check's plan, and turn its capped rows into findings, worst first.

    A check with more rows than `cap` gets one extra cluster-level finding saying how many
    were left out, so a truncated list never reads as the whole story.
    """
    return findings_from(capped_rows(rows, cap, key, top_k=top_k), cap)


def findings_from(collected: Collected, cap: int) -> list[Finding]:
    """A check's capped rows as findings, worst first, plus one cluster-level finding per check
    that had more rows than `cap` (see `collect_findings`)."""
    out = [to_finding(r) for r in collected]
    totals: dict[str, tuple[int, Severity]] = {}
    for r, f in zip(collected, out, strict=True):
        total = int(r.get("check_total") or 0)
        if total > cap:
            worst = totals.get(f.check, (total, f.severity))[1]
            totals[f.check] = (total, max(worst, f.severity, key=lambda s: s.rank))
    for check, (total, severity) in sorted(totals.items()):
        out.append(
            Finding(
                check=check,
                severity=severity,
                subject=Subject(kind=SubjectKind.CLUSTER),
                message=f"{total} findings of {check} in total; only the {cap} worst are listed.",
                evidence={"total": total, "listed": cap},
            )
        )
    return sort_findings(out)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Worst first, then by check and subject (partitions in numeric order)."""

    def key(f: Finding) -> tuple[object, ...]:
        s = f.subject
        return (
            -f.severity.rank,
            f.check,
            s.kind.value,
            s.topic or "",
            -1 if s.partition is None else s.partition,
            s.group or "",
            -1 if s.broker is None else s.broker,
        )

    return sorted(findings, key=key)
