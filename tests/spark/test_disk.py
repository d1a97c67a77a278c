"""Disk checks: usage thresholds, time to full from the growth rate, failed log dirs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health.models.snapshot import LogDir
from kafka_health_spark.checks import disk
from tests.spark.builders import at, check_findings, record, snapshot

pytestmark = pytest.mark.spark

GIB = 1024**3


def dirs(used: dict[int, float], total: float | None = 100) -> list[LogDir]:
    """One log dir per broker, `used` and `total` in GiB."""
    return [
        LogDir(
            broker_id=b,
            path=f"/data/{b}",
            used_bytes=int(u * GIB),
            total_bytes=int(total * GIB) if total is not None else None,
        )
        for b, u in used.items()
    ]


def test_usage_thresholds(spark: SparkSession) -> None:
    snap = snapshot(log_dirs=dirs({0: 50, 1: 85, 2: 95}))
    found = {f.subject.broker: f for f in check_findings(spark, disk.disk_usage, snap)}
    assert set(found) == {1, 2}
    assert found[1].severity is Severity.WARNING and found[2].severity is Severity.CRITICAL
    assert found[2].evidence["percent"] == 95.0


def test_usage_summed_over_a_brokers_log_dirs(spark: SparkSession) -> None:
    two = [
        LogDir(broker_id=0, path="/a", used_bytes=45 * GIB, total_bytes=50 * GIB),
        LogDir(broker_id=0, path="/b", used_bytes=40 * GIB, total_bytes=50 * GIB),
    ]
    (f,) = check_findings(spark, disk.disk_usage, snapshot(log_dirs=two))
    assert f.evidence["percent"] == 85.0


def test_unknown_volume_size_is_not_guessed(spark: SparkSession) -> None:
    assert check_findings(spark, disk.disk_usage, snapshot(log_dirs=dirs({0: 99}, total=None))) == []


def test_time_to_full_from_growth(spark: SparkSession, tmp_path: Path) -> None:
    # Broker 0 grows 1 GiB per 10 minutes from 60 GiB: at 70 GiB now, 30 GiB left → 5 h.
    history = [snapshot(log_dirs=dirs({0: 60 + i, 1: 10}), taken_at=at(-100 + 10 * i)) for i in range(10)]
    record(tmp_path, history)
    now = snapshot(log_dirs=dirs({0: 70, 1: 10}))
    (f,) = check_findings(spark, disk.disk_time_to_full, now, tmp_path)
    assert f.subject.broker == 0
    assert f.evidence["hours_to_full"] == pytest.approx(5.0, rel=0.01)
    assert f.severity is Severity.CRITICAL  # < 12 h
    assert check_findings(spark, disk.disk_time_to_full, now, tmp_path, disk_full_warn_hours=4) == []


def test_no_growth_estimate_from_a_single_sample(spark: SparkSession) -> None:
    assert check_findings(spark, disk.disk_time_to_full, snapshot(log_dirs=dirs({0: 89}))) == []


def test_failed_log_dir(spark: SparkSession) -> None:
    bad = [LogDir(broker_id=1, path="/data/1", error="KAFKA_STORAGE_ERROR"), *dirs({0: 10})]
    (f,) = check_findings(spark, disk.log_dir_errors, snapshot(log_dirs=bad))
    assert f.subject.broker == 1 and f.severity is Severity.CRITICAL


def test_fullness_counts_everything_on_the_volume(spark: SparkSession) -> None:
    # Kafka holds 10 GiB of a 100 GiB volume, but only 8 GiB are free: 92 % full.
    shared = [
        LogDir(broker_id=0, path="/d", used_bytes=10 * GIB, total_bytes=100 * GIB, usable_bytes=8 * GIB)
    ]
    (f,) = check_findings(spark, disk.disk_usage, snapshot(log_dirs=shared))
    assert f.severity is Severity.CRITICAL
    assert f.evidence["percent"] == 92.0
    assert f.evidence["usable_bytes"] == 8 * GIB
