"""The session resolves each JVM class and static method once: a column function then costs
one Py4J round trip, not three."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from py4j.java_gateway import GatewayClient
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kafka_health_spark.findings import capped

pytestmark = pytest.mark.spark

MEMORY_COMMAND = "m"  # Py4J's command for releasing a Java object; sent whenever Python's GC runs


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    sent: list[str] = []
    send = GatewayClient.send_command

    def counted(client: Any, command: str, *a: Any, **kw: Any) -> Any:
        kind = command.split("\n")[0]
        if kind != MEMORY_COMMAND:  # a Python object's Java twin freed by GC: not the call's cost
            sent.append(kind)
        return send(client, command, *a, **kw)

    gc.collect()  # objects garbage from earlier tests are released before counting starts
    monkeypatch.setattr(GatewayClient, "send_command", counted)
    yield sent


def test_a_column_function_is_one_round_trip_once_resolved(
    spark: SparkSession, round_trips: list[str]
) -> None:
    F.col("warm_up")  # resolves functions.col once
    round_trips.clear()
    column = F.col("id")
    assert round_trips == ["c"], "a call, no reflection lookups"
    assert spark.range(1).select(column.alias("topic")).first() is not None  # the column still works


def test_capping_columns_are_built_once(spark: SparkSession, round_trips: list[str]) -> None:
    rows = spark.createDataFrame(
        [("a", "critical", None, "t", 0, None), ("a", "warning", None, "t", 1, None)],
        "check string, severity string, broker int, topic string, partition int, group string",
    )
    capped(rows, 1)
    round_trips.clear()
    kept = capped(rows, 1)
    assert len(round_trips) <= 4, f"withColumn twice and a filter, not ~70 calls: {round_trips}"
    assert [(r["partition"], r["check_total"]) for r in kept.collect()] == [(0, 2)]
