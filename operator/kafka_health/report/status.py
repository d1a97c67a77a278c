"""The status a cycle reports: conditions by Kubernetes conventions, health, top findings.

Pure functions of the previous status, what the cycle saw, and the clock. `lastTransitionTime`
moves only when a condition's status changes, so `kubectl get -w` and alerting on transitions
see real changes, not every cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from kafka_health.diagnose.incidents import incidents_of
from kafka_health.diagnose.planned import Planned, unexpected_missing, worst_unplanned
from kafka_health.models.findings import Diagnosis, Finding, Incident, IncidentKind, Severity
from kafka_health.models.policy import (
    MAX_TOP_INCIDENTS,
    Condition,
    ConditionStatus,
    ConditionType,
    FindingSummary,
    Health,
    IncidentSummary,
    KafkaHealthPolicyStatus,
    LastDiagnosis,
)
from kafka_health.models.reasons import DegradedReason, StateReason, checked
from kafka_health.report.freshness import is_slow, slow_cycle_message

HALTED = DegradedReason.REMEDIATION_HALTED
"""The Degraded reason of a halted roll; it stays until the spec changes (a new generation)."""


@dataclass(frozen=True)
class Problem:
    """Why a cycle could not do its job: a CamelCase reason and a message naming the fix."""

    reason: str
    message: str


@dataclass(frozen=True)
class CycleOutcome:
    """What one cycle saw: a diagnosis (possibly of a partly readable cluster), or a problem
    that stopped it before diagnosing, plus problems that block remediation only."""

    diagnosis: Diagnosis | None = None
    problem: Problem | None = None
    remediation_blockers: tuple[Problem, ...] = ()
    planned: Planned | None = None
    """Brokers the operator's roll was restarting while the snapshot was read: their log dirs
    are expected unread (kafka_health.diagnose.planned), not a reason for Degraded."""


def set_condition(
    conditions: list[Condition],
    type_: ConditionType,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: datetime,
    generation: int | None,
) -> list[Condition]:
    """`conditions` with `type_` set; lastTransitionTime kept while the status is unchanged."""
    checked(reason)
    previous = next((c for c in conditions if c.type == type_), None)
    since = previous.last_transition_time if previous is not None and previous.status == status else now
    updated = Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=since,
        observed_generation=generation,
    )
    return [c for c in conditions if c.type != type_] + [updated]


def health_of(diagnosis: Diagnosis | None) -> Health:
    """Not counting what a planned restart explains (kafka_health.diagnose.planned)."""
    if diagnosis is None:
        return Health.UNKNOWN
    worst = worst_unplanned(diagnosis)
    if worst is Severity.CRITICAL:
        return Health.CRITICAL
    if worst is Severity.WARNING:
        return Health.WARNING
    return Health.HEALTHY


def summarize_finding(f: Finding, observed_at: datetime | None = None) -> FindingSummary:
    return FindingSummary(
        observed_at=observed_at,
        check=f.check,
        severity=f.severity.value,
        subject=f.subject.key(),
        message=f.message,
        remediation=f.remediation,
        evidence={k: str(v) for k, v in f.evidence.items()} or None,
    )


def _healthy_condition(diagnosis: Diagnosis) -> tuple[ConditionStatus, str, str]:
    worst = worst_unplanned(diagnosis)
    if worst is None or worst is Severity.INFO:
        planned = [i for i in incidents_of(diagnosis) if i.kind is IncidentKind.PLANNED_RESTART]
        if planned and diagnosis.worst not in (None, Severity.INFO):
            return (
                ConditionStatus.TRUE,
                StateReason.PLANNED_RESTART,
                f"No warnings but what a planned restart explains: {planned[0].id}: {planned[0].title}",
            )
        return ConditionStatus.TRUE, StateReason.NO_PROBLEMS_FOUND, "The latest diagnosis found no warnings."
    counts = _counts(diagnosis)
    incidents = incidents_of(diagnosis)
    reason = StateReason.CRITICAL_FINDINGS if worst is Severity.CRITICAL else StateReason.WARNING_FINDINGS
    n = len(incidents)
    return (
        ConditionStatus.FALSE,
        reason,
        f"{n} incident{'' if n == 1 else 's'} ({counts['critical']} critical, {counts['warning']} warning "
        f"findings); worst: {incidents[0].id}: {incidents[0].title}",
    )


def _planned(planned: Planned) -> str:
    """Degraded=False's message while a roll restarts brokers on request."""
    p = [planned[b] for b in sorted(planned)]
    who = ", ".join(f"broker {x.broker} by rolling restart {x.request_id}" for x in p)
    return (
        f"Restarting on request: {who}. The absence of a broker being restarted, its unread "
        "log dirs, the unread offsets of partitions on it and the groups it coordinates are "
        "expected; nothing else is unreadable, and the operator can do its job."
    )


