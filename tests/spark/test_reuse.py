"""A policy's plans built once and run again each cycle find what plans built every cycle find.

Random cycles of a small cluster (leaders and ISRs change, groups come and go, brokers die and
come back), diagnosed both ways: reused plans over the policy's kept windows (as the operator
runs them: rows in the JVM, `SlotWindows`), and plans built afresh over the history read from
Parquet. Every cycle the findings and the summary must be equal. The thresholds change half-way
(the plans are built again); maintenance makes the windows read Parquet again in between.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_health.diagnose.run import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health_spark import frames, reuse
from kafka_health_spark.slot_windows import SlotWindows

from .test_windows import CLUSTER, OTHER, SMALL, START, _snapshot


def test_the_session_can_reuse_plans(spark: SparkSession) -> None:
    """The embedded test session has the plan jar on its classpath (built by setup or at start)."""
    assert reuse.available(spark)


class Variant:
    """One way of running a policy's reused plans, with windows of its own over the shared store."""

    def __init__(self, spark: SparkSession, root: Path, one_partition: bool, *, large: bool = False) -> None:
        self.one_partition = one_partition
        self.large = large  # the cluster taken as large while this variant builds and runs
        self.windows = SlotWindows(spark, str(root), CLUSTER)
        self.plans = reuse.ReusedPlans(spark, one_partition=one_partition)
        self.warm_jobs: list[int] = []
        self.kept_plans: list[object] | None = None


# The cycles: plans built at 0; warm at 1 and 2 (cycle 2 runs cycle 1's very plans); the
# worker's maintenance at 3 (windows read Parquet again, plans kept); new thresholds at 4 (plans
# built again); warm at 5 and 6.
MAINTENANCE, NEW_THRESHOLDS, WARM = 3, 4, (1, 2, 5, 6)


