"""Spark reads what the history writes: Hive partitions (escaped cluster names included), exact schemas."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from kafka_health.history.schema import TABLES
from kafka_health.history.store import HistoryStore

from .synthetic import T0, healthy, snapshot

pytestmark = pytest.mark.spark

CLUSTER = "kafka-0.kafka:9092,kafka-1.kafka:9092"


def test_spark_reads_every_table_with_partition_pruning(tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from kafka_health_spark.frames import HISTORY_SCHEMAS, history_read_schema
    from kafka_health_spark.session import get_session

    spark = get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g")
    store = HistoryStore(tmp_path)
    state = healthy()
    for i in range(3):
        state[("orders", 0)] = (0, [0, 1, 2], [0, 1, 2] if i % 2 == 0 else [0, 2])
        store.append(snapshot(T0 + i * timedelta(hours=12), state, cluster=CLUSTER))
    store.append(snapshot(T0, cluster="other"))
    store.compact(CLUSTER)

    for table in TABLES:
        full = history_read_schema(table)
        df = spark.read.schema(full).parquet(str(store.table_path(table)))
        day = (T0 + timedelta(days=1)).date().isoformat()
        ours = df.where((F.col("cluster") == CLUSTER) & (F.col("date") == day)).orderBy("ts")
        expected = store.read(table, CLUSTER, since=T0 + timedelta(days=1), until=T0 + timedelta(days=2))
        got = ours.select(*TABLES[table].names).toArrow()
        assert got.num_rows == expected.num_rows, table
        assert got.column("ts").to_pylist() == expected.column("ts").to_pylist(), table
        # Reading must not change the shared schemas later readers build on.
        assert HISTORY_SCHEMAS[table].names == TABLES[table].names, table
