"""The `kafka-health testbed` CLI contract that later checks and users depend on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_health.testbed.cluster import Testbed

pytestmark = pytest.mark.kafka


def cli(testbed: Testbed, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_health.cli.main",
            "testbed",
            *args,
            "--state-dir",
            str(testbed.state_dir),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_up_is_idempotent_and_prints_bootstrap(testbed: Testbed) -> None:
    pids = {b.id: b.pid for b in testbed.require().brokers}
    out = cli(testbed, "up")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == testbed.require().bootstrap_servers
    assert {b.id: b.pid for b in testbed.require().brokers} == pids  # nothing restarted


def test_env_exports_bootstrap(testbed: Testbed) -> None:
    out = cli(testbed, "env")
    assert out.returncode == 0
    assert f"export KAFKA_BOOTSTRAP_SERVERS={testbed.require().bootstrap_servers}" in out.stdout


def test_status_reports_each_broker(testbed: Testbed) -> None:
    out = cli(testbed, "status", "-o", "json")
    rows = json.loads(out.stdout)
    assert [r["id"] for r in rows] == [0, 1, 2]
    assert all(r["state"] == "up" and r["serving"] and r["pid"] for r in rows)


def test_tool_runs_real_kafka_cli(testbed: Testbed) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_health.cli.main",
            "testbed",
            "tool",
            "kafka-metadata-quorum",
            "--state-dir",
            str(testbed.state_dir),
            "describe",
            "--status",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "LeaderId:" in out.stdout
    assert '"id": 2' in out.stdout  # three voters


def test_unknown_broker_and_action_are_clear_errors(testbed: Testbed) -> None:
    out = cli(testbed, "broker", "stop", "7")
    assert out.returncode == 1 and "no broker 7" in out.stderr
    out = cli(testbed, "broker", "explode", "1")
    assert out.returncode == 1 and "unknown action" in out.stderr
