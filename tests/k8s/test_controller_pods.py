"""`testbed up --k8s --controllers 3`: the stand-in keeps a `kafka-controller` StatefulSet and its
pods beside the brokers'; deleting a controller pod restarts that controller, as in a cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.pod_layout import (
    CONTROLLER_SELECTOR,
    CONTROLLER_STATEFULSET,
    NAMESPACE,
    NODE_ID_LABEL,
)

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

PORT_OFFSET = 2300  # from KAFKA_HEALTH_TEST_PORT: broker base, controllers base+100..102


def cli(state_dir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_health.cli.main", "testbed", *args, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def test_controller_pods_are_kept_and_a_deleted_one_restarts_its_controller(tmp_path: Path) -> None:
    state_dir = tmp_path / "tb"
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET
    try:
        out = cli(state_dir, "up", "--k8s", "--brokers", "1", "--controllers", "3", "--base-port", str(base))
        assert out.returncode == 0, out.stderr
        kubeconfig = out.stdout.strip().splitlines()[1]
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        with client.ApiClient(cfg) as api:
            core: Any = client.CoreV1Api(api)
            apps: Any = client.AppsV1Api(api)

            def controller_pods() -> dict[str, Any]:
                pods = core.list_namespaced_pod(NAMESPACE, label_selector=CONTROLLER_SELECTOR).items
                return {p.metadata.name: p for p in pods if p.metadata.deletion_timestamp is None}

            pods = controller_pods()
            assert sorted(pods) == ["kafka-controller-0", "kafka-controller-1", "kafka-controller-2"]
            assert {p.metadata.labels[NODE_ID_LABEL] for p in pods.values()} == {"100", "101", "102"}
            assert all(ready(p) for p in pods.values())
            assert [o.name for o in pods["kafka-controller-1"].metadata.owner_references] == [
                CONTROLLER_STATEFULSET
            ]
            assert (
                core.read_namespaced_pod("kafka-0", NAMESPACE).metadata.labels["app.kubernetes.io/name"]
                == "kafka"
            )

            tb = Testbed(state_dir)
            old_pid = tb.broker(tb.require(), 101).pid
            old_uid = pods["kafka-controller-1"].metadata.uid
            core.delete_namespaced_pod("kafka-controller-1", NAMESPACE)
            new = wait_for(
                lambda: (lambda p: p if p is not None and p.metadata.uid != old_uid and ready(p) else None)(
                    controller_pods().get("kafka-controller-1")
                ),
                timeout=180,
                what="kafka-controller-1 recreated and Ready",
            )
            new_pid = tb.broker(tb.require(), 101).pid
            assert new_pid is not None and new_pid != old_pid  # the controller process was restarted
            assert new.metadata.labels[NODE_ID_LABEL] == "101"
            sts = wait_for(
                lambda: (lambda s: s if s.status.ready_replicas == 3 else None)(
                    apps.read_namespaced_stateful_set(CONTROLLER_STATEFULSET, NAMESPACE)
                ),
                timeout=30,
                what="StatefulSet kafka-controller 3/3 ready",
            )
            assert sts.status.replicas == 3
    finally:
        down = cli(state_dir, "down", "--purge")
        assert down.returncode == 0, down.stderr