def test_reused_plans_find_what_fresh_plans_find_cycle_after_cycle(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In one partition (plans with no shuffle, run without jobs), partitioned (shuffles, run
    as jobs), and in one partition with the cluster taken as large (`Frames.small_cluster` false:
    small sides hinted to broadcast, checks capped by their exact rows, not a top k), alike, side
    by side over the same cycles: one fresh diagnosis from Parquet (the cluster as it is, small)
    checks all three. (One run, not one per mode: each fresh diagnosis builds every plan.)"""
    rng = random.Random(20261125)
    store = HistoryStore(tmp_path)
    variants = [
        Variant(spark, tmp_path, True),
        Variant(spark, tmp_path, False),
        Variant(spark, tmp_path, True, large=True),
    ]
    offsets: dict[tuple[str, int], int] = {}
    now = START
    thresholds = SMALL
    cycles = 7
    checked = 0
    tracker = spark.sparkContext.statusTracker()
    try:
        for cycle in range(cycles):
            now += timedelta(seconds=rng.choice([30, 60, 240]))
            snap = _snapshot(rng, now, offsets)
            written = store.append(snap)
            if cycle == MAINTENANCE:  # the worker's maintenance: the windows read Parquet again
                store.compact(CLUSTER)
            if cycle == NEW_THRESHOLDS:
                thresholds = OTHER
            fresh = run_diagnosis(snap, tmp_path, thresholds, spark)  # (from Parquet)
            checked += len(fresh.findings)
            for v in variants:
                jobs_before = max(tracker.getJobIdsForGroup(None) or [0])
                with monkeypatch.context() as m:
                    if v.large:
                        m.setattr(frames, "SMALL_CLUSTER_PARTITIONS", 0)
                    v.windows.record(written.tables, now)
                    if cycle == MAINTENANCE:
                        v.windows.invalidate()
                    reused = run_diagnosis(
                        snap, tmp_path, thresholds, spark, windows=v.windows, plans=v.plans
                    )
                if cycle in WARM:  # (neither a new build nor a Parquet read)
                    v.warm_jobs.append(max(tracker.getJobIdsForGroup(None) or [0]) - jobs_before)
                where = f"cycle {cycle} at {now}, one partition: {v.one_partition}, large: {v.large}"
                assert v.plans._shape is not None and v.plans._shape.small_cluster is not v.large, where
                assert reused.findings == fresh.findings, where
                assert reused.summary == fresh.summary, where
                _check_kept_plans(v, cycle)
        for v in variants:
            v.plans.interrupt("past its deadline")  # (what a cycle past its deadline does)
            with monkeypatch.context() as m, pytest.raises(reuse.CycleInterrupted, match="past its deadline"):
                if v.large:
                    m.setattr(frames, "SMALL_CLUSTER_PARTITIONS", 0)
                run_diagnosis(snap, tmp_path, thresholds, spark, windows=v.windows, plans=v.plans)
    finally:
        for v in variants:
            v.plans.close()
            v.windows.close()
    assert checked > cycles, "the random cluster had findings to compare"
    for v in variants:
        if v.one_partition:
            assert v.warm_jobs == [0, 0, 0, 0], (
                "a warm cycle (windows recorded, checks run) runs no Spark job"
            )
        else:
            assert all(v.warm_jobs), f"Spark jobs per warm cycle: {v.warm_jobs}"
        assert v.plans.builds == 2, "built once, and again when the thresholds changed"
        held = spark._jvm.io.kafkahealth.spark.Slots.count(v.plans._slot("partitions"))  # type: ignore[union-attr]
        assert held == 0, "close() freed the policy's slots (rows or columns)"


def _check_kept_plans(v: Variant, cycle: int) -> None:
    """The second warm cycle runs the very plans the first ran; in one partition each as its
    prepared RDD."""
    plans = v.plans
    if cycle == WARM[0]:
        v.kept_plans = [p.top for p in plans._checks]
    if cycle == WARM[1]:
        assert [p.top for p in plans._checks] == v.kept_plans, "the planned plans are the same objects"
        prepared = [p for c in plans._checks for p in (c.top, c.exact) if p is not None]
        prepared += [plans._summary] + [p for _, p in plans._materialized + plans._samples]
        rerun = {bool(p.reused()) for p in prepared}
        assert rerun == {v.one_partition}, "in one partition every plan runs as its prepared RDD"


def test_a_plan_run_without_a_job_stops_when_interrupted(spark: SparkSession) -> None:
    """A cycle past its deadline cancels its Spark jobs; a prepared plan runs none, so it is
    interrupted instead (`ReusedPlans.interrupt`), and stops at its next rows."""
    jvm = spark._jvm.io.kafkahealth.spark  # type: ignore[union-attr]
    numbers = spark.range(300_000).toDF("x")
    jvm.Slots.fill("test-interrupt/x", numbers._jdf)
    try:
        slot = (
            spark.read.format(reuse.SLOT_SOURCE)
            .schema(numbers.schema)
            .option("slot", "test-interrupt/x")
            .option("rowsPerPartition", str(reuse.ONE_PARTITION))
            .load()
        )
        slow = slot.select(F.sha2(F.repeat(F.col("x").cast("string"), 300), 512).alias("h")).agg(F.max("h"))
        plan = jvm.PreparedPlan.of(spark._jsparkSession, jvm.Plans.plan(slow._jdf, True), True)
        assert plan.reused()
        failed: list[Exception] = []

        def run() -> None:
            try:
                plan.collect(spark._jsparkSession)
            except Exception as exc:
                failed.append(exc)

        running = threading.Thread(target=run)
        running.start()
        time.sleep(0.3)  # (the whole run takes seconds)
        plan.interrupt("past its deadline")
        running.join(30)
        assert not running.is_alive()
        assert failed and "TaskKilledException: past its deadline" in str(failed[0])
    finally:
        jvm.Slots.drop("test-interrupt/")


def _slot_frame(spark: SparkSession, name: str, frame: DataFrame) -> DataFrame:
    jvm = spark._jvm.io.kafkahealth.spark  # type: ignore[union-attr]
    jvm.Slots.fill(name, frame._jdf)
    return (
        spark.read.format(reuse.SLOT_SOURCE)
        .schema(frame.schema)
        .option("slot", name)
        .option("rowsPerPartition", str(reuse.ONE_PARTITION))
        .load()
    )


def test_one_partition_plans_format_only_the_rows_kept_and_hash_their_joins(spark: SparkSession) -> None:
    """In one partition (`Plans.plan(frame, true)`), a top k projects only the k rows it keeps, a
    count over all rows runs below the projection (as `findings.capped` counts a check's rows),
    and a join hinted as the frames hint it in one partition (`frames.hinted_join`) is a hash join
    with no sort; the rows are those Spark returns for the same frame planned as usual."""
    from kafka_health_spark.findings import capped, worst_first

    jvm = spark._jvm.io.kafkahealth.spark  # type: ignore[union-attr]
    try:
        numbers = _slot_frame(spark, "test-late/n", spark.range(5_000).toDF("x"))
        names = _slot_frame(
            spark,
            "test-late/names",
            spark.range(0, 5_000, 3).select(F.col("id").alias("x"), F.lit("y").alias("y")),
        )
        rows = frames.hinted_join(numbers, names, "x", "left", hashed=True).select(
            F.lit("check").alias("check"),
            F.when(F.col("x") % 7 == 0, "critical").otherwise("warning").alias("severity"),
            F.lit("partition").alias("subject_kind"),
            F.lit(None).cast("int").alias("broker"),
            F.format_string("t%d", F.col("x") % 11).alias("topic"),
            F.col("x").cast("int").alias("partition"),
            F.col("y").alias("group"),
            F.format_string("row %d %s", "x", F.sha2(F.col("x").cast("string"), 256)).alias("message"),
            F.lit("{}").alias("evidence"),
            F.lit(None).cast("string").alias("remediation"),
        )

        def planned(df: DataFrame) -> tuple[str, list[tuple[object, ...]]]:
            plan = jvm.PreparedPlan.of(spark._jsparkSession, jvm.Plans.plan(df._jdf, True), True)
            assert plan.reused()
            got = [tuple(r) for r in DataFrame(plan.run(spark._jsparkSession), spark).collect()]
            return plan.describe(), got

        for df in (worst_first(rows, 20), capped(rows, 20)):
            text, got = planned(df)
            assert sorted(got) == sorted(tuple(r) for r in df.collect())
            assert "SortMergeJoin" not in text and "ShuffledHashJoin" in text
            top = text[text.index("TakeOrderedAndProject") :]
            # below the top k, nothing formats a message: the scans, the join and the count only
            assert "format_string" not in top.split("\n", 1)[1], text
            assert "format_string" in top.split("\n", 1)[0]
        assert len(got) == 20 and {r[-2] for r in got} == {5_000}, (
            "capped: each row carries the check's total"
        )
    finally:
        jvm.Slots.drop("test-late/")


def test_one_partition_hashes_small_sides_from_the_current_rows(spark: SparkSession) -> None:
    """In one partition a join hinted as the frames hint it (`frames.hinted_join`) is a shuffled
    hash join on its smaller side (by the slots' statistics), with no broadcast (a job of its
    own) and no sort, and the
    snapshot's parts are read as Arrow columns (`Slots.putColumns`). The same prepared plan, run
    again after its slots changed (keys unique, then repeated, then no rows at all), returns what
    Spark returns for the frame planned as usual every time: nothing in the prepared plan assumes
    the first run's keys unique or its side empty."""
    import pyarrow as pa
    from pyspark.sql import types as T

    jvm = spark._jvm.io.kafkahealth.spark  # type: ignore[union-attr]
    big_schema = T.StructType([T.StructField("k", T.IntegerType()), T.StructField("v", T.StringType())])
    small_schema = T.StructType([T.StructField("k", T.IntegerType()), T.StructField("w", T.StringType())])

    def put(slot: str, keys: list[int], text: str, schema: T.StructType) -> None:
        table = pa.table({"k": pa.array(keys, pa.int32()), schema.names[1]: [f"{text}{k}" for k in keys]})
        assert reuse.put_columns(spark, slot, table, schema) == len(keys)

    def read(slot: str, schema: T.StructType) -> DataFrame:
        return (
            spark.read.format(reuse.SLOT_SOURCE)
            .schema(schema)
            .option("slot", slot)
            .option("rowsPerPartition", str(reuse.ONE_PARTITION))
            .option("statistics", "true")
            .option("columns", "true")
            .load()
        )

    try:
        put("test-local/big", list(range(20_000)), "v", big_schema)
        put("test-local/small", list(range(0, 300, 3)), "w", small_schema)

        def joined() -> list[DataFrame]:  # (new frames: a frame run again keeps its shuffles' rows)
            big, small = read("test-local/big", big_schema), read("test-local/small", small_schema)
            join = frames.hinted_join
            return [
                join(big, small, "k", "left", hashed=True),
                join(big, small, "k", hashed=True),
                join(small, big, "k", hashed=True),
            ]

        plans = [
            jvm.PreparedPlan.of(spark._jsparkSession, jvm.Plans.plan(df._jdf, True), True) for df in joined()
        ]
        for plan in plans:
            text = plan.describe()
            assert plan.reused(), text
            assert "ShuffledHashJoin" in text and "BroadcastHashJoin" not in text, text
            assert "BroadcastExchange" not in text and "SortMergeJoin" not in text, text
        for keys in (list(range(0, 300, 3)), [1, 1, 1, 5, 5, 19_999], []):
            put("test-local/small", keys, "w", small_schema)
            for df, plan in zip(joined(), plans, strict=True):
                got = sorted(tuple(r) for r in DataFrame(plan.run(spark._jsparkSession), spark).collect())
                want = sorted(tuple(r) for r in df.collect())
                assert got == want, f"keys {keys[:6]}"
            assert len(DataFrame(plans[1].run(spark._jsparkSession), spark).collect()) == len(keys)
    finally:
        jvm.Slots.drop("test-local/")
    assert jvm.Slots.count("test-local/big") == 0, "drop() freed the columns"
