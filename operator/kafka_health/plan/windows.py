"""Maintenance windows: is `now` inside a window that a cron schedule opened within the last `duration`?

DST-safe by construction: the cron schedule is matched in the window's local wall-clock time
(what a person means by "02:00 Europe/Berlin"), each match is turned into an absolute instant,
and the duration is added in absolute time (a 2h window is 2 real hours, also across a clock
change). Wall-clock times that do not exist (the hour skipped in spring) map forward by the gap
(02:30 → 03:30 CEST); times that occur twice (autumn) open the window once, at the first one
(PEP 495 fold=0).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

from kafka_health.models.policy import MaintenanceWindow, parse_duration

_MAX_STEPS = 100_000
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class WindowState:
    """Whether a window is open at `now`; if not, when the next one opens (None: never)."""

    open: bool
    window: MaintenanceWindow | None = None
    opened_at: datetime | None = None
    closes_at: datetime | None = None
    next_opens_at: datetime | None = None

    def describe(self, window_label: str | None = None) -> str:
        label = window_label or _label(self.window)
        if self.open:
            return f"maintenance window {label} is open until {_iso(self.closes_at)}"
        if self.next_opens_at is None:
            return "no maintenance window will open"
        return f"outside the maintenance windows; next: {label} at {_iso(self.next_opens_at)}"


def _label(window: MaintenanceWindow | None) -> str:
    if window is None:
        return "-"
    name = f"'{window.name}' " if window.name else ""
    return f"{name}({window.schedule} {window.time_zone}, {window.duration})"


def _iso(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else "-"


def _instant(wall: datetime, tz: ZoneInfo) -> datetime:
    """A naive local wall-clock time → the absolute instant (fold=0), as naive UTC."""
    return wall.replace(tzinfo=tz, fold=0).astimezone(UTC).replace(tzinfo=None)


def _offset_range(tz: ZoneInfo, start: datetime, end: datetime) -> tuple[timedelta, timedelta]:
    """Smallest and largest UTC offset of `tz` between two naive-UTC instants (sampled hourly)."""
    offsets = set()
    t = start - timedelta(hours=1)
    while t <= end + timedelta(hours=1):
        offset = t.replace(tzinfo=UTC).astimezone(tz).utcoffset()
        offsets.add(offset or timedelta(0))
        t += timedelta(hours=1)
    return min(offsets), max(offsets)


def _fires(schedule: str, start: datetime, backwards: bool) -> Iterator[datetime]:
    """Cron matches in naive wall-clock time, from `start` (exclusive) going back or forward."""
    it = croniter(schedule, start)
    for _ in range(_MAX_STEPS):
        try:
            yield it.get_prev(datetime) if backwards else it.get_next(datetime)
        except CroniterBadDateError:
            return


def _as_utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError("`now` must be timezone-aware")
    return now.astimezone(UTC).replace(tzinfo=None)


def current_opening(window: MaintenanceWindow, now: datetime) -> datetime | None:
    """The start of the occurrence of `window` that contains `now` (aware UTC), or None."""
    tz = ZoneInfo(window.time_zone)
    duration = parse_duration(window.duration)
    now_utc = _as_utc(now)
    low, high = _offset_range(tz, now_utc - duration, now_utc)
    spread = high - low
    # A match m opens at m - offset(m): only matches in (now - duration + low, now + high] can cover now.
    upper, lower = now_utc + high, now_utc - duration + low
    best: datetime | None = None
    first_match: datetime | None = None
    for wall in _fires(window.schedule, upper + _SECOND, backwards=True):
        if wall < lower or (first_match is not None and wall < first_match - spread):
            break  # earlier matches open earlier than `best` (the offset varies by at most `spread`)
        if wall > upper:
            continue
        start = _instant(wall, tz)
        if start <= now_utc:
            first_match = first_match or wall
            best = start if best is None or start > best else best
    if best is not None and now_utc < best + duration:
        return best.replace(tzinfo=UTC)
    return None


def next_opening(window: MaintenanceWindow, now: datetime) -> datetime | None:
    """The first start of `window` strictly after `now` (aware UTC), or None if it never fires."""
    tz = ZoneInfo(window.time_zone)
    now_utc = _as_utc(now)
    low, high = _offset_range(tz, now_utc, now_utc + timedelta(days=1))
    spread = high - low
    best: datetime | None = None
    first_match: datetime | None = None
    for wall in _fires(window.schedule, now_utc + low - _SECOND, backwards=False):
        if first_match is not None and wall > first_match + spread:
            break
        start = _instant(wall, tz)
        if start > now_utc:
            first_match = first_match or wall
            best = start if best is None or start < best else best
    return best.replace(tzinfo=UTC) if best is not None else None


def window_state(windows: Sequence[MaintenanceWindow], now: datetime) -> WindowState:
    """Open if any window is open (reporting the one that closes last); else the next to open."""
    open_ones = []
    for window in windows:
        start = current_opening(window, now)
        if start is not None:
            open_ones.append((start + parse_duration(window.duration), start, window))
    if open_ones:
        closes, opened, window = max(open_ones, key=lambda item: item[0])
        return WindowState(open=True, window=window, opened_at=opened, closes_at=closes)
    upcoming = [(start, w) for w in windows if (start := next_opening(w, now)) is not None]
    if not upcoming:
        return WindowState(open=False)
    start, window = min(upcoming, key=lambda item: item[0])
    return WindowState(open=False, window=window, next_opens_at=start)
