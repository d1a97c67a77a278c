"""Flapping checks over a history written by the real HistoryStore."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health_spark.checks import flapping
from tests.spark.builders import at, balanced_topic, check_findings, part, record, snapshot

pytestmark = pytest.mark.spark


def history_of(states: list[tuple[float, list]]) -> list:
    """Snapshots at the given minutes (relative to T0) with the given partitions."""
    return [snapshot(partitions=parts, taken_at=at(m)) for m, parts in states]


def p0(leader: int, isr: list[int]) -> list:
    return [part("t", 0, leader, [0, 1, 2], isr), part("t", 1, 1, [1, 2, 0])]


def test_a_flapping_leader_is_found(spark: SparkSession, tmp_path: Path) -> None:
    record(
        tmp_path,
        history_of(
            [(-25, p0(0, [0, 1, 2])), (-20, p0(1, [1, 2])), (-15, p0(0, [0, 1, 2])), (-10, p0(1, [1, 2]))]
        ),
    )
    now = snapshot(partitions=p0(0, [0, 1, 2]))
    (f,) = check_findings(spark, flapping.leader_flapping, now, tmp_path)
    assert (f.subject.topic, f.subject.partition) == ("t", 0)
    assert f.evidence["leader_changes"] == 4
    assert f.evidence["leaders"] == "0,1"


def test_a_single_failover_is_not_flapping(spark: SparkSession, tmp_path: Path) -> None:
    record(tmp_path, history_of([(-20, p0(0, [0, 1, 2])), (-10, p0(1, [1, 2]))]))
    now = snapshot(partitions=p0(1, [1, 2, 0]))
    assert check_findings(spark, flapping.leader_flapping, now, tmp_path) == []
    assert check_findings(spark, flapping.isr_churn, now, tmp_path) == []


def test_changes_before_the_window_do_not_count_but_anchor_the_first_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Changes at -50 and -40 are outside a 30-minute window; -20 and -10 are inside, and the
    # -20 change is measured against the -40 state (written before the window).
    record(
        tmp_path,
        history_of(
            [
                (-60, p0(0, [0, 1, 2])),
                (-50, p0(1, [1, 2])),
                (-40, p0(0, [0, 1, 2])),
                (-20, p0(1, [1, 2])),
                (-10, p0(0, [0, 1, 2])),
            ]
        ),
    )
    now = snapshot(partitions=p0(0, [0, 1, 2]))
    assert check_findings(spark, flapping.leader_flapping, now, tmp_path, leader_flapping_changes=3) == []
    (f,) = check_findings(spark, flapping.leader_flapping, now, tmp_path, leader_flapping_changes=2)
    assert f.evidence["leader_changes"] == 2


def test_a_broker_repeatedly_leaving_isrs_is_flapping_and_gets_a_restart(
    spark: SparkSession, tmp_path: Path
) -> None:
    base = balanced_topic("t", 2)  # broker 2 is a replica of both partitions
    out = [part(p.topic, p.partition, p.leader, p.replicas, [r for r in p.replicas if r != 2]) for p in base]
    snaps = [(m, base if i % 2 == 0 else out) for i, m in enumerate([-28, -24, -20, -16, -12, -8, -4])]
    record(tmp_path, history_of(snaps))
    now = snapshot(partitions=base)
    (f,) = check_findings(spark, flapping.isr_churn, now, tmp_path)
    assert f.subject.broker == 2
    assert f.severity is Severity.WARNING
    assert f.remediation == "rolling_restart"
    assert f.evidence["episodes"] == 3
    assert f.evidence["isr_shrinks"] == 6 and f.evidence["isr_expands"] == 6
    assert f.evidence["partitions"] == 2


def test_without_history_there_is_nothing_to_compare(spark: SparkSession) -> None:
    now = snapshot(partitions=p0(1, [1, 2]))
    assert check_findings(spark, flapping.leader_flapping, now) == []
    assert check_findings(spark, flapping.isr_churn, now) == []
