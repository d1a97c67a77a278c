"""Lag checks: Burrow-style status per group partition, offsets out of range, offset expiry."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Finding, Severity, SubjectKind
from kafka_health_spark.checks import lag
from tests.spark.builders import (
    at,
    balanced_topic,
    check_findings,
    end_offsets,
    group,
    record,
    snapshot,
)

pytestmark = pytest.mark.spark

MINUTES = [-20, -15, -10, -5]  # history samples; the diagnosed snapshot is at 0


def series(
    committed: list[int | None], ends: list[int], state: str = "Stable", start: int = 0
) -> tuple[list, object]:
    """History snapshots (at MINUTES) and the current one (last values) of group g on t-0."""
    snaps = []
    minutes = [*MINUTES[len(MINUTES) - len(committed) + 1 :], 0]
    for m, c, e in zip(minutes, committed, ends, strict=True):
        snaps.append(
            snapshot(
                partitions=balanced_topic("t", 1),
                offsets=end_offsets({("t", 0): e}, start=start),
                groups=[group("g", {("t", 0): c}, state=state)],
                taken_at=at(m),
            )
        )
    return snaps[:-1], snaps[-1]


def status_of(spark: SparkSession, tmp_path: Path, committed: list, ends: list, state: str = "Stable") -> str:
    history, now = series(committed, ends, state)
    record(tmp_path, history)
    findings = check_findings(spark, lag.consumer_lag, now, tmp_path)
    parts = [f for f in findings if f.subject.kind is SubjectKind.PARTITION]
    return str(parts[0].evidence["status"]) if parts else "OK"


@pytest.mark.parametrize(
    ("committed", "ends", "state", "expected"),
    [
        # Rule 1: lag zero at some sample → OK, whatever else happens.
        ([100, 200, 300, 300, 300], [200, 200, 500, 600, 700], "Stable", "OK"),
        # Offsets advance, lag shrinks at least once → OK.
        ([100, 200, 300, 400, 500], [300, 350, 600, 650, 700], "Stable", "OK"),
        # Offsets advance but the lag never shrinks → WARN (falling behind).
        ([100, 200, 300, 400, 500], [200, 400, 600, 800, 1000], "Stable", "WARN"),
        # Members present, offset frozen, lag > 0 → STALL.
        ([100, 100, 100, 100, 100], [200, 300, 400, 500, 600], "Stable", "STALL"),
        # Nobody consuming, offset frozen → STOP.
        ([100, 100, 100, 100, 100], [200, 300, 400, 500, 600], "Empty", "STOP"),
        # Committed offset went backwards → REWIND.
        ([500, 600, 100, 150, 200], [700, 800, 900, 1000, 1100], "Stable", "REWIND"),
    ],
)
def test_burrow_rules(
    spark: SparkSession, tmp_path: Path, committed: list, ends: list, state: str, expected: str
) -> None:
    assert status_of(spark, tmp_path, committed, ends, state) == expected


def test_partition_and_group_findings_carry_the_lag(spark: SparkSession, tmp_path: Path) -> None:
    history, now = series([100] * 5, [200, 300, 400, 500, 600])
    record(tmp_path, history)
    findings = check_findings(spark, lag.consumer_lag, now, tmp_path)
    by_kind = {f.subject.kind: f for f in findings}
    part, grp = by_kind[SubjectKind.PARTITION], by_kind[SubjectKind.GROUP]
    assert (part.subject.group, part.subject.topic, part.subject.partition) == ("g", "t", 0)
    assert part.evidence == {
        "status": "STALL",
        "lag": 500,
        "stable_lag": None,  # the last stable offset was not read
        "lag_seconds": 1200.0,  # the log end was past 100 at the oldest sample, 20 min ago
        "lag_seconds_lower_bound": 1,
        "committed_offset": 100,
        "log_end_offset": 600,
        "last_stable_offset": None,
        "samples": 5,
        "members": 1,
    }
    assert part.severity is Severity.CRITICAL
    assert grp.subject.group == "g" and grp.evidence["total_lag"] == 500
    assert grp.evidence["max_lag_partition"] == "t-0"


def stalled_with_stable(
    spark: SparkSession, tmp_path: Path, stable: int, state: str = "Stable"
) -> list[Finding]:
    """Group g stalled at 100 on t-0 (log end 600 now), the last stable offset `stable` now."""
    history, now = series([100] * 5, [200, 300, 400, 500, 600], state)
    record(tmp_path, history)
    now = now.model_copy(update={"offsets": end_offsets({("t", 0): 600}, stable={("t", 0): stable})})
    return check_findings(spark, lag.consumer_lag, now, tmp_path)


def test_a_group_at_the_last_stable_offset_is_blocked_by_a_transaction(
    spark: SparkSession, tmp_path: Path
) -> None:
    by_kind = {f.subject.kind: f for f in stalled_with_stable(spark, tmp_path, stable=100)}
    part, grp = by_kind[SubjectKind.PARTITION], by_kind[SubjectKind.GROUP]
    assert (part.evidence["status"], part.severity) == ("BLOCKED", Severity.CRITICAL)
    assert (part.evidence["lag"], part.evidence["stable_lag"], part.evidence["last_stable_offset"]) == (
        500,
        0,
        100,
    )
    assert "last stable 100: an open transaction" in part.message
    assert "abort-transaction" in (part.remediation or "")
    assert grp.evidence["status"] == "BLOCKED"


@pytest.mark.parametrize(
    ("stable", "state", "status", "stable_lag"),
    [
        (300, "Stable", "STALL", 200),  # records it may read wait: a stuck consumer, not a transaction
        (600, "Stable", "STALL", 500),  # no open transaction
        (100, "Empty", "STOP", 0),  # nobody consumes: that comes first
    ],
)
def test_only_a_stall_at_the_last_stable_offset_is_blocked(
    spark: SparkSession, tmp_path: Path, stable: int, state: str, status: str, stable_lag: int
) -> None:
    (part,) = [
        f
        for f in stalled_with_stable(spark, tmp_path, stable, state)
        if f.subject.kind is SubjectKind.PARTITION
    ]
    assert (part.evidence["status"], part.evidence["stable_lag"]) == (status, stable_lag)
    assert ("open transaction" in part.message) == (stable < 600)


def test_lag_in_seconds_is_when_the_log_end_crossed_the_committed_offset(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Log end 300 at -15 min and 400 at -10 min: it crossed 350 at -12.5 min.
    history, now = series([100, 200, 300, 350, 350], [200, 300, 400, 500, 600])
    record(tmp_path, history)
    by_kind = {f.subject.kind: f for f in check_findings(spark, lag.consumer_lag, now, tmp_path)}
    part = by_kind[SubjectKind.PARTITION]
    assert (part.evidence["status"], part.evidence["lag_seconds"]) == ("WARN", 750.0)
    assert part.evidence["lag_seconds_lower_bound"] == 0
    assert "lag 250, 750 s behind" in part.message
    assert by_kind[SubjectKind.GROUP].evidence["max_lag_seconds"] == 750.0


def test_a_lag_older_than_the_history_is_a_lower_bound(spark: SparkSession, tmp_path: Path) -> None:
    history, now = series([100] * 5, [200, 300, 400, 500, 600])
    record(tmp_path, history)
    (part,) = [
        f
        for f in check_findings(spark, lag.consumer_lag, now, tmp_path)
        if f.subject.kind is SubjectKind.PARTITION
    ]
    assert (part.evidence["lag_seconds"], part.evidence["lag_seconds_lower_bound"]) == (1200.0, 1)
    assert "at least 1200 s behind (older than the history)" in part.message


@pytest.mark.parametrize(
    ("committed", "overrides", "expected"),
    [
        # Lag 50 now, the log end crossed 550 at -2.5 min: 150 s; the trend is OK (lag was 0).
        ([100, 250, 400, 550, 550], {}, "OK"),
        ([100, 250, 400, 550, 550], {"lag_warn_seconds": 150}, "WARN"),
        ([100, 250, 400, 550, 550], {"lag_warn_seconds": 151}, "OK"),
        ([100, 250, 400, 550, 550], {"lag_warn_seconds": 60, "lag_critical_seconds": 120}, "CRITICAL_LAG"),
        # Falling behind (WARN by trend), 750 s: critical in time, not warned twice.
        ([100, 200, 300, 350, 350], {"lag_critical_seconds": 700}, "CRITICAL_LAG"),
        ([100, 200, 300, 350, 350], {"lag_critical_seconds": 800}, "WARN"),
        # A stall stays a stall, however old.
        ([100] * 5, {"lag_critical_seconds": 60}, "STALL"),
    ],
)
def test_limits_in_seconds(
    spark: SparkSession, tmp_path: Path, committed: list, overrides: dict, expected: str
) -> None:
    history, now = series(committed, [200, 300, 400, 500, 600])
    record(tmp_path, history)
    found = check_findings(spark, lag.consumer_lag, now, tmp_path, **overrides)
    statuses = {str(f.evidence["status"]) for f in found if f.subject.kind is SubjectKind.PARTITION}
    assert statuses == ({expected} if expected != "OK" else set())


def test_the_window_keeps_only_the_newest_samples(spark: SparkSession, tmp_path: Path) -> None:
    # Lag was zero long ago (first sample) but not in the newest 3: STALL with a 3-sample window.
    committed, ends = [100, 100, 100, 100, 100], [100, 300, 400, 500, 600]
    history, now = series(committed, ends)
    record(tmp_path, history)
    assert check_findings(spark, lag.consumer_lag, now, tmp_path) == []
    found = check_findings(spark, lag.consumer_lag, now, tmp_path, lag_window_samples=3)
    assert {f.evidence["status"] for f in found} == {"STALL"}


def test_without_history_only_a_large_lag_warns(spark: SparkSession) -> None:
    def now(lag_: int) -> object:
        return snapshot(
            partitions=balanced_topic("t", 1),
            offsets=end_offsets({("t", 0): 100 + lag_}),
            groups=[group("g", {("t", 0): 100})],
        )

    assert check_findings(spark, lag.consumer_lag, now(500)) == []
    found = check_findings(spark, lag.consumer_lag, now(20_000))
    assert {(f.subject.kind, f.evidence["status"], f.severity) for f in found} == {
        (SubjectKind.PARTITION, "WARN", Severity.WARNING),
        (SubjectKind.GROUP, "WARN", Severity.WARNING),
    }
    # With no sample before now, the lag in seconds is unknown: null, not 0, and not in the message.
    (part,) = [f for f in found if f.subject.kind is SubjectKind.PARTITION]
    assert (part.evidence["lag_seconds"], part.evidence["lag_seconds_lower_bound"]) == (None, 0)
    assert "behind" not in part.message
    assert check_findings(spark, lag.consumer_lag, now(20_000), lag_warn_messages=50_000) == []


def test_a_group_with_nothing_committed_has_no_lag(spark: SparkSession, tmp_path: Path) -> None:
    history, now = series([None] * 5, [200, 300, 400, 500, 600])
    record(tmp_path, history)
    assert check_findings(spark, lag.consumer_lag, now, tmp_path) == []
    assert check_findings(spark, lag.offset_out_of_range, now, tmp_path) == []
    assert check_findings(spark, lag.offset_expiry, now, tmp_path) == []


def test_topic_without_groups_has_no_lag_findings(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=balanced_topic("t", 3), offsets=end_offsets({("t", p): 1000 for p in range(3)})
    )
    for check in lag.CHECKS:
        assert check_findings(spark, check, snap) == []


def test_offset_before_log_start_suggests_a_reset(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=balanced_topic("t", 2),
        offsets=end_offsets({("t", 0): 500, ("t", 1): 500}, start=300),
        groups=[group("g", {("t", 0): 100, ("t", 1): 400}, state="Empty")],
    )
    (f,) = check_findings(spark, lag.offset_out_of_range, snap)
    assert (f.subject.group, f.subject.partition) == ("g", 0)
    assert f.remediation == "offset_reset"
    assert "before log start" in f.message


def empty_group_history(last_active_minutes: float) -> tuple[list, object]:
    def snap(m: float, state: str) -> object:
        return snapshot(
            partitions=balanced_topic("t", 1),
            offsets=end_offsets({("t", 0): 100}),
            groups=[group("g", {("t", 0): 100}, state=state)],
            taken_at=at(m),
        )

    history = [
        snap(last_active_minutes, "Stable"),
        snap(last_active_minutes + 10, "Empty"),
        snap(-5, "Empty"),
    ]
    return history, snap(0, "Empty")


def test_empty_group_offsets_about_to_expire(spark: SparkSession, tmp_path: Path) -> None:
    history, now = empty_group_history(-100)
    record(tmp_path, history)
    found: list[Finding] = check_findings(
        spark, lag.offset_expiry, now, tmp_path, offsets_retention_hours=2, offset_expiry_warn_hours=1
    )
    (f,) = found
    assert f.subject.group == "g" and f.severity is Severity.WARNING
    assert f.evidence["empty_hours"] == pytest.approx(100 / 60, abs=0.01)
    assert f.evidence["expires_in_hours"] == pytest.approx(2 - 100 / 60, abs=0.01)
    assert f.evidence["empty_since_is_lower_bound"] == 0


def test_recently_emptied_group_is_not_at_risk(spark: SparkSession, tmp_path: Path) -> None:
    history, now = empty_group_history(-30)
    record(tmp_path, history)
    assert (
        check_findings(
            spark, lag.offset_expiry, now, tmp_path, offsets_retention_hours=2, offset_expiry_warn_hours=1
        )
        == []
    )


def test_a_lag_over_the_critical_limit_is_critical_whatever_its_trend(
    spark: SparkSession, tmp_path: Path
) -> None:
    """consumerLag.criticalLag: a partition the Burrow rules call OK (its lag shrank once) or WARN
    is CRITICAL_LAG when its lag reaches the limit; STALL, STOP and REWIND keep their status."""
    shrinking = ([100, 200, 300, 400, 500], [300, 350, 600, 650, 700])  # OK by the Burrow rules, lag 200
    history, now = series(*shrinking)
    record(tmp_path, history)
    assert check_findings(spark, lag.consumer_lag, now, tmp_path, lag_critical_messages=201) == []
    found = check_findings(spark, lag.consumer_lag, now, tmp_path, lag_critical_messages=200)
    assert {(f.subject.kind, f.evidence["status"], f.severity) for f in found} == {
        (SubjectKind.PARTITION, "CRITICAL_LAG", Severity.CRITICAL),
        (SubjectKind.GROUP, "CRITICAL_LAG", Severity.CRITICAL),
    }


def test_a_stalled_partition_stays_stall_over_the_critical_limit(spark: SparkSession, tmp_path: Path) -> None:
    history, now = series([100] * 5, [200, 300, 400, 500, 600])
    record(tmp_path, history)
    found = check_findings(spark, lag.consumer_lag, now, tmp_path, lag_critical_messages=1)
    assert {f.evidence["status"] for f in found} == {"STALL"}


def test_of_equal_lags_the_group_names_the_first_partition(spark: SparkSession, tmp_path: Path) -> None:
    """The group's worst partition does not depend on the order Spark reads the rows in: of
    partitions with equal lag, the first by topic and partition is named."""
    snaps = [
        snapshot(
            partitions=balanced_topic("t", 3),
            offsets=end_offsets({("t", p): 600 for p in (2, 1, 0)}),
            groups=[group("g", {("t", p): 100 for p in (2, 1, 0)})],
            taken_at=at(m),
        )
        for m in [*MINUTES, 0]
    ]
    record(tmp_path, snaps[:-1])
    findings = check_findings(spark, lag.consumer_lag, snaps[-1], tmp_path)
    (grp,) = [f for f in findings if f.subject.kind is SubjectKind.GROUP]
    assert grp.evidence["max_lag_partition"] == "t-0" and grp.evidence["max_lag"] == 500
