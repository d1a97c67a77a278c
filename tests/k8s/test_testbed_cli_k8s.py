"""`kafka-health testbed up --k8s` … `down`: the whole local stack from the CLI, and nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane, control_plane_ports, process_cmdline
from kafka_health.testbed.pod_layout import NAMESPACE
from kafka_health.testbed.standin import StandIn

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]


def cli(state_dir: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_health.cli.main", "testbed", *args, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# From KAFKA_HEALTH_TEST_PORT (tests/parallel.py), as tests/k8s/test_controller_pods.py: a module
# of its own, so the two never run at once; control plane +2390..+2392, controller +2400.
PORT_OFFSET = 2300


def test_up_k8s_env_status_down(tmp_path: Path) -> None:
    state_dir = tmp_path / "tb"
    started: list[int | None] = []
    try:
        base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET
        out = cli(state_dir, "up", "--k8s", "--brokers", "1", "--base-port", str(base))
        assert out.returncode == 0, out.stderr
        bootstrap, kubeconfig = out.stdout.strip().splitlines()
        assert bootstrap == Testbed(state_dir).require().bootstrap_servers
        assert Path(kubeconfig) == state_dir.resolve() / "kubeconfig"

        env = cli(state_dir, "env").stdout
        assert f"export KUBECONFIG={kubeconfig}" in env
        assert f"export KAFKA_BOOTSTRAP_SERVERS={bootstrap}" in env

        status = cli(state_dir, "status").stdout
        for component in ("etcd", "kube-apiserver", "pod-standin"):
            assert any(line.split()[:2] == [component, "up"] for line in status.splitlines()), status

        cp = ControlPlane(state_dir)
        state = cp.load()  # its ports beside the brokers', below the kernel's ephemeral range
        assert state is not None
        assert [state.etcd_port, state.etcd_peer_port, state.api_port] == control_plane_ports(base)
        with cp.api_client() as api:
            core: Any = client.CoreV1Api(api)
            pod = core.read_namespaced_pod("kafka-0", NAMESPACE)
        assert any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)

        def pids() -> list[int | None]:
            state = cp.load()
            assert state is not None
            return [
                state.etcd_pid,
                state.apiserver_pid,
                StandIn(state_dir).pid,
                Testbed(state_dir).require().brokers[0].pid,
            ]

        started = pids()
        assert all(started), started
        again = cli(state_dir, "up", "--k8s")  # idempotent: nothing restarts
        assert again.returncode == 0, again.stderr
        assert pids() == started
    finally:
        down = cli(state_dir, "down", "--purge")
    assert down.returncode == 0, down.stderr
    assert [pid for pid in started if process_cmdline(pid)] == []
    assert not state_dir.exists()
