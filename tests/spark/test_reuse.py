"""A policy's plans built once and run again each cycle find what plans built every cycle find.

Random cycles of a small cluster (leaders and ISRs change, groups come and go, brokers die and
come back), diagnosed both ways over the same kept windows: every cycle the findings and the
summary must be equal. The thresholds change half-way (the plans are built again); maintenance
makes the windows read Parquet again in between.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from kafka_health.diagnose.run import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health_spark import reuse
from kafka_health_spark.windows import HistoryWindows

from .test_windows import CLUSTER, OTHER, SMALL, START, _snapshot


def test_the_session_can_reuse_plans(spark: SparkSession) -> None:
    """The embedded test session has the plan jar on its classpath (built by setup or at start)."""
    assert reuse.available(spark)


def test_reused_plans_find_what_fresh_plans_find_cycle_after_cycle(
    spark: SparkSession, tmp_path: Path
) -> None:
    rng = random.Random(20261125)
    store = HistoryStore(tmp_path)
    windows = HistoryWindows(spark, str(tmp_path), CLUSTER)
    plans = reuse.ReusedPlans(spark)
    offsets: dict[tuple[str, int], int] = {}
    now = START
    thresholds = SMALL
    cycles = 10
    checked = 0
    kept_plans = None
    try:
        for cycle in range(cycles):
            now += timedelta(seconds=rng.choice([30, 60, 240]))
            snap = _snapshot(rng, now, offsets)
            windows.record(store.append(snap).tables, now)
            if cycle == 4:  # the worker's maintenance: the windows read Parquet again
                store.compact(CLUSTER)
                windows.invalidate()
            if cycle == cycles // 2:
                thresholds = OTHER
            reused = run_diagnosis(snap, tmp_path, thresholds, spark, windows=windows, plans=plans)
            fresh = run_diagnosis(snap, tmp_path, thresholds, spark, windows=windows)
            assert reused.findings == fresh.findings, f"cycle {cycle} at {now}"
            assert reused.summary == fresh.summary, f"cycle {cycle} at {now}"
            checked += len(fresh.findings)
            if cycle == 2:
                kept_plans = [p.top for p in plans._checks]
            if cycle == 3:
                assert [p.top for p in plans._checks] == kept_plans, "the planned plans are the same objects"
    finally:
        plans.close()
    assert checked > cycles, "the random cluster had findings to compare"
    assert plans.builds == 2, "built once, and again when the thresholds changed"
    held = spark._jvm.io.kafkahealth.spark.Slots.rows(plans._slot("partitions"))  # type: ignore[union-attr]
    assert len(held) == 0, "close() freed the policy's slots"
