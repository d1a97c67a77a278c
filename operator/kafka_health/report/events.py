"""Events when incidents open or resolve — never one per cycle for an incident that persists,
never one per check or partition.

`incident_events` is pure (previous incident ids + diagnosis → events); `post` hands them to
Kopf, which posts them against the policy object. An incident's id (`broker_down:2`,
`consumer_group:billing`; kafka_health.diagnose.incidents) stays the same while its cause
persists, so a stopped broker is one `IncidentOpened` Event when it stops and one
`IncidentResolved` when it is back, whatever the number of partitions it affects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_health.diagnose.incidents import incidents_of
from kafka_health.models.findings import Diagnosis, Incident, Severity
from kafka_health.models.reasons import EventReason, checked

MAX_INCIDENT_EVENTS = 10
"""Per cycle and direction; beyond it, one more Event lists the remaining incident ids."""
MAX_IDS_IN_MESSAGE = 20


@dataclass(frozen=True)
class EventSpec:
    type: str  # Normal | Warning
    reason: str  # a member of a kafka_health.models.reasons enum
    message: str


def incident_events(
    previous_ids: set[str] | None, diagnosis: Diagnosis, *, late: bool = False
) -> tuple[list[EventSpec], set[str]]:
    """Events for incidents that opened or resolved since `previous_ids`, and the new id set.
    `late` (the snapshot is older than one interval, report/freshness.py): an incident is said
    to have opened then, not to be new (the caller prefixes the snapshot's time).

    Info incidents make no Events. `previous_ids=None` (first cycle after start) posts what is
    wrong now, once. At most MAX_INCIDENT_EVENTS per direction, plus one naming the rest.
    """
    current = {i.id: i for i in incidents_of(diagnosis) if i.severity is not Severity.INFO}
    before = previous_ids or set()
    opened = [i for i in current.values() if i.id not in before]
    resolved = sorted(before - set(current))
    word = "opened" if late else "new"
    events = [
        EventSpec("Warning", EventReason.INCIDENT_OPENED, _opened_message(i, word))
        for i in opened[:MAX_INCIDENT_EVENTS]
    ]
    if len(opened) > MAX_INCIDENT_EVENTS:
        rest = [i.id for i in opened[MAX_INCIDENT_EVENTS:]]
        events.append(
            EventSpec(
                "Warning", EventReason.INCIDENT_OPENED, f"{len(rest)} more incidents {word}: {_ids(rest)}"
            )
        )
    events += [
        EventSpec(
            "Normal", EventReason.INCIDENT_RESOLVED, f"{incident_id} resolved: none of its findings remain."
        )
        for incident_id in resolved[:MAX_INCIDENT_EVENTS]
    ]
    if len(resolved) > MAX_INCIDENT_EVENTS:
        rest = resolved[MAX_INCIDENT_EVENTS:]
        events.append(
            EventSpec(
                "Normal", EventReason.INCIDENT_RESOLVED, f"{len(rest)} more incidents resolved: {_ids(rest)}"
            )
        )
    return events, set(current)


def _opened_message(incident: Incident, word: str) -> str:
    n = len(incident.findings)
    return (
        f"{incident.id} {word} ({incident.severity.value}, {n} finding{'' if n == 1 else 's'}): "
        f"{incident.title} → {incident.remediation}"
    )


def _ids(ids: list[str]) -> str:
    more = len(ids) - MAX_IDS_IN_MESSAGE
    return ", ".join(ids[:MAX_IDS_IN_MESSAGE]) + (f" and {more} more" if more > 0 else "")


def post(body: Any, event: EventSpec) -> None:
    """Post an Event about the policy (Kopf queues it; posting never blocks the cycle)."""
    import kopf

    kopf.event(body, type=event.type, reason=checked(event.reason), message=event.message[:1024])
