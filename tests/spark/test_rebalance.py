"""Rebalance storms from group samples in the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.snapshot import ConsumerGroup
from kafka_health_spark.checks import rebalance
from tests.spark.builders import at, check_findings, record, snapshot

pytestmark = pytest.mark.spark


def grp(state: str, members: list[str]) -> ConsumerGroup:
    return ConsumerGroup(group_id="g", state=state, members=len(members), member_ids=members)


def history(groups: list[ConsumerGroup]) -> list:
    minutes = range(-5 * len(groups), 0, 5)
    return [snapshot(groups=[g], taken_at=at(m)) for m, g in zip(minutes, groups, strict=True)]


def test_membership_churn_is_a_storm(spark: SparkSession, tmp_path: Path) -> None:
    samples = [
        grp("Stable", ["a", "b"]),
        grp("Stable", ["a", "c"]),
        grp("PreparingRebalance", ["a", "c"]),
        grp("Stable", ["a", "d"]),
        grp("Stable", ["a", "e"]),
    ]
    record(tmp_path, history(samples))
    (f,) = check_findings(
        spark, rebalance.rebalance_storm, snapshot(groups=[grp("Stable", ["a", "e"])]), tmp_path
    )
    assert f.subject.group == "g"
    # samples 2 (member change), 3 (state), 4 and 5 (member changes); the current one is unchanged
    assert f.evidence["rebalancing_samples"] == 4
    assert f.evidence["in_rebalance_state"] == 1
    assert f.evidence["samples"] == 6


def test_one_rebalance_is_normal(spark: SparkSession, tmp_path: Path) -> None:
    samples = [grp("Stable", ["a", "b"]), grp("CompletingRebalance", ["a", "b"]), grp("Stable", ["a", "c"])]
    record(tmp_path, history(samples))
    now = snapshot(groups=[grp("Stable", ["a", "c"])])
    assert check_findings(spark, rebalance.rebalance_storm, now, tmp_path) == []


def test_member_order_does_not_look_like_a_change(spark: SparkSession, tmp_path: Path) -> None:
    samples = [grp("Stable", ["a", "b", "c"]), grp("Stable", ["c", "b", "a"]), grp("Stable", ["b", "a", "c"])]
    record(tmp_path, history(samples))
    now = snapshot(groups=[grp("Stable", ["c", "a", "b"])])
    assert check_findings(spark, rebalance.rebalance_storm, now, tmp_path, rebalance_storm_samples=1) == []


def test_a_deleted_group_is_not_reported(spark: SparkSession, tmp_path: Path) -> None:
    samples = [grp("PreparingRebalance", ["a"]) for _ in range(5)]
    record(tmp_path, history(samples))
    assert check_findings(spark, rebalance.rebalance_storm, snapshot(groups=[]), tmp_path) == []
