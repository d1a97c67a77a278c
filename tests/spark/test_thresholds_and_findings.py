"""Threshold overrides, and the cap that keeps a huge cluster's findings small."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark import findings as findings_module
from kafka_health_spark.checks import replication
from kafka_health_spark.findings import capped_rows, collect_findings, worst_first
from kafka_health_spark.thresholds import ThresholdError, Thresholds, parse_overrides
from tests.spark.builders import brokers, check_findings, part, snapshot


def test_overrides_are_validated_and_coerced() -> None:
    t = Thresholds().with_overrides(parse_overrides(["disk_warn_percent=70", "window_minutes = 15"]))
    assert t.disk_warn_percent == 70.0 and t.window_minutes == 15.0
    assert Thresholds().disk_warn_percent == 80  # the defaults are untouched


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["disk_warn=70"], "unknown threshold"),
        (["disk_warn_percent=lots"], "disk_warn_percent"),
        (["disk_warn_percent=170"], "less than or equal to 100"),
        (["no-equals-sign"], "NAME=VALUE"),
    ],
)
def test_bad_overrides_say_what_is_wrong(items: list[str], message: str) -> None:
    with pytest.raises(ThresholdError, match=message):
        Thresholds().with_overrides(parse_overrides(items))


@pytest.mark.spark
def test_findings_beyond_the_cap_are_counted_not_listed(spark: SparkSession) -> None:
    parts = [part("t", p, 0, [0, 1, 2], [0]) for p in range(12)]
    snap = snapshot(partitions=parts, broker_list=brokers(0, dead=(1, 2)))
    found = check_findings(spark, replication.under_replicated, snap, max_findings_per_check=5)
    listed = [f for f in found if f.subject.kind is SubjectKind.PARTITION]
    (summary,) = [f for f in found if f.subject.kind is SubjectKind.CLUSTER]
    assert [f.subject.partition for f in listed] == [0, 1, 2, 3, 4]
    assert summary.evidence == {"total": 12, "listed": 5}
    assert summary.severity is Severity.WARNING


def test_defaults_have_their_declared_types() -> None:
    # Spark's format_string("%f") rejects an int: a float threshold must be a float even by default.
    t = Thresholds()
    for name, field in Thresholds.model_fields.items():
        assert isinstance(getattr(t, name), field.annotation), name  # type: ignore[arg-type]


FINDING_SCHEMA = (
    "check string, severity string, subject_kind string, broker int, topic string, partition int, "
    "`group` string, message string, evidence string, remediation string"
)


def _rows(spark: SparkSession, checks: list[tuple[str, int]]) -> DataFrame:
    return spark.createDataFrame(
        [
            (check, "warning", "partition", None, "t", p, None, f"{check} {p}", "{}", None)
            for check, n in checks
            for p in range(n)
        ],
        FINDING_SCHEMA,
    )


@pytest.mark.spark
def test_a_check_under_the_cap_runs_as_a_top_k_without_a_shuffle(spark: SparkSession) -> None:
    plan = worst_first(_rows(spark, [("a", 3)]), 4)._jdf.queryExecution().executedPlan().toString()
    assert "TakeOrderedAndProject" in plan and "Exchange" not in plan, plan
    found = collect_findings(_rows(spark, [("a", 3)]), 3)
    assert [f.subject.partition for f in found] == [0, 1, 2]
    assert all(f.subject.kind is SubjectKind.PARTITION for f in found), "at the cap: no summary finding"


@pytest.mark.spark
def test_a_plan_holding_two_checks_is_capped_per_check(spark: SparkSession) -> None:
    """Over the cap in all, the rows are capped and counted per check (as the quorum's voters and
    observers share one plan), not cut at the worst `cap` of both."""
    found = collect_findings(_rows(spark, [("a", 3), ("b", 2)]), 2)
    listed = sorted((f.check, f.subject.partition) for f in found if f.subject.kind is SubjectKind.PARTITION)
    assert listed == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    (summary,) = [f for f in found if f.subject.kind is SubjectKind.CLUSTER]
    assert (summary.check, summary.evidence) == ("a", {"total": 3, "listed": 2})


@pytest.mark.spark
def test_a_check_that_overflowed_goes_straight_to_the_window_and_back(spark: SparkSession) -> None:
    """A check over its cap last time is capped through the window at once (one run of its plan,
    not a full top k and then the window); once under its cap again it is a top k again."""
    key = ("cluster-a", "check-a")
    collect_findings(_rows(spark, [("a", 3)]), 2, key)
    assert findings_module._OVERFLOWED[key] is True
    found = collect_findings(_rows(spark, [("a", 3)]), 2, key)
    assert [f.evidence for f in found if f.subject.kind is SubjectKind.CLUSTER] == [{"total": 3, "listed": 2}]
    found = collect_findings(_rows(spark, [("a", 1)]), 2, key)
    assert [f.subject.partition for f in found] == [0] and findings_module._OVERFLOWED[key] is False


@pytest.mark.spark
def test_without_top_k_every_plan_is_capped_through_the_window(spark: SparkSession) -> None:
    rows = capped_rows(_rows(spark, [("a", 1)]), 2, top_k=False)
    assert [(r["partition"], r["check_total"]) for r in rows] == [(0, 1)], "ranked and counted by the window"
    rows = capped_rows(_rows(spark, [("a", 1)]), 2)
    assert [r["partition"] for r in rows] == [0] and "check_total" not in rows[0], "a top k"
