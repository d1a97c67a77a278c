"""The reassignment gauges: what the cycle report takes from the reassignment incident, and the
series the handler keeps (replaced each cycle, gone when nothing is known)."""

from __future__ import annotations

from datetime import UTC, datetime

from kafka_health.controller.cycle_report import CycleMetrics, CycleReport
from kafka_health.controller.cycle_report import _reassignment_figures as figures
from kafka_health.controller.handlers import apply_report
from kafka_health.models.findings import Diagnosis, Incident, IncidentKind, Severity, Subject, SubjectKind
from kafka_health.report import metrics

T0 = datetime(2026, 11, 28, tzinfo=UTC)


def _diagnosis(**evidence: float | int | str | None) -> Diagnosis:
    moving = Incident(
        id="reassignment:cluster",
        kind=IncidentKind.REASSIGNMENT,
        severity=Severity.INFO,
        subject=Subject(kind=SubjectKind.CLUSTER),
        title="moving",
        evidence=evidence,
        remediation="",
    )
    return Diagnosis(cluster="c", taken_at=T0, incidents=[moving])


def test_the_figures_are_the_incidents_known_ones() -> None:
    assert figures(_diagnosis(left_bytes=5000, eta_seconds=120)) == {
        "remaining_bytes": 5000.0,
        "eta_seconds": 120.0,
    }
    assert figures(_diagnosis(left_bytes=5000, eta_seconds=None)) == {"remaining_bytes": 5000.0}
    assert figures(Diagnosis(cluster="c", taken_at=T0)) == {}


def _series(gauge: object) -> dict[tuple[str, ...], float]:
    return {
        tuple(s.labels.values()): s.value
        for s in next(iter(gauge.collect())).samples  # type: ignore[attr-defined]
    }


def test_the_series_follow_the_latest_cycle() -> None:
    def apply(reassignment: dict[str, float]) -> None:
        report = CycleReport(
            metrics=CycleMetrics(duration_s=1, result="ok", degraded=False, reassignment=reassignment)
        )
        apply_report(None, "ns", "moving-test", report)

    apply({"remaining_bytes": 5000.0, "eta_seconds": 120.0})
    assert _series(metrics.REASSIGNMENT_REMAINING)[("ns", "moving-test")] == 5000.0
    assert _series(metrics.REASSIGNMENT_ETA)[("ns", "moving-test")] == 120.0
    apply({"remaining_bytes": 3000.0})  # no ETA this cycle: its series goes
    assert _series(metrics.REASSIGNMENT_REMAINING)[("ns", "moving-test")] == 3000.0
    assert ("ns", "moving-test") not in _series(metrics.REASSIGNMENT_ETA)
    apply({})  # completed
    assert ("ns", "moving-test") not in _series(metrics.REASSIGNMENT_REMAINING)
