"""Frames: the snapshot as typed DataFrames, and history windows pruned by cluster and date."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.history import layout
from kafka_health_spark import frames
from kafka_health_spark.thresholds import Thresholds
from tests.spark.builders import T0, at, balanced_topic, brokers, record, snapshot

pytestmark = pytest.mark.spark

ODD_NAME = "10.0.0.1:9092,10.0.0.2:9092"  # a cluster named after its bootstrap servers


def test_empty_snapshot_gives_typed_empty_frames(spark: SparkSession) -> None:
    f = frames.build_frames(spark, snapshot(broker_list=[]), None, Thresholds())
    assert f.partitions.count() == 0
    assert f.partitions.schema == frames.SNAPSHOT_SCHEMAS["partitions"]
    assert f.group_offset_samples.count() == 0


def test_snapshot_rows_round_trip(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("t", 2), broker_list=brokers(0, 1, dead=(2,)))
    f = frames.build_frames(spark, snap, None, Thresholds())
    rows = sorted((r.partition, r.leader, r.replicas, r.isr) for r in f.partitions.collect())
    assert rows == [(0, 0, [0, 1, 2], [0, 1, 2]), (1, 1, [1, 2, 0], [1, 2, 0])]
    assert {(r.broker, r.alive) for r in f.brokers.collect()} == {(0, True), (1, True), (2, False)}


def test_history_window_is_pruned_by_cluster_and_date(spark: SparkSession, tmp_path: Path) -> None:
    mine = [snapshot(broker_list=brokers(0, 1, 2), taken_at=at(m)) for m in (-40, -20, -10)]
    theirs = [s.model_copy(update={"cluster": ODD_NAME}) for s in mine]
    record(tmp_path, mine)
    record(tmp_path, theirs)
    # Poison another cluster's files and an older date of this one: pruning must never open them.
    poison = b"not parquet"
    other = layout.date_dir(tmp_path, "broker_samples", ODD_NAME, T0.date())
    (other / "part-poison.parquet").write_bytes(poison)
    old = layout.date_dir(tmp_path, "broker_samples", "test-cluster", (T0 - timedelta(days=3)).date())
    old.mkdir(parents=True)
    (old / "part-poison.parquet").write_bytes(poison)

    df = frames.read_history(spark, str(tmp_path), "broker_samples", "test-cluster", at(-30), T0)
    minutes = sorted(
        {round((r.ts.replace(tzinfo=T0.tzinfo) - T0).total_seconds() / 60) for r in df.collect()}
    )
    assert minutes == [-20, -10]  # -40 is before the window
    assert df.columns == frames.HISTORY_SCHEMAS["broker_samples"].names


def test_escaped_cluster_name_reads_back(spark: SparkSession, tmp_path: Path) -> None:
    record(
        tmp_path,
        [snapshot(broker_list=brokers(0, 1), taken_at=at(-5)).model_copy(update={"cluster": ODD_NAME})],
    )
    df = frames.read_history(spark, str(tmp_path), "broker_samples", ODD_NAME, at(-10), T0)
    assert sorted(r.broker for r in df.collect()) == [0, 1]


def test_missing_history_is_an_empty_window(spark: SparkSession, tmp_path: Path) -> None:
    df = frames.read_history(spark, str(tmp_path / "nothing"), "group_samples", "c", at(-10), T0)
    assert df.count() == 0
    assert df.schema == frames.HISTORY_SCHEMAS["group_samples"]


def test_current_snapshot_is_the_newest_sample_once(spark: SparkSession, tmp_path: Path) -> None:
    history = [snapshot(broker_list=brokers(0), taken_at=at(-5))]
    now = snapshot(broker_list=brokers(0))
    # The CLI appends the snapshot before diagnosing: it must not be counted twice.
    record(tmp_path, [*history, now])
    f = frames.build_frames(spark, now, str(tmp_path), Thresholds())
    assert f.broker_samples.count() == 2


def test_a_small_snapshot_part_is_one_spark_partition(spark: SparkSession) -> None:
    """Spark would spread it over every core, and each slice is one more task per stage."""
    f = frames.build_frames(spark, snapshot(partitions=balanced_topic("t", 6)), None, Thresholds())
    assert f.partitions.rdd.getNumPartitions() == 1
    assert f.brokers.rdd.getNumPartitions() == 1
    assert frames.partitions_for(0) == 1
    assert frames.partitions_for(frames.ROWS_PER_PARTITION + 1) == 2


def test_materialized_shared_frames_are_freed_when_released(spark: SparkSession, tmp_path: Path) -> None:
    """A frame `shared(materialize=True)` holds cached blocks until the diagnosis releases it."""

    def persisted() -> int:
        return int(spark.sparkContext._jsc.getPersistentRDDs().size())

    snaps = [snapshot(partitions=balanced_topic("t", 3), taken_at=at(m)) for m in (-20, -10, 0)]
    record(tmp_path, snaps)
    f = frames.build_frames(spark, snaps[-1], str(tmp_path), Thresholds())
    before = persisted()
    built = f.shared("test.materialized", lambda fr: fr.partitions.where("leader = 0"), materialize=True)
    assert f.shared("test.materialized", lambda fr: fr.partitions) is built  # built once
    assert built.count() == 1
    assert persisted() == before + 1
    f.release()
    assert persisted() == before


def test_the_small_side_of_a_partition_join_broadcasts_only_for_a_large_cluster(spark: SparkSession) -> None:
    """For a small cluster a plain join is cheaper than a broadcast job; for a large one the
    partitions would be shuffled and sorted whole, so the small side is broadcast."""
    from dataclasses import replace

    from kafka_health_spark.checks import replication

    snap = snapshot(partitions=balanced_topic("t", 2), broker_list=brokers(0, 1, 2))
    small = frames.build_frames(spark, snap, None, Thresholds())
    large = replace(small, partition_count=frames.SMALL_CLUSTER_PARTITIONS + 1)

    def plan(f: frames.Frames) -> str:
        return str(replication._build_with_state(f)._jdf.queryExecution().executedPlan().toString())

    assert "BroadcastHashJoin" not in plan(small)
    assert plan(large).count("BroadcastHashJoin") == 2
    assert replication._build_with_state(small).count() == 2
