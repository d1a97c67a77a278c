"""No stale news (issue 12, item 5): the rule of report/freshness.py, its Events and its status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kafka_health.models.findings import Diagnosis, Finding, Severity, Subject, SubjectKind
from kafka_health.models.policy import ConditionType, KafkaHealthPolicyStatus
from kafka_health.models.reasons import EventReason, StateReason
from kafka_health.report import events
from kafka_health.report.freshness import Freshness, format_age, is_slow, slow_cycle_event, without_as_of
from kafka_health.report.status import CycleOutcome, status_after_cycle

SNAP = datetime(2026, 11, 23, 7, 29, 40, tzinfo=UTC)
MINUTE = timedelta(seconds=60)
TICK = timedelta(microseconds=1)


def diagnosis(*findings: Finding, taken_at: datetime = SNAP) -> Diagnosis:
    return Diagnosis(cluster="c", taken_at=taken_at, findings=list(findings), duration_seconds=4.5)


def broker_missing(broker: int = 1) -> Finding:
    return Finding(
        check="broker_missing",
        severity=Severity.CRITICAL,
        subject=Subject(kind=SubjectKind.BROKER, broker=broker),
        message=f"broker {broker} is not registered",
    )


@pytest.mark.parametrize(
    ("age", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=0.9), "0s"),
        (timedelta(seconds=59), "59s"),
        (timedelta(seconds=60), "1m0s"),
        (timedelta(seconds=140), "2m20s"),
        (timedelta(seconds=3599), "59m59s"),
        (timedelta(seconds=3600), "1h0m0s"),
        (timedelta(seconds=3723), "1h2m3s"),
        (timedelta(days=2, seconds=5), "48h0m5s"),
        (timedelta(seconds=-5), "0s"),
    ],
)
def test_format_age(age: timedelta, text: str) -> None:
    assert format_age(age) == text


@pytest.mark.parametrize(
    ("age", "late"),
    [
        (timedelta(0), False),
        (MINUTE - TICK, False),
        (MINUTE, False),  # exactly one interval: as fresh as the schedule allows
        (MINUTE + TICK, True),
        (timedelta(seconds=140), True),
        (timedelta(seconds=-3), False),  # a clock behind the snapshot's is not late
    ],
)
def test_news_is_late_only_when_older_than_one_interval(age: timedelta, late: bool) -> None:
    fresh = Freshness(SNAP, SNAP + age, MINUTE)
    assert fresh.age == age
    assert fresh.late is late
    message = "broker_missing: 1 new (critical): broker/broker=1"
    if late:
        assert fresh.news(message) == f"{fresh.as_of()}: {message}"
    else:
        assert fresh.news(message) == message


def test_as_of_names_the_snapshot_time_and_its_age() -> None:
    fresh = Freshness(SNAP, SNAP + timedelta(seconds=140), MINUTE)
    assert fresh.as_of() == "as of 07:29:40Z (2m20s ago)"


@pytest.mark.parametrize(
    ("duration", "slow"),
    [
        (timedelta(0), False),
        (MINUTE - TICK, False),
        (MINUTE, False),
        (MINUTE + TICK, True),
        (3 * MINUTE, True),
    ],
)
def test_a_cycle_is_slow_when_longer_than_the_interval(duration: timedelta, slow: bool) -> None:
    assert is_slow(duration, MINUTE) is slow


@pytest.mark.parametrize(
    ("was_slow", "duration", "posted"),
    [
        (None, MINUTE + TICK, True),  # first cycle after a start, slow: say so once
        (False, MINUTE + TICK, True),  # became slow
        (True, MINUTE + TICK, False),  # still slow: no Event per cycle
        (None, MINUTE, False),
        (False, MINUTE, False),
        (True, MINUTE, False),  # back in time: Ready's reason says so, no Event
    ],
)
def test_slow_cycle_event_only_when_cycles_become_slow(
    was_slow: bool | None, duration: timedelta, posted: bool
) -> None:
    event = slow_cycle_event(was_slow, duration, MINUTE, SNAP)
    if not posted:
        assert event is None
        return
    assert event is not None
    assert (event.type, event.reason) == ("Warning", EventReason.SLOW_CYCLE)
    assert "1m0s" in event.message and "07:29:40Z" in event.message


def test_the_issues_example_a_late_broker_missing_event_is_not_shown_as_new() -> None:
    """Snapshot at 07:29:40, Event posted at 07:32:00 (2m20s later) with a 60s interval."""
    posted_at = SNAP + timedelta(seconds=140)
    fresh = Freshness(SNAP, posted_at, MINUTE)
    to_post, _ = events.incident_events(set(), diagnosis(broker_missing()), late=fresh.late)
    messages = [fresh.news(e.message) for e in to_post]
    assert len(messages) == 1
    assert messages[0].startswith(
        "as of 07:29:40Z (2m20s ago): broker_down:1 opened (critical, 1 finding): Broker 1 is not registered"
    )
    assert " new " not in messages[0]


def test_a_fresh_event_is_shown_as_new_without_a_time() -> None:
    fresh = Freshness(SNAP, SNAP + timedelta(seconds=5), MINUTE)
    to_post, _ = events.incident_events(set(), diagnosis(broker_missing()), late=fresh.late)
    (message,) = [fresh.news(e.message) for e in to_post]
    assert message.startswith("broker_down:1 new (critical, 1 finding): Broker 1 is not registered")


def test_a_late_cleared_event_carries_the_snapshot_time() -> None:
    fresh = Freshness(SNAP, SNAP + timedelta(seconds=200), MINUTE)
    to_post, _ = events.incident_events({"broker_down:1"}, diagnosis(), late=fresh.late)
    assert [fresh.news(e.message) for e in to_post] == [
        "as of 07:29:40Z (3m20s ago): broker_down:1 resolved: none of its findings remain."
    ]


def _status(took: timedelta, interval: timedelta | None) -> KafkaHealthPolicyStatus:
    return status_after_cycle(
        KafkaHealthPolicyStatus(),
        CycleOutcome(diagnosis=diagnosis(broker_missing())),
        now=SNAP + took,
        generation=3,
        top_n=10,
        interval=interval,
    )


def _cond(status: KafkaHealthPolicyStatus, type_: ConditionType) -> tuple[str, str]:
    c = next(c for c in status.conditions or [] if c.type == type_)
    return c.status.value, c.reason


def test_a_slow_cycle_says_so_in_ready_and_last_diagnosis_but_is_not_degraded() -> None:
    status = _status(timedelta(seconds=140), MINUTE)
    assert _cond(status, ConditionType.READY) == ("True", StateReason.SLOW_CYCLE)
    ready = next(c for c in status.conditions or [] if c.type == ConditionType.READY)
    assert "2m20s" in ready.message and "07:29:40Z" in ready.message
    assert _cond(status, ConditionType.DEGRADED) == ("False", StateReason.AS_EXPECTED)
    last = status.last_diagnosis
    assert last is not None
    assert (last.at, last.duration_seconds, last.interval_seconds, last.slow) == (SNAP, 140.0, 60.0, True)
    assert last.diagnose_seconds == 4.5


def test_a_cycle_in_time_is_diagnosed() -> None:
    status = _status(MINUTE, MINUTE)
    assert _cond(status, ConditionType.READY) == ("True", StateReason.DIAGNOSED)
    assert status.last_diagnosis is not None and status.last_diagnosis.slow is False


def test_without_an_interval_slowness_is_unknown() -> None:
    status = _status(timedelta(hours=1), None)
    assert _cond(status, ConditionType.READY) == ("True", StateReason.DIAGNOSED)
    assert status.last_diagnosis is not None and status.last_diagnosis.slow is None


def test_status_findings_carry_the_snapshot_time() -> None:
    status = _status(timedelta(seconds=140), MINUTE)
    assert [f.observed_at for f in status.top_findings or []] == [SNAP]
    dumped = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["topFindings"][0]["observedAt"] == "2026-11-23T07:29:40Z"
    assert dumped["lastDiagnosis"]["slow"] is True


def test_a_slow_cycle_then_one_in_time_goes_back_to_diagnosed() -> None:
    slow = _status(timedelta(seconds=140), MINUTE)
    after = status_after_cycle(
        slow,
        CycleOutcome(diagnosis=diagnosis(taken_at=SNAP + MINUTE)),
        now=SNAP + MINUTE + timedelta(seconds=3),
        generation=3,
        top_n=10,
        interval=MINUTE,
    )
    assert _cond(after, ConditionType.READY) == ("True", StateReason.DIAGNOSED)
    assert after.last_diagnosis is not None and after.last_diagnosis.slow is False


@pytest.mark.parametrize("age_s", [0, 59, 140, 3723])
def test_without_as_of_strips_exactly_the_late_prefix(age_s: int) -> None:
    message = "broker_down:1 opened (critical): x"
    fresh = Freshness(SNAP, SNAP + timedelta(seconds=age_s), timedelta(seconds=1))
    assert without_as_of(fresh.news(message)) == message
    assert without_as_of(message) == message
    assert without_as_of("as of the spec: x") == "as of the spec: x"
