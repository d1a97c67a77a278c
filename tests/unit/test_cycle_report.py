"""The cycle's Events as its report stage returns them for the handler to post (issue 12, item 5): late news says when it is
from, SlowCycle is posted when cycles become slow and not once per slow cycle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kafka_health.controller.cycle import PolicyWorker
from kafka_health.controller.cycle_report import log_cycle, report_cycle
from kafka_health.models.findings import Diagnosis, Finding, Severity, Subject, SubjectKind
from kafka_health.models.policy import LastDiagnosis
from kafka_health.models.reasons import EventReason, ProblemReason
from kafka_health.report import events
from kafka_health.report.status import CycleOutcome, Problem

INTERVAL = timedelta(seconds=60)  # spec.diagnostics.interval


@pytest.fixture
def posted() -> list[events.EventSpec]:
    return []


def _worker() -> PolicyWorker:
    return PolicyWorker(runtime=None, namespace="ns", name="p")  # type: ignore[arg-type]


def _cycle(
    worker: PolicyWorker,
    posted: list[events.EventSpec],
    *,
    age_s: float,
    took_s: float,
    broker: int | None = 1,
) -> None:
    """One cycle's report: a snapshot `age_s` old now, whose status said it took `took_s`."""
    taken_at = datetime.now(UTC) - timedelta(seconds=age_s)
    findings = []
    if broker is not None:
        findings.append(
            Finding(
                check="broker_missing",
                severity=Severity.CRITICAL,
                subject=Subject(kind=SubjectKind.BROKER, broker=broker),
                message=f"broker {broker} is not registered",
            )
        )
    diagnosis = Diagnosis(cluster="c", taken_at=taken_at, findings=findings)
    written = LastDiagnosis(at=taken_at, duration_seconds=took_s, interval_seconds=60.0, slow=took_s > 60)
    report = report_cycle(
        worker.reported,
        CycleOutcome(diagnosis=diagnosis),
        written=written,
        duration_s=took_s,
        interval=INTERVAL,
        now=datetime.now(UTC),
        unix_now=0.0,
    )
    worker.reported = report.reported
    posted.extend(report.events)


def test_late_news_carries_its_time_and_is_not_new(posted: list[events.EventSpec]) -> None:
    worker = _worker()
    _cycle(worker, posted, age_s=140, took_s=140)
    slow = [e for e in posted if e.reason == EventReason.SLOW_CYCLE]
    news = [e for e in posted if e.reason != EventReason.SLOW_CYCLE]
    assert len(slow) == 1 and slow[0].type == "Warning"
    assert news, posted
    for event in news:
        assert event.message.startswith("as of "), event.message
        assert "ago): " in event.message and " new " not in event.message


def test_fresh_news_has_no_time(posted: list[events.EventSpec]) -> None:
    worker = _worker()
    _cycle(worker, posted, age_s=3, took_s=3)
    assert posted and all(not e.message.startswith("as of ") for e in posted)
    assert not any(e.reason == EventReason.SLOW_CYCLE for e in posted)


def test_slow_cycle_is_posted_on_the_change_only(posted: list[events.EventSpec]) -> None:
    worker = _worker()
    sequence = [(140, True), (150, False), (5, False), (90, True), (61, False)]
    for took, expect in sequence:
        posted.clear()
        _cycle(worker, posted, age_s=took, took_s=took, broker=None)
        assert any(e.reason == EventReason.SLOW_CYCLE for e in posted) is expect, took


def test_a_problem_is_posted_when_it_starts_or_changes_and_its_end_is_recovered() -> None:
    """Typed `Reported`: a problem posts one Warning while its reason stays, another when the
    reason changes, and the next diagnosis posts Recovered first (no incident was open)."""
    worker = _worker()

    def report(outcome: CycleOutcome) -> list[tuple[str, str]]:
        out = report_cycle(
            worker.reported,
            outcome,
            written=None,
            duration_s=1.0,
            interval=INTERVAL,
            now=datetime.now(UTC),
            unix_now=0.0,
        )
        worker.reported = out.reported
        assert out.metrics.degraded is (outcome.problem is not None)
        return [(e.type, e.reason) for e in out.events]

    unreachable = CycleOutcome(problem=Problem("KafkaUnreachable", "no answer"))
    assert report(unreachable) == [("Warning", "KafkaUnreachable")]
    assert report(unreachable) == []
    assert report(CycleOutcome(problem=Problem("InvalidSpec", "bad"))) == [("Warning", "InvalidSpec")]
    healthy = Diagnosis(cluster="c", taken_at=datetime.now(UTC), findings=[])
    assert report(CycleOutcome(diagnosis=healthy)) == [("Normal", EventReason.RECOVERED)]
    assert report(CycleOutcome(diagnosis=healthy)) == []
    assert report(unreachable) == [("Warning", "KafkaUnreachable")]


def test_the_cycle_log_line_shows_what_each_seeing_stage_took(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="kafka_health.controller.cycle_report")
    stages = (("collect", 1.25), ("history", 0.04), ("diagnose", 22.3))
    log_cycle(
        "ns", "p", CycleOutcome(diagnosis=Diagnosis(cluster="c", taken_at=datetime.now(UTC))), 23.6, stages
    )
    unreachable = CycleOutcome(problem=Problem(ProblemReason.KAFKA_UNREACHABLE, "no broker answered"))
    log_cycle("ns", "p", unreachable, 9.0, (("collect", 9.0),))
    log_cycle("ns", "p", unreachable, 0.5)
    assert [r.getMessage() for r in caplog.records] == [
        "cycle ns/p: 0 incidents, 0 findings in 23.6s (collect 1.2s, history 0.0s, diagnose 22.3s)",
        f"cycle ns/p: {ProblemReason.KAFKA_UNREACHABLE} in 9.0s (collect 9.0s)",
        f"cycle ns/p: {ProblemReason.KAFKA_UNREACHABLE} in 0.5s",
    ]
