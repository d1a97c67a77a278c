"""An embedded driver JVM that runs out of heap exits at once (it used to leave its job waiting
for ever), the operator's runtime notices and starts a new one, and the policy's worker reports
`SparkDriverLost`. In a process of its own: the test run's session must not die."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, tempfile, time
from pathlib import Path
from pyspark.sql import functions as F
from kafka_health.controller.cycle import PolicyWorker
from kafka_health.controller.observe import driver_lost
from kafka_health.controller.runtime import OperatorSettings, Runtime
from kafka_health.diagnose import run_diagnosis
from kafka_health.report import metrics
from tests.spark.builders import brokers, part, snapshot

snap = snapshot(partitions=[part("t", 0, None, [1, 2, 0], [1])], broker_list=brokers(0, 1, 2))

def offline(spark):
    return [f.check for f in run_diagnosis(snap, None, None, spark).findings if f.check == "offline_partition"]

tmp = Path(tempfile.mkdtemp())
rt = Runtime(settings=OperatorSettings(history_dir=tmp, work_dir=tmp, spark_driver_memory="512m"), k8s=None)
first = rt.spark()
out = {"before": first.range(3).count(), "exit_before": rt.spark_driver_exit(), "found_before": offline(first)}
started = time.monotonic()
try:  # ~20M arrays of 200 ints collected into a 512m heap
    first.range(0, 20_000_000).select(F.sequence(F.lit(1), F.lit(200)).alias("x")).collect()
    out["oom"] = "no error"
except Exception as exc:
    out["oom"] = type(exc).__name__
out["failed_after_s"] = round(time.monotonic() - started, 1)
out["exit"] = rt.spark_driver_exit(wait_s=30)
worker = PolicyWorker(rt, "ns", "p")
lost = driver_lost(worker, out["exit"])
out["reason"], out["message"] = lost.problem.reason.value, lost.problem.message
second = rt.spark()
out["new_session"] = second is not first
out["after"] = second.range(4).count()
out["found_after"] = offline(second)  # what was prepared for the old JVM is not reused
out["exit_after"] = rt.spark_driver_exit()
out["restarts"] = metrics.SPARK_DRIVER_RESTARTS.labels("exit_3")._value.get()
print(json.dumps(out))
"""


def test_an_out_of_heap_driver_exits_and_the_next_cycle_gets_a_new_one() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] == 3 and out["exit_before"] is None
    assert out["oom"] != "no error"
    assert out["failed_after_s"] < 120  # failed, not hung
    assert out["exit"] == 3  # -XX:+ExitOnOutOfMemoryError
    assert out["reason"] == "SparkDriverLost"
    assert "ran out of heap" in out["message"] and "--spark-driver-memory" in out["message"]
    assert out["new_session"] and out["after"] == 4 and out["exit_after"] is None
    assert out["restarts"] == 1
    assert out["found_before"] == out["found_after"] == ["offline_partition"]
