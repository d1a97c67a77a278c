"""Maintenance windows: cron + duration + IANA zone, checked across DST changes and against a brute-force oracle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.policy import MaintenanceWindow
from kafka_health.plan.windows import current_opening, next_opening, window_state


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def window(
    schedule: str = "0 2 * * *", duration: str = "1h", tz: str = "UTC", name: str | None = None
) -> MaintenanceWindow:
    return MaintenanceWindow(schedule=schedule, duration=duration, time_zone=tz, name=name)


@pytest.mark.parametrize(
    ("now", "is_open"),
    [
        ("2024-06-03T01:59:59", False),
        ("2024-06-03T02:00:00", True),
        ("2024-06-03T02:59:59", True),
        ("2024-06-03T03:00:00", False),  # the end is exclusive
    ],
)
def test_daily_window_in_utc(now: str, is_open: bool) -> None:
    assert (current_opening(window(), utc(now)) is not None) is is_open


def test_window_in_a_zone_opens_at_local_time() -> None:
    w = window("0 2 * * *", "2h", "America/New_York")  # EDT = UTC-4 in June
    assert current_opening(w, utc("2024-06-03T05:59:00")) is None
    assert current_opening(w, utc("2024-06-03T06:00:00")) == utc("2024-06-03T06:00:00")
    assert current_opening(w, utc("2024-06-03T07:59:00")) == utc("2024-06-03T06:00:00")
    assert current_opening(w, utc("2024-06-03T08:00:00")) is None


def test_window_that_spans_midnight_is_open_after_midnight() -> None:
    w = window("0 23 * * *", "3h")
    assert current_opening(w, utc("2024-06-04T01:30:00")) == utc("2024-06-03T23:00:00")


def test_spring_forward_skipped_time_opens_shifted_by_the_gap() -> None:
    # Europe/Berlin, 2024-03-31: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
    w = window("30 2 * * *", "1h", "Europe/Berlin")
    assert current_opening(w, utc("2024-03-31T01:29:00")) is None
    assert current_opening(w, utc("2024-03-31T01:30:00")) == utc("2024-03-31T01:30:00")  # 03:30 CEST
    assert current_opening(w, utc("2024-03-31T02:30:00")) is None
    assert next_opening(w, utc("2024-03-31T00:00:00")) == utc("2024-03-31T01:30:00")


def test_fall_back_repeated_time_opens_once() -> None:
    # Europe/Berlin, 2024-10-27: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    w = window("30 2 * * *", "30m", "Europe/Berlin")
    assert current_opening(w, utc("2024-10-27T00:45:00")) == utc("2024-10-27T00:30:00")  # first 02:30 (CEST)
    assert current_opening(w, utc("2024-10-27T01:45:00")) is None  # second 02:30 (CET): not again


def test_duration_is_real_time_across_fall_back() -> None:
    # Opens 01:00 CEST (23:00 UTC); 3 real hours later it is 03:00 CET (02:00 UTC), not 04:00.
    w = window("0 1 * * *", "3h", "Europe/Berlin")
    assert current_opening(w, utc("2024-10-27T01:59:00")) == utc("2024-10-26T23:00:00")
    assert current_opening(w, utc("2024-10-27T02:00:00")) is None


def test_weekly_window_and_next_opening() -> None:
    w = window("0 22 * * SAT", "4h", "UTC")
    assert current_opening(w, utc("2024-06-03T02:30:00")) is None  # Monday
    assert next_opening(w, utc("2024-06-03T02:30:00")) == utc("2024-06-08T22:00:00")
    assert current_opening(w, utc("2024-06-09T01:00:00")) == utc("2024-06-08T22:00:00")


def test_schedule_that_never_fires_never_opens() -> None:
    """The models refuse such a schedule now (issue 12); a policy stored before is still safe."""
    with pytest.raises(ValueError, match="never fires"):
        window("0 0 30 2 *", "1h")
    w = MaintenanceWindow.model_construct(schedule="0 0 30 2 *", duration="1h", time_zone="UTC", name=None)
    assert current_opening(w, utc("2024-06-03T00:00:00")) is None
    assert next_opening(w, utc("2024-06-03T00:00:00")) is None
    assert window_state([w], utc("2024-06-03T00:00:00")).describe() == "no maintenance window will open"


def test_window_state_reports_the_window_closing_last_and_the_next() -> None:
    short, long = window("0 2 * * *", "1h", name="short"), window("0 1 * * *", "3h", name="long")
    state = window_state([short, long], utc("2024-06-03T02:30:00"))
    assert state.open and state.window is long and state.closes_at == utc("2024-06-03T04:00:00")
    closed = window_state([short, long], utc("2024-06-03T05:00:00"))
    assert not closed.open and closed.window is long and closed.next_opens_at == utc("2024-06-04T01:00:00")
    assert "'long'" in closed.describe() and "2024-06-04T01:00:00Z" in closed.describe()


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        current_opening(window(), datetime(2024, 6, 3, 2, 0))


# --- property: agrees with a brute-force oracle -------------------------------------------------

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Sao_Paulo",
]
SCHEDULES = [
    "0 2 * * *",
    "30 2 * * *",
    "*/20 * * * *",
    "15 1,3 * * *",
    "0 */6 * * *",
    "45 23 * * SUN",
    "0 0 1 * *",
]


def oracle(w: MaintenanceWindow, now: datetime) -> datetime | None:
    """Every wall-clock cron match within hours of now, localized with fold=0 (no pruning): the
    latest start that covers now."""
    tz = ZoneInfo(w.time_zone)
    duration = timedelta(hours=int(w.duration[:-1]))
    local = now.astimezone(tz).replace(tzinfo=None)
    fires = croniter(w.schedule, local - duration - timedelta(hours=3))
    best = None
    while (t := fires.get_next(datetime)) <= local + timedelta(hours=3):
        start = t.replace(tzinfo=tz, fold=0).astimezone(UTC)
        if start <= now < start + duration and (best is None or start > best):
            best = start
    return best


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    schedule=st.sampled_from(SCHEDULES),
    hours=st.integers(min_value=1, max_value=4),
    # Around the 2024 DST changes of the sampled zones, and ordinary days.
    now=st.one_of(
        st.datetimes(min_value=datetime(2024, 3, 30), max_value=datetime(2024, 4, 8)),
        st.datetimes(min_value=datetime(2024, 10, 25), max_value=datetime(2024, 11, 4)),
        st.datetimes(min_value=datetime(2024, 6, 1), max_value=datetime(2024, 6, 3)),
    ),
)
def test_current_opening_matches_the_oracle(zone: str, schedule: str, hours: int, now: datetime) -> None:
    w = window(schedule, f"{hours}h", zone)
    at = now.replace(tzinfo=UTC)
    assert current_opening(w, at) == oracle(w, at)


@settings(max_examples=40, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    schedule=st.sampled_from(SCHEDULES),
    now=st.datetimes(min_value=datetime(2024, 3, 29), max_value=datetime(2024, 11, 5)),
)
def test_next_opening_is_after_now_and_opens_the_window(zone: str, schedule: str, now: datetime) -> None:
    w = window(schedule, "1h", zone)
    at = now.replace(tzinfo=UTC)
    start = next_opening(w, at)
    assert start is not None and start > at
    assert current_opening(w, start) == start
    # Nothing opens in between: just before `start`, the window is not freshly opened.
    just_before = start - timedelta(seconds=1)
    opened = current_opening(w, just_before)
    assert opened is None or opened <= at