def denied_view(diagnosis: Diagnosis) -> str | None:
    """Why the principal's view of the cluster is partial because of authorization (Ready=False,
    KafkaAuthorizationDenied), or None: the `visibility` finding first (what is hidden, or the
    totals that cannot be checked), else the first part an ACL kept from being read."""
    denied = [
        f
        for f in diagnosis.findings
        if f.check in ("visibility", "snapshot_incomplete")
        and str(f.evidence.get("reason", f.message)).lower().startswith("authorization denied")
    ]
    if not denied:
        return None
    first = min(denied, key=lambda f: f.check != "visibility")
    if first.check == "visibility":
        text = first.message
    else:
        text = f"Could not read {first.evidence.get('part')}: {first.evidence.get('reason')}"
    more = len(denied) - 1
    return (text + (f" (and {more} more part{'' if more == 1 else 's'} denied)" if more else ""))[:1000]


def summarize_incident(i: Incident) -> IncidentSummary:
    return IncidentSummary(
        id=i.id[:300],
        severity=i.severity.value,
        title=i.title[:1024],
        remediation=i.remediation[:1024],
        findings=len(i.findings),
        partitions=i.partitions_total,
        groups=i.groups_total,
    )


def _counts(diagnosis: Diagnosis) -> dict[str, int]:
    out = {"critical": 0, "warning": 0, "info": 0}
    for f in diagnosis.findings:
        out[f.severity.value] += 1
    return out


@dataclass
class _Conditions:
    """The conditions being set by one cycle (`set_condition` with its clock and generation)."""

    items: list[Condition]
    now: datetime
    generation: int | None

    def set(self, t: ConditionType, s: ConditionStatus, reason: str, message: str) -> None:
        self.items = set_condition(self.items, t, s, reason, message, self.now, self.generation)

    def halted(self) -> bool:
        """A halted roll's Degraded of this generation: it stays until the spec changes."""
        return any(
            c.type == ConditionType.DEGRADED
            and c.status == ConditionStatus.TRUE
            and c.reason == HALTED
            and c.observed_generation == self.generation
            for c in self.items
        )


_ORDER = [ConditionType.READY, ConditionType.HEALTHY, ConditionType.DEGRADED, ConditionType.REMEDIATING]


def status_after_cycle(
    previous: KafkaHealthPolicyStatus,
    outcome: CycleOutcome,
    *,
    now: datetime,
    generation: int | None,
    top_n: int,
    interval: timedelta | None = None,
) -> KafkaHealthPolicyStatus:
    """The new status (diagnosis parts only; remediation fields are carried over untouched).
    `interval`: spec.diagnostics.interval; a cycle longer than it (from the snapshot to `now`) is
    slow: Ready=True with reason SlowCycle, lastDiagnosis.slow (report/freshness.py)."""
    conditions = _Conditions(list(previous.conditions or []), now, generation)
    status = previous.model_copy(deep=True)
    status.observed_generation = generation
    diagnosis = outcome.diagnosis
    if outcome.problem is not None:
        p = outcome.problem
        conditions.set(ConditionType.READY, ConditionStatus.FALSE, p.reason, p.message)
        conditions.set(ConditionType.DEGRADED, ConditionStatus.TRUE, p.reason, p.message)
        conditions.set(
            ConditionType.HEALTHY, ConditionStatus.UNKNOWN, p.reason, "The cluster could not be diagnosed."
        )
        status.health = Health.UNKNOWN
    elif diagnosis is not None:
        took = max(now - diagnosis.taken_at, timedelta(0))
        slow = is_slow(took, interval) if interval is not None else None
        _set_ready(conditions, diagnosis, took, interval, slow=bool(slow))
        if not conditions.halted():  # a halted roll stays Degraded until the spec changes
            _set_degraded(conditions, outcome, diagnosis)
        conditions.set(ConditionType.HEALTHY, *_healthy_condition(diagnosis))
        status.health = health_of(diagnosis)
        status.last_diagnosis = _last_diagnosis(diagnosis, took, interval, slow)
        status.top_incidents = [summarize_incident(i) for i in incidents_of(diagnosis)[:MAX_TOP_INCIDENTS]]
        status.top_findings = [summarize_finding(f, diagnosis.taken_at) for f in diagnosis.findings[:top_n]]
    if not any(c.type == ConditionType.REMEDIATING for c in conditions.items):
        conditions.set(
            ConditionType.REMEDIATING, ConditionStatus.FALSE, StateReason.IDLE, "No remediation in flight."
        )
    status.conditions = sorted(conditions.items, key=lambda c: _ORDER.index(c.type))
    return status


