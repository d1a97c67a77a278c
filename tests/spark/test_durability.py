"""Durability checks: RF, min ISR and unclean election settings per topic."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health_spark.checks import durability
from tests.spark.builders import balanced_topic, check_findings, config, part, snapshot

pytestmark = pytest.mark.spark


def topics(findings: list) -> dict[str, Severity]:
    return {f.subject.topic: f.severity for f in findings}


def test_default_settings_raise_nothing(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("orders"))
    for check in durability.CHECKS:
        assert check_findings(spark, check, snap) == []


def test_replication_factor_below_three(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[part("rf1", 0, 0, [0]), part("rf2", 0, 0, [0, 1]), *balanced_topic("rf3", 2)],
        configs=[config("rf1", 1), config("rf2", 1), config("rf3", 2)],
    )
    found = check_findings(spark, durability.low_replication_factor, snap)
    assert topics(found) == {"rf1": Severity.WARNING, "rf2": Severity.WARNING}
    rf1 = next(f for f in found if f.subject.topic == "rf1")
    assert rf1.evidence["replication_factor"] == 1
    assert "loses its data" in rf1.message


def test_min_isr_below_two_when_rf_allows_more(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[*balanced_topic("weak", 1), part("rf1", 0, 0, [0])],
        configs=[config("weak", 1), config("rf1", 1)],
    )
    found = check_findings(spark, durability.low_min_isr, snap)
    assert topics(found) == {"weak": Severity.WARNING}  # RF 1 cannot have more: reported as RF


def test_min_isr_not_below_rf(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[part("equal", 0, 0, [0, 1]), part("above", 0, 0, [0]), *balanced_topic("fine", 1)],
        configs=[config("equal", 2), config("above", 2), config("fine", 2)],
    )
    found = check_findings(spark, durability.min_isr_too_high, snap)
    assert topics(found) == {"equal": Severity.WARNING, "above": Severity.CRITICAL}


def test_unclean_leader_election_enabled(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[*balanced_topic("risky", 1), *balanced_topic("safe", 1)],
        configs=[config("risky", unclean=True), config("safe")],
    )
    found = check_findings(spark, durability.unclean_leader_election, snap)
    assert topics(found) == {"risky": Severity.WARNING}
