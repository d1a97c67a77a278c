"""A policy's cycle where the plan jar cannot be used runs, and finds what a plain diagnosis finds.

The operator reuses a policy's plans only with an embedded local session that has the plan jar on
its classpath (`reuse.available`). Elsewhere — no JDK at setup (no jar), a Spark cluster master,
Spark Connect — `controller.observe._plans_for` gives None and the cycle builds its plans every cycle
over history windows kept as Spark frames (`HistoryWindows`). These tests run that branch through
the worker's real seeing stages (`controller.cycle.see`: collect, record the history,
diagnose): the Kafka connection, the snapshot read and the
roll lookup are stood in for (the snapshot is `tests.diagnose.scenario.troubled_cluster`'s),
the history store and Spark are real. Two cycles run without the jar, so the kept windows are
read again; one through Spark Connect.

Each runs in a process of its own (one SparkSession per process: the suite's has the jar).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diagnose.test_spark_connect import connect_server  # noqa: F401  (its Spark Connect server fixture)

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, tempfile
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import tests.spark.builders as builders
builders.CLUSTER = "ns.p"  # the worker's history key (namespace.name)
from tests.diagnose.scenario import troubled_cluster

from kafka_health.controller import cycle, observe
from kafka_health.controller.runtime import OperatorSettings, Runtime
from kafka_health.controller.worker import PolicyWorker
from kafka_health.diagnose import run_diagnosis
from kafka_health_spark import reuse
from kafka_health.diagnose.from_policy import for_policy, thresholds_for

cycles = int(sys.argv[1])
remote = sys.argv[2] if len(sys.argv) > 2 else None
tmp = Path(tempfile.mkdtemp())
history = tmp / "history"
snap = troubled_cluster(history)  # five earlier snapshots recorded; this one the cycle appends
later = snap.model_copy(update={"taken_at": snap.taken_at + timedelta(minutes=1)})
snaps = [snap, later]

# Kafka and Kubernetes stood in for: the Secrets, the broker pods (none in the spec), the roll
# in flight (none), the admin client and the snapshot it reads.
observe.connection_for = lambda *a, **k: SimpleNamespace(secrets=[], bootstrap_servers="k:9092")
observe.roll_in_flight = lambda *a, **k: None
observe.collect_snapshot = lambda admin, name, clock, **k: snaps.pop(0)
rt = Runtime(
    settings=OperatorSettings(history_dir=history, work_dir=tmp, spark_remote=remote, spark_driver_memory="768m"),
    k8s=SimpleNamespace(read_secret_value=None),  # (no Secret is read: the spec names none)
)
worker = PolicyWorker(rt, "ns", "p")
worker.admin_for = lambda conn, timeout_s: None
spec = {"cluster": {"bootstrapServers": ["k:9092"]}}

out = {"cycles": []}
last = snaps[cycles - 1]
for _ in range(cycles):
    seen = cycle.see(worker, cycle.parse(spec))
    assert seen.outcome.problem is None, seen.outcome.problem
    out["cycles"].append(sorted({f.check for f in seen.outcome.diagnosis.findings}))
    out["plans"] = worker.plans is not None
    out["windows"] = type(worker.windows).__name__
spark = rt.spark()
out["available"] = reuse.available(spark)
parsed = cycle.parse(spec)  # the policy's thresholds and checks, as the cycle applies them
plain = run_diagnosis(last, history, thresholds_for(parsed.diagnostics.checks), spark)
out["plain"] = sorted({f.check for f in for_policy(plain, parsed, last).findings})
rt.stop()
print(json.dumps(out))
"""

FAMILIES = {
    "broker_missing",
    "offline_partition",
    "under_min_isr",
    "leader_flapping",
    "consumer_lag",
    "disk_time_to_full",
    "low_replication_factor",
    "unclean_leader_election",
    "quorum_voter_lagging",
}


def _cycle(cycles: int, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(cycles), *args],
        capture_output=True,
        text=True,
        timeout=1700,  # (~1 min on a quiet machine; plans built every cycle are slow on a loaded one)
        check=False,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _assert_built_every_cycle(out: dict[str, object], cycles_run: int) -> None:
    assert out["available"] is False
    assert out["plans"] is False  # `_plans_for` gave None: no reused plans
    assert out["windows"] == "HistoryWindows"  # windows as Spark frames, not JVM slots
    cycles = out["cycles"]
    assert isinstance(cycles, list) and len(cycles) == cycles_run
    for checks in cycles:
        assert set(checks) >= FAMILIES, out
    assert cycles[-1] == out["plain"], out  # the cycle finds what a plain diagnosis of its inputs finds


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_cycle_without_the_plan_jar_builds_its_plans_every_cycle(tmp_path: Path) -> None:
    """No jar (a machine without a JDK): the embedded local session starts without it."""
    _assert_built_every_cycle(_cycle(2, env={"KAFKA_HEALTH_SPARK_JAR": str(tmp_path / "absent.jar")}), 2)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_cycle_through_spark_connect_builds_its_plans_every_cycle(request: pytest.FixtureRequest) -> None:
    """Spark Connect (the server is Spark's own, from pyspark's jars: its test's fixture). One
    cycle: the windows read again in a second are the same `HistoryWindows` as above, and each
    cycle through Connect builds every plan on the server (~2 min in CI)."""
    _assert_built_every_cycle(_cycle(1, request.getfixturevalue("connect_server")), 1)
