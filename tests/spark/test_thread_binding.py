"""Spark work runs with its session's SQL settings whichever thread starts it.

PySpark pins each Python thread to a JVM thread, and only the thread that built the session has
it active: elsewhere `SQLConf.get` falls back to Spark's defaults (200 shuffle partitions,
adaptive execution on, the JVM's time zone). The operator diagnoses in worker threads and the
CLI starts its session in a thread of its own, so `session.bind_to_thread` runs at every entry
(`run_diagnosis`, `jobs.tagged`, `jobs.carry`). Unbound, a warm operator cycle of a small
cluster took 3.3 s instead of 0.85 s (the plan jar's plans run outside the Dataset API, which
would set the session around its actions).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from pyspark.sql import SparkSession

from kafka_health.diagnose.run import run_diagnosis
from kafka_health_spark import jobs, runner
from kafka_health_spark.session import bind_to_thread
from tests.spark import builders

pytestmark = pytest.mark.spark

T = TypeVar("T")
SESSION = (4, False)  # the suite's session (tests/spark/conftest.py): 4 shuffle partitions, adaptive off
SPARK_DEFAULTS = (200, True)


def settings(spark: SparkSession) -> tuple[int, bool]:
    """The SQL settings Spark applies in the calling thread."""
    conf = spark._jvm.org.apache.spark.sql.internal.SQLConf.get()  # type: ignore[union-attr]
    return conf.numShufflePartitions(), conf.adaptiveExecutionEnabled()


def in_new_thread(fn: Callable[[], T]) -> T:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result()


def test_a_new_thread_has_spark_defaults_until_bound(spark: SparkSession) -> None:
    """The reason for the binding: if Spark ever gives new threads the session's settings, the
    second assertion fails and the binding can go."""
    assert settings(spark) == SESSION  # the thread that built the session
    assert in_new_thread(lambda: settings(spark)) == SPARK_DEFAULTS

    def bound() -> tuple[int, bool]:
        bind_to_thread(spark)
        return settings(spark)

    assert in_new_thread(bound) == SESSION


def test_tagged_and_carried_work_runs_bound(spark: SparkSession) -> None:
    def tagged() -> tuple[int, bool]:
        with jobs.tagged(spark, "binding-test"):
            return settings(spark)

    assert in_new_thread(tagged) == SESSION

    def carried_from_an_unbound_thread() -> tuple[int, bool]:
        return in_new_thread(jobs.carry(spark, lambda: settings(spark)))

    assert in_new_thread(carried_from_an_unbound_thread) == SESSION


def test_a_diagnosis_from_a_worker_thread_runs_its_checks_bound(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the operator runs it: `run_diagnosis` called in a worker thread; each check thread
    (and the caller, after it) sees the session's settings."""
    seen: list[tuple[int, bool]] = []
    collect = runner.collect_findings

    def recording(*args: object, **kwargs: object) -> object:
        seen.append(settings(spark))
        return collect(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "collect_findings", recording)
    snap = builders.snapshot(partitions=builders.balanced_topic("bound"))

    def diagnose() -> tuple[int, bool]:
        run_diagnosis(snap, None, None, spark, with_summary=False)
        return settings(spark)

    assert in_new_thread(diagnose) == SESSION
    assert seen and set(seen) == {SESSION}, seen
