"""The report stage of a cycle, as values: the Events to post and the metric updates, built
from what the cycle saw and what the previous cycles reported (`Reported`). Pure: the Kopf
handler applies them (`handlers.apply_report`).

Events are posted on changes only: an incident when it opens or resolves, a problem when it
starts or its reason changes, Recovered when a problem ends, SlowCycle when cycles become slow.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import KafkaHealthPolicyStatus, LastDiagnosis
from kafka_health.models.reasons import EventReason
from kafka_health.report import events
from kafka_health.report.events import EventSpec
from kafka_health.report.freshness import Freshness, slow_cycle_event
from kafka_health.report.status import CycleOutcome, Problem

log = logging.getLogger(__name__)

IncidentId = str
"""An incident's id (`broker_down:2`): stable while its cause persists (diagnose/incidents.py)."""


@dataclass(frozen=True)
class Reported:
    """What the cycles so far reported, which the next report compares with."""

    incidents: frozenset[IncidentId] | None = None
    """The incidents posted as open (None: nothing reported since the daemon started, so the
    first diagnosis posts what is wrong now, once)."""
    problem: str | None = None
    """The reason of the problem the last cycle reported (None: it diagnosed the cluster)."""
    slow: bool | None = None
    """Whether the last reported cycle was slow (None: none reported yet); SlowCycle is posted on
    the change to slow."""
    last_diagnosis: LastDiagnosis | None = None
    """status.lastDiagnosis as the latest cycle wrote it (None when it diagnosed nothing)."""


@dataclass(frozen=True)
class CycleMetrics:
    """The metric updates of one cycle (report/metrics.py names them)."""

    duration_s: float
    result: Literal["ok", "problem"]
    degraded: bool
    diagnosed_at: float | None = None
    """Unix time of a cycle that diagnosed (kafka_health_last_success_timestamp_seconds)."""
    healthy: bool | None = None
    findings: Mapping[tuple[str, str], int] | None = None
    """(check, severity) → count; the policy's series are replaced by these (None: untouched)."""
    certificates: Mapping[int, float] | None = None
    """Broker → Unix time its served certificate chain ends; replaced like `findings`."""
    reassignment: Mapping[str, float] | None = None
    """The reassignments in flight: `remaining_bytes`, `eta_seconds` (each when known); replaced
    like `findings`."""
    lag_seconds: Mapping[tuple[str, str, str], float] | None = None
    """(group, topic, group kind) → the group's largest lag in seconds on it; replaced like `findings` (None:
    the diagnosis has no summary)."""


@dataclass(frozen=True)
class CycleReport:
    """What a cycle hands back to the Kopf handler to apply, and what it reported for the next."""

    metrics: CycleMetrics
    events: tuple[EventSpec, ...] = ()
    reported: Reported = field(default_factory=Reported)
    status: KafkaHealthPolicyStatus | None = None
    """The status the cycle wrote (None when the policy was deleted meanwhile)."""


def report_cycle(
    before: Reported,
    outcome: CycleOutcome,
    *,
    written: LastDiagnosis | None,
    duration_s: float,
    interval: timedelta,
    now: datetime,
    unix_now: float,
    status: KafkaHealthPolicyStatus | None = None,
) -> CycleReport:
    """The cycle's Events and metrics. `written`: status.lastDiagnosis as this cycle wrote it;
    `interval`: spec.diagnostics.interval (late news and slow cycles are measured against it)."""
    diagnosis = outcome.diagnosis
    ok = diagnosis is not None and outcome.problem is None
    metrics = CycleMetrics(
        duration_s=duration_s,
        result="ok" if ok else "problem",
        degraded=bool(outcome.problem or outcome.remediation_blockers),
    )
    if outcome.problem is not None:
        return _problem_report(before, outcome.problem, metrics, written, status)
    if diagnosis is None:
        return CycleReport(metrics=metrics, reported=before, status=status)
    metrics = replace(
        metrics,
        diagnosed_at=unix_now,
        healthy=diagnosis.exit_code() == 0,
        findings=Counter((f.check, f.severity.value) for f in diagnosis.findings),
        certificates={b: t.timestamp() for b, t in diagnosis.certificates_not_after.items()},
        reassignment=_reassignment_figures(diagnosis),
        lag_seconds=(
            {(g.group, g.topic, g.kind): g.seconds for g in diagnosis.summary.lag_seconds}
            if diagnosis.summary is not None
            else None
        ),
    )
    to_post, reported = _diagnosis_events(before, diagnosis, written, interval, now)
    return CycleReport(metrics=metrics, events=tuple(to_post), reported=reported, status=status)


