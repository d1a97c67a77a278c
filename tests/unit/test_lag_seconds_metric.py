"""kafka_health_consumer_lag_seconds: what the cycle report takes from the diagnosis's summary,
and the series the handler keeps (replaced each cycle; untouched without a summary; gone with
the policy)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kafka_health.controller.cycle_report import CycleMetrics, CycleReport, Reported, report_cycle
from kafka_health.controller.handlers import apply_report
from kafka_health.models.findings import Diagnosis, DiagnosisSummary, GroupTopicLag
from kafka_health.report import metrics
from kafka_health.report.status import CycleOutcome

T0 = datetime(2026, 11, 29, tzinfo=UTC)


def _series() -> dict[tuple[str, ...], float]:
    family = next(iter(metrics.CONSUMER_LAG_SECONDS.collect()))
    return {tuple(s.labels.values()): s.value for s in family.samples}


def _apply(lag: dict[tuple[str, str, str], float] | None) -> None:
    report = CycleReport(metrics=CycleMetrics(duration_s=1, result="ok", degraded=False, lag_seconds=lag))
    apply_report(None, "ns", "lag-test", report)


def test_the_report_takes_each_group_and_topic_from_the_summary() -> None:
    summary = DiagnosisSummary(
        lag_seconds=[
            GroupTopicLag(group="billing", topic="orders", kind="consumer", seconds=42.5),
            GroupTopicLag(group="audit", topic="orders", kind="classic", seconds=1800.0, lower_bound=True),
        ]
    )
    outcome = CycleOutcome(diagnosis=Diagnosis(cluster="c", taken_at=T0, summary=summary))
    report = report_cycle(
        Reported(), outcome, written=None, duration_s=1, interval=timedelta(seconds=30), now=T0, unix_now=0
    )
    assert report.metrics.lag_seconds == {
        ("billing", "orders", "consumer"): 42.5,
        ("audit", "orders", "classic"): 1800.0,
    }
    no_summary = CycleOutcome(diagnosis=Diagnosis(cluster="c", taken_at=T0))
    report = report_cycle(
        Reported(), no_summary, written=None, duration_s=1, interval=timedelta(seconds=30), now=T0, unix_now=0
    )
    assert report.metrics.lag_seconds is None


def test_the_series_follow_the_latest_cycle() -> None:
    _apply({("billing", "orders", "consumer"): 42.5, ("audit", "orders", "classic"): 7.0})
    assert _series()[("ns", "lag-test", "billing", "orders", "consumer")] == 42.5
    assert _series()[("ns", "lag-test", "audit", "orders", "classic")] == 7.0
    _apply({("billing", "orders", "consumer"): 50.0})  # audit gone (deleted, or nothing committed)
    assert _series()[("ns", "lag-test", "billing", "orders", "consumer")] == 50.0
    assert ("ns", "lag-test", "audit", "orders", "classic") not in _series()
    _apply(None)  # a cycle without a summary leaves the series as they are
    assert _series()[("ns", "lag-test", "billing", "orders", "consumer")] == 50.0
    metrics.forget_policy("ns", "lag-test")
    assert not [k for k in _series() if k[:2] == ("ns", "lag-test")]
