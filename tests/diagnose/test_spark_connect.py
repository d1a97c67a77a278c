"""The same diagnosis through a Spark Connect server gives the same findings as embedded Spark.

The server is Spark's own (`org.apache.spark.sql.connect.service.SparkConnectServer`, shipped in
pyspark's jars) started with spark-submit; the client is the CLI in a separate process (one
SparkSession per process: this one's is embedded).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from kafka_health._kits.waiting import wait_for
from kafka_health.diagnose import run_diagnosis
from kafka_health.models.findings import Diagnosis
from kafka_health_spark.thresholds import Thresholds
from tests import parallel
from tests.diagnose.scenario import troubled_cluster

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    spark_home = Path(pyspark.__file__).parent
    port = parallel.service_port()
    log = tmp_path_factory.mktemp("spark-connect") / "server.log"
    cmd = [
        str(spark_home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name",
        "kafka-health-test-connect",
        "--master",
        "local[2]",
        "--driver-memory",
        "768m",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.session.timeZone=UTC",
        "spark-internal",
    ]
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_for(
            lambda: (
                listening(port)
                or (proc.poll() is not None and pytest.fail(f"server exited: {log.read_text()[-3000:]}"))
            ),
            timeout=120,
            what=f"Spark Connect server on port {port} (log: {log})",
        )
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the spark-submit session started above, and only it
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def comparable(d: Diagnosis) -> dict[str, object]:
    return d.model_dump(mode="json", exclude={"duration_seconds"})


def test_connect_gives_the_same_findings_as_embedded(
    spark: SparkSession, connect_server: str, tmp_path: Path
) -> None:
    history = tmp_path / "history"
    snap = troubled_cluster(history)
    snapshot_file = tmp_path / "snapshot.json"
    snapshot_file.write_text(snap.model_dump_json())

    embedded = run_diagnosis(snap, history, Thresholds(), spark)
    remote = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_health.cli.main",
            "diagnose",
            "--snapshot",
            str(snapshot_file),
            "--history",
            str(history),
            "--no-record",
            "--spark-remote",
            connect_server,
            "--output",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert remote.returncode == embedded.exit_code() == 4, remote.stderr[-3000:]
    over_connect = Diagnosis.model_validate_json(remote.stdout)
    # Every family fired, so every code path ran remotely.
    checks = {f.check for f in embedded.findings}
    assert {
        "broker_missing",
        "offline_partition",
        "under_min_isr",
        "leader_flapping",
        "isr_churn",
        "consumer_lag",
        "rebalance_storm",
        "disk_time_to_full",
        "low_replication_factor",
        "unclean_leader_election",
        "quorum_voter_lagging",
    } <= checks
    assert comparable(over_connect) == comparable(embedded)
