"""Events when findings appear or clear — never one per cycle for a finding that persists.

`finding_events` is pure (previous keys + diagnosis → events); `post` hands them to Kopf,
which posts them against the policy object.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kafka_health.models.findings import Diagnosis, Severity
from kafka_health.models.reasons import EventReason, checked

MAX_SUBJECTS_IN_MESSAGE = 5


@dataclass(frozen=True)
class EventSpec:
    type: str  # Normal | Warning
    reason: str  # a member of a kafka_health.models.reasons enum
    message: str


def finding_events(
    previous_keys: set[str] | None, diagnosis: Diagnosis, *, late: bool = False
) -> tuple[list[EventSpec], set[str]]:
    """Events for findings that appeared or cleared since `previous_keys`, and the new key set.
    `late` (the snapshot is older than one interval, report/freshness.py): findings are said to
    have appeared, not to be new (the caller prefixes the snapshot's time).

    Info findings make no Events. One Event per check and direction keeps a 1000-partition
    outage to a couple of Events. `previous_keys=None` (first cycle after start) posts what
    is wrong now, once.
    """
    current = {f.key(): f for f in diagnosis.findings if f.severity is not Severity.INFO}
    before = previous_keys or set()
    appeared: dict[str, list[str]] = defaultdict(list)
    worst: dict[str, Severity] = {}
    for key, f in current.items():
        if key not in before:
            appeared[f.check].append(f.subject.key())
            if f.severity is Severity.CRITICAL or f.check not in worst:
                worst[f.check] = f.severity
    cleared: dict[str, list[str]] = defaultdict(list)
    for key in sorted(before - set(current)):
        check, _, subject = key.partition(":")
        cleared[check].append(subject)
    events = [
        EventSpec(
            "Warning",
            EventReason.FINDING_APPEARED,
            _message(check, subjects, f"{'appeared' if late else 'new'} ({worst[check].value})"),
        )
        for check, subjects in sorted(appeared.items())
    ] + [
        EventSpec("Normal", EventReason.FINDING_CLEARED, _message(check, subjects, "cleared"))
        for check, subjects in sorted(cleared.items())
    ]
    return events, set(current)


def _message(check: str, subjects: list[str], what: str) -> str:
    shown = ", ".join(sorted(subjects)[:MAX_SUBJECTS_IN_MESSAGE])
    more = len(subjects) - MAX_SUBJECTS_IN_MESSAGE
    tail = f" and {more} more" if more > 0 else ""
    return f"{check}: {len(subjects)} {what}: {shown}{tail}"


def post(body: Any, event: EventSpec) -> None:
    """Post an Event about the policy (Kopf queues it; posting never blocks the cycle)."""
    import kopf

    kopf.event(body, type=event.type, reason=checked(event.reason), message=event.message[:1024])