def _set_ready(
    conditions: _Conditions, diagnosis: Diagnosis, took: timedelta, interval: timedelta | None, *, slow: bool
) -> None:
    """Ready: False when authorization hides part of the cluster, True (SlowCycle when slow) else."""
    denied = denied_view(diagnosis)
    if denied is not None:
        conditions.set(
            ConditionType.READY, ConditionStatus.FALSE, DegradedReason.KAFKA_AUTHORIZATION_DENIED, denied
        )
    elif slow and interval is not None:
        conditions.set(
            ConditionType.READY,
            ConditionStatus.TRUE,
            StateReason.SLOW_CYCLE,
            slow_cycle_message(took, interval, diagnosis.taken_at),
        )
    else:
        conditions.set(
            ConditionType.READY,
            ConditionStatus.TRUE,
            StateReason.DIAGNOSED,
            "The latest cycle read and diagnosed the cluster.",
        )


def _set_degraded(conditions: _Conditions, outcome: CycleOutcome, diagnosis: Diagnosis) -> None:
    """Degraded: what blocks remediation, what could not be read (beyond a planned restart's
    gaps), else False (a planned restart named)."""
    if outcome.remediation_blockers:
        b = outcome.remediation_blockers[0]
        conditions.set(
            ConditionType.DEGRADED, ConditionStatus.TRUE, b.reason, b.message + " No remediation will run."
        )
    elif unread := unexpected_missing(diagnosis):
        parts = ", ".join(unread[:5])
        conditions.set(
            ConditionType.DEGRADED,
            ConditionStatus.TRUE,
            DegradedReason.CLUSTER_PARTLY_UNREADABLE,
            f"Could not read: {parts}. Remediation that needs these parts is withheld.",
        )
    elif outcome.planned:
        conditions.set(
            ConditionType.DEGRADED,
            ConditionStatus.FALSE,
            StateReason.PLANNED_RESTART,
            _planned(outcome.planned),
        )
    else:
        conditions.set(
            ConditionType.DEGRADED,
            ConditionStatus.FALSE,
            StateReason.AS_EXPECTED,
            "The operator can do its job.",
        )


def _last_diagnosis(
    diagnosis: Diagnosis, took: timedelta, interval: timedelta | None, slow: bool | None
) -> LastDiagnosis:
    counts = _counts(diagnosis)
    return LastDiagnosis(
        at=diagnosis.taken_at,
        duration_seconds=round(took.total_seconds(), 3),
        diagnose_seconds=diagnosis.duration_seconds,
        interval_seconds=interval.total_seconds() if interval is not None else None,
        slow=slow,
        total=len(diagnosis.findings),
        critical=counts["critical"],
        warning=counts["warning"],
        info=counts["info"],
        incidents=len(incidents_of(diagnosis)),
        missing=diagnosis.missing[:100] or None,
    )


REMEDIATION_FIELDS = (
    "current_remediation",
    "pending_plan",
    "history",
    "rolling_restarts",
    "offset_resets",
    "transaction_aborts",
    "withheld",
    "remediation_summary",
)
"""The status fields remediation owns (the roll driver writes these, the cycle the rest)."""


def merge_remediation(
    stored: KafkaHealthPolicyStatus, ours: KafkaHealthPolicyStatus
) -> KafkaHealthPolicyStatus:
    """`stored` (as the API server has it now: the cycle's diagnosis) with the remediation fields
    of `ours`: its `Remediating` condition, and its `Degraded` only when it halted a roll."""
    out = stored.model_copy(update={f: getattr(ours, f) for f in REMEDIATION_FIELDS}, deep=True)
    mine = {c.type: c for c in ours.conditions or []}
    take = {ConditionType.REMEDIATING}
    degraded = mine.get(ConditionType.DEGRADED)
    if degraded is not None and degraded.status == ConditionStatus.TRUE and degraded.reason == HALTED:
        take.add(ConditionType.DEGRADED)
    kept = [c for c in stored.conditions or [] if c.type not in take]
    conditions = kept + [mine[t] for t in take if t in mine]
    out.conditions = sorted(conditions, key=lambda c: _ORDER.index(c.type)) or None
    return out


def status_patch(status: KafkaHealthPolicyStatus) -> dict[str, Any]:
    """The status as the API server stores it (camelCase, no nulls; Kopf's own field left alone)."""
    body = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    # A merge patch keeps fields it does not mention: send an explicit null for every field that
    # is now empty — a finished currentRemediation, an approved pendingPlan, and inside an object
    # such as currentRemediation a currentBroker that went back to null between brokers. (Lists
    # are replaced whole by a merge patch, so their items need no nulls.)
    for name, info in type(status).model_fields.items():
        alias = info.alias or name
        value = getattr(status, name)
        if name == "kopf":
            continue
        if value is None:
            body[alias] = None
        elif isinstance(value, BaseModel):
            body[alias] = value.model_dump(mode="json", by_alias=True)
    body.pop("kopf", None)
    return body
