"""`get_session(short_lived=True)`: the one-shot CLI's cold-JVM settings apply only to a JVM that
call starts, never to a session the process already runs (the operator's, a test run's); a
long-lived JVM gets the heap-sizing settings instead."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafka_health_spark import class_archive, plan_jar, reuse
from kafka_health_spark.session import (
    ALLOCATION_CONF,
    EXIT_ON_OUT_OF_MEMORY,
    JAVA_OPTIONS_ENV,
    LONG_LIVED_JAVA_OPTIONS,
    REBUILT_PLANS_JAVA_OPTIONS,
    SHORT_LIVED_CONF,
    SHORT_LIVED_JAVA_OPTIONS,
    STATUS_RETENTION_CONF,
    _our_jvm_settings,
    get_session,
)

pytestmark = pytest.mark.spark

PROBE = """
from kafka_health_spark.session import get_session
s = get_session(short_lived=True)
print(s.conf.get("spark.sql.codegen.factoryMode"), s.conf.get("spark.sql.codegen.wholeStage"))
print(s.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
print(s.range(5).selectExpr("sum(id * 2) AS total").first()["total"])
"""


def test_a_short_lived_jvm_starts_tuned_for_one_run() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modes, java, total = done.stdout.strip().splitlines()[-3:]
    assert modes.split() == [SHORT_LIVED_CONF["spark.sql.codegen.factoryMode"], "false"]
    ours = java.removesuffix(os.environ.get(JAVA_OPTIONS_ENV, "")).rstrip()
    assert ours.endswith(SHORT_LIVED_JAVA_OPTIONS), java
    assert EXIT_ON_OUT_OF_MEMORY in java.split()
    assert total == "20"  # the interpreter computes what generated code would


def test_a_running_session_keeps_its_settings(spark: SparkSession) -> None:
    before = (spark.conf.get("spark.sql.codegen.factoryMode"), spark.conf.get("spark.sql.codegen.wholeStage"))
    # The fixture's own arguments: only short_lived differs (other runtime settings would apply).
    again = get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g", short_lived=True)
    assert again is spark
    assert (
        again.conf.get("spark.sql.codegen.factoryMode"),
        again.conf.get("spark.sql.codegen.wholeStage"),
    ) == before
    assert before == ("FALLBACK", "true")


def test_a_long_lived_jvm_grows_its_heap_only_as_needed(spark: SparkSession) -> None:
    # The flags the JVM actually runs with, as it reports them (not the configuration text).
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    running = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    # The suite's own options (KAFKA_HEALTH_SPARK_JAVA_OPTIONS, tests/conftest.py) come right after
    # ours, so that they win; what is ours is what a user's operator runs with.
    extra = os.environ.get(JAVA_OPTIONS_ENV, "").split()
    ours = running[: _index_of(running, extra)]
    assert set(LONG_LIVED_JAVA_OPTIONS.split()) <= set(ours), running
    assert EXIT_ON_OUT_OF_MEMORY in ours  # an out-of-heap JVM exits: tests/spark/test_driver_exit.py
    assert "-XX:+UseSerialGC" not in ours  # the one-shot's collector: thrashes a 1g heap at 100k
    # Its plans are reused (a local master, the plan jar), their code generated once: C2 compiles
    # it too (C1 only is for a driver that builds its plans every cycle).
    assert reuse.available(spark)
    assert REBUILT_PLANS_JAVA_OPTIONS not in ours, running


def _index_of(running: list[str], extra: list[str]) -> int:
    """Where the user's options start among the JVM's arguments (the end when there are none)."""
    if not extra:
        return len(running)
    starts = [i for i in range(len(running)) if running[i : i + len(extra)] == extra]
    assert starts, f"{JAVA_OPTIONS_ENV} {extra} is not among the JVM's arguments {running}"
    return starts[-1]


def test_a_long_lived_jvm_keeps_room_for_compiled_code(spark: SparkSession) -> None:
    # With the first JIT tier only, HotSpot reserves 48 MB of code cache, which fills within the
    # first cycles; the JIT then stops and everything after runs interpreted.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    code = sum(
        p.getUsage().getMax() for p in pools if "CodeHeap" in p.getName() or p.getName() == "CodeCache"
    )
    assert code >= 240 * 2**20, code


def test_tasks_allocate_small_pages_and_broadcast_blocks(spark: SparkSession) -> None:
    conf = spark.sparkContext.getConf()
    for key, value in ALLOCATION_CONF.items():
        assert conf.get(key) == value, key
    assert spark.conf.get("spark.sql.codegen.aggregate.map.twolevel.enabled") == "false"


def test_spark_keeps_only_the_last_jobs_and_sql_executions(spark: SparkSession) -> None:
    # Spark's status store kept 1,000 of each by default, with each SQL execution's plan text.
    conf = spark.sparkContext.getConf()
    for key, value in STATUS_RETENTION_CONF.items():
        assert conf.get(key) == value, key
    kept_jobs = int(STATUS_RETENTION_CONF["spark.ui.retainedJobs"])
    kept_executions = int(STATUS_RETENTION_CONF["spark.sql.ui.retainedExecutions"])
    for _ in range(kept_jobs + 20):
        spark.range(1).collect()
    sc = spark.sparkContext
    store = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while True:  # the store trims itself after the listener bus delivers the events
        jobs = len(sc.statusTracker().getJobIdsForGroup(None))
        executions = int(store.executionsCount())
        if (jobs <= kept_jobs and executions <= kept_executions) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert jobs <= kept_jobs
    assert executions <= kept_executions


def test_a_long_lived_jvm_maps_the_class_archive_only_when_asked(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The suite asks (tests/conftest.py): the fixture's JVM has mapped the archive, which it can
    # only do when its class path starts like the one the archive was written with.
    assert class_archive.wanted_in_long_lived_jvms()
    archive = class_archive.archive_path()
    assert archive is not None and archive.is_file()
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    running = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in running, running
    process = SparkContext._gateway.proc  # type: ignore[attr-defined]
    assert str(archive) in Path(f"/proc/{process.pid}/maps").read_text()
    assert "-Xlog:all=warning:stderr" in running  # its own log lines stay off stdout
    # By default a long-lived JVM maps none: it would stay in the operator's RSS for days
    # (docs/diagnostics.md "One-shot"). Its settings as if this process started its first JVM:
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    for asked, maps in (("", False), ("1", True)):
        monkeypatch.setenv(class_archive.LONG_LIVED_ENV, asked)
        options, confs = _our_jvm_settings("local[2]", {}, False, None)
        assert ("SharedArchiveFile" in options) is maps, options
        assert confs["spark.driver.extraClassPath"] == str(plan_jar.jar_path())
    options, confs = _our_jvm_settings("local[2]", {}, True, None)  # a one-shot JVM: the same path
    assert f"-XX:SharedArchiveFile={archive}" in options
    assert confs["spark.driver.extraClassPath"] == str(plan_jar.jar_path())
