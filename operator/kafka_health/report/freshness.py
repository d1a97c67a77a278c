"""No stale news: what a cycle reports is as old as its snapshot, and says so when that is old.

A cycle reads the cluster (the snapshot, `taken_at`), diagnoses it, then writes status and posts
Events. Under load that can take longer than the interval, and then an Event saying a broker is
missing "now" may describe a cluster that has already healed. The rule, applied by pure
functions of the snapshot time, the clock and the interval:

- A cycle is *slow* when it took longer than `spec.diagnostics.interval`, measured from the
  snapshot to the moment it reports (`status.lastDiagnosis.durationSeconds`).
- News from a snapshot at most one interval old is reported as is (it is as fresh as the
  schedule allows). News from an older snapshot is *late*: its Event message starts with
  `as of 07:29:40Z (2m20s ago):` and never calls a finding "new" — it "appeared" then.
- Status findings carry their snapshot time (`observedAt`), so they are never mistaken for now.
- When cycles become slow, Ready keeps True but with reason `SlowCycle` (not Degraded: the
  operator still does its job, later) and one Warning Event `SlowCycle` is posted; another only
  after a cycle in time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from kafka_health.models.reasons import EventReason
from kafka_health.report.events import EventSpec


def format_age(age: timedelta) -> str:
    """`2m20s`, `45s`, `1h2m3s`; whole seconds, never negative (a clock skew reads as 0s)."""
    total = max(0, int(age.total_seconds()))
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


@dataclass(frozen=True)
class Freshness:
    """How old a cycle's snapshot is at the moment something is reported from it."""

    snapshot_at: datetime
    now: datetime
    interval: timedelta

    @property
    def age(self) -> timedelta:
        return self.now - self.snapshot_at

    @property
    def late(self) -> bool:
        """Older than one interval: reported news would be older than the next cycle's."""
        return self.age > self.interval

    def as_of(self) -> str:
        """`as of 07:29:40Z (2m20s ago)` (the snapshot's UTC time of day)."""
        return f"as of {self.snapshot_at:%H:%M:%S}Z ({format_age(self.age)} ago)"

    def news(self, message: str) -> str:
        """`message` as is when fresh; prefixed with `as_of()` when late."""
        return f"{self.as_of()}: {message}" if self.late else message


_AS_OF = re.compile(r"^as of \d\d:\d\d:\d\dZ \((?:\d+h)?(?:\d+m)?\d+s ago\): ")


def without_as_of(message: str) -> str:
    """`message` without the `as of HH:MM:SSZ (age ago): ` prefix of late news (for readers that
    match on what follows it)."""
    return _AS_OF.sub("", message, count=1)


def is_slow(duration: timedelta, interval: timedelta) -> bool:
    """A cycle is slow when it took longer than the interval (exactly the interval is in time)."""
    return duration > interval


def slow_cycle_event(
    was_slow: bool | None, duration: timedelta, interval: timedelta, snapshot_at: datetime
) -> EventSpec | None:
    """The Warning Event when cycles become slow: only on the change from in time (or unknown,
    after an operator start) to slow, never once per slow cycle."""
    if not is_slow(duration, interval) or was_slow:
        return None
    return EventSpec(
        "Warning",
        EventReason.SLOW_CYCLE,
        slow_cycle_message(duration, interval, snapshot_at),
    )


def slow_cycle_message(duration: timedelta, interval: timedelta, snapshot_at: datetime) -> str:
    return (
        f"The cycle took {format_age(duration)}, longer than spec.diagnostics.interval "
        f"({format_age(interval)}): findings and Events are as of the snapshot at "
        f"{snapshot_at:%H:%M:%S}Z. Give the operator more CPU, lengthen the interval, or disable checks "
        "this cluster does not need."
    )