def _reassignment_figures(diagnosis: Diagnosis) -> dict[str, float]:
    """The reassignment incident's bytes left and ETA, those it knows."""
    moving = next((i for i in diagnosis.incidents if i.id == "reassignment:cluster"), None)
    if moving is None:
        return {}
    figures = {
        "remaining_bytes": moving.evidence.get("left_bytes"),
        "eta_seconds": moving.evidence.get("eta_seconds"),
    }
    return {k: float(v) for k, v in figures.items() if isinstance(v, int | float)}


def _problem_report(
    before: Reported,
    problem: Problem,
    metrics: CycleMetrics,
    written: LastDiagnosis | None,
    status: KafkaHealthPolicyStatus | None,
) -> CycleReport:
    """A problem is posted when it starts or its reason changes, not every cycle it stays."""
    to_post = (
        () if before.problem == problem.reason else (EventSpec("Warning", problem.reason, problem.message),)
    )
    reported = replace(before, incidents=frozenset(), problem=problem.reason, last_diagnosis=written)
    return CycleReport(metrics=metrics, events=to_post, reported=reported, status=status)


def _diagnosis_events(
    before: Reported, diagnosis: Diagnosis, written: LastDiagnosis | None, interval: timedelta, now: datetime
) -> tuple[list[EventSpec], Reported]:
    """Incidents opened and resolved since the last report, Recovered after a problem, SlowCycle
    on the change to slow; news from a snapshot older than one interval says so (freshness.py)."""
    fresh = Freshness(diagnosis.taken_at, now, interval)
    to_post, ids = events.incident_events(
        None if before.incidents is None else set(before.incidents), diagnosis, late=fresh.late
    )
    if before.problem is not None:
        to_post.insert(
            0,
            EventSpec("Normal", EventReason.RECOVERED, "The cluster is readable and diagnosed again."),
        )
    to_post = [replace(event, message=fresh.news(event.message)) for event in to_post]
    slow = before.slow
    if written is not None and written.slow is not None and written.duration_seconds is not None:
        slow_event = slow_cycle_event(
            before.slow, timedelta(seconds=written.duration_seconds), interval, diagnosis.taken_at
        )
        slow = written.slow
        if slow_event is not None:
            to_post.insert(0, slow_event)
    return to_post, Reported(incidents=frozenset(ids), problem=None, slow=slow, last_diagnosis=written)


def log_cycle(
    namespace: str,
    name: str,
    outcome: CycleOutcome,
    duration_s: float,
    stage_seconds: Sequence[tuple[str, float]] = (),
) -> None:
    """One line per cycle in the operator's log, with what each seeing stage took."""
    stages = ", ".join(f"{stage} {seconds:.1f}s" for stage, seconds in stage_seconds)
    took = f"{duration_s:.1f}s ({stages})" if stages else f"{duration_s:.1f}s"
    if outcome.problem is not None:
        log.info("cycle %s/%s: %s in %s", namespace, name, outcome.problem.reason, took)
    elif outcome.diagnosis is not None:
        log.info(
            "cycle %s/%s: %d incidents, %d findings in %s",
            namespace,
            name,
            len(outcome.diagnosis.incidents),
            len(outcome.diagnosis.findings),
            took,
        )
