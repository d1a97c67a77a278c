"""A diagnosis past its deadline is cancelled in Spark: its jobs, in every thread, carry its tag.

Slow work is a real Spark job whose tasks sleep in the JVM (`reflect` calling Thread.sleep), so
the cancel must reach the job through Spark's tags; nothing here is faked."""

from __future__ import annotations

import threading
import time

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_health._kits.deadline import DeadlineExceeded, run_with_deadline
from kafka_health_spark import jobs
from kafka_health_spark.checks import replication
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds
from tests.spark.builders import brokers, check_findings, part, snapshot

pytestmark = pytest.mark.spark

SHORT_SLEEP = (
    "reflect('java.lang.Thread', 'sleep', cast(1000 as bigint)) = 'null'"  # void comes back as 'null'
)
SLEEP = "reflect('java.lang.Thread', 'sleep', cast(30000 as bigint)) = 'null'"  # 30 s a row


def slow_rows(spark: SparkSession) -> DataFrame:
    return spark.range(2).where(F.expr(SLEEP))


def test_tagged_tags_only_inside_and_removes_its_tag(spark: SparkSession) -> None:
    sc = spark.sparkContext
    with jobs.tagged(spark, "kh-test-a"):
        assert "kh-test-a" in sc.getJobTags()
        assert jobs.current_tag() == "kh-test-a"
    assert "kh-test-a" not in sc.getJobTags()
    assert jobs.current_tag() is None


def test_cancelling_the_tag_fails_a_job_of_another_thread_that_carries_it(spark: SparkSession) -> None:
    errors: list[BaseException] = []

    def collect() -> None:
        try:
            slow_rows(spark).collect()
        except BaseException as exc:
            errors.append(exc)

    with jobs.tagged(spark, "kh-test-b"):
        worker = threading.Thread(target=jobs.carry(spark, collect))
    started = time.monotonic()
    worker.start()
    time.sleep(3)  # the job is running: its tasks sleep for 30 s
    assert worker.is_alive()
    jobs.cancel(spark, "kh-test-b")
    worker.join(20)
    assert not worker.is_alive()
    assert time.monotonic() - started < 25  # ended by the cancel, not by the sleep
    assert errors and "kh-test-b" in str(errors[0])


def test_a_job_without_the_tag_runs_on(spark: SparkSession) -> None:
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(spark.range(3).where(F.expr(SHORT_SLEEP)).count()))
    worker.start()
    time.sleep(1)
    jobs.cancel(spark, "kh-test-c")
    worker.join(30)
    assert done == [3]


def test_a_diagnosis_past_its_deadline_has_its_check_threads_jobs_cancelled(spark: SparkSession) -> None:
    """run_checks runs checks in a pool of its own: the cancel reaches their jobs there too."""
    snap = snapshot(partitions=[part("t", 0, None, [1, 2, 0], [1])], broker_list=brokers(0, 1, 2))

    def slow_offline(frames: Frames, thresholds: Thresholds) -> DataFrame:
        return replication.offline_partitions(frames, thresholds).where(F.expr(SLEEP))

    slow_offline.__name__ = "offline_partitions"

    def diagnose() -> object:
        with jobs.tagged(spark, "kh-test-d"):
            return check_findings(spark, slow_offline, snap)

    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        run_with_deadline(diagnose, deadline_s=3, cancel=lambda: jobs.cancel(spark, "kh-test-d"), grace_s=20)
    assert not caught.value.stuck
    assert time.monotonic() - started < 25
    assert "cancel" in str(caught.value.__cause__).lower()
    # The session is fine afterwards, and the same check without the sleep finds the partition.
    found = check_findings(spark, replication.offline_partitions, snap)
    assert [(f.subject.topic, f.subject.partition) for f in found] == [("t", 0)]
