"""Fixtures for tests against the real local Kubernetes control plane (etcd + kube-apiserver).

- `k8s_control_plane` (session): a started `ControlPlane`; Kafka is not needed for it.
- `k8s_api` (session): a `kubernetes.client.ApiClient` for the admin user of that control plane.
- `k8s_namespace`: a fresh namespace name per test (never reused: without a controller-manager a
  deleted namespace stays Terminating forever).
- `pod_standin` (session): the pod stand-in running for the session's Kafka `testbed`.
- `broker_pods`: that stand-in, every broker pod Ready when the test starts (an earlier test on
  the worker may have deleted or killed one: its replacement is waited for); yields the `StandIn`.

The control plane lives in KAFKA_HEALTH_TEST_TESTBED_DIR when set (beside the Kafka cluster, so
`kafka-health testbed down --purge --state-dir <dir>` removes everything), else in a temporary
dir. KAFKA_HEALTH_KEEP_TESTBED=1 leaves the control plane and stand-in running after the
session, like the Kafka cluster. The binaries come from KAFKA_HEALTH_K8S_BIN (set by
`make test`), KUBEBUILDER_ASSETS, or hack/k8s-binaries.sh.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.standin import StandIn
from tests import parallel


def _keep() -> bool:
    return os.environ.get("KAFKA_HEALTH_KEEP_TESTBED") == "1"


@pytest.fixture(scope="session")
def k8s_control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    state_dir = os.environ.get("KAFKA_HEALTH_TEST_TESTBED_DIR")
    cp = ControlPlane(
        Path(state_dir) if state_dir else tmp_path_factory.mktemp("k8s"), parallel.control_plane_ports()
    )
    cp.start()
    yield cp
    if not _keep():
        cp.stop()


@pytest.fixture(scope="session")
def k8s_api(k8s_control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    with k8s_control_plane.api_client() as api:
        yield api


@pytest.fixture
def k8s_namespace(k8s_api: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """`t-<test>-<6 hex>`, created now; deleted after the test (it stays Terminating: no controller-manager)."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"t-{base}-{uuid.uuid4().hex[:6]}"
    core: Any = client.CoreV1Api(k8s_api)
    core.create_namespace({"metadata": {"name": name, "labels": {"kafkahealth.io/test": "true"}}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as exc:  # the test may have deleted it itself
        if exc.status != 404:
            raise


@pytest.fixture(scope="session")
def pod_standin(testbed: Testbed, k8s_control_plane: ControlPlane) -> Iterator[StandIn]:
    standin = StandIn(testbed.state_dir, k8s_control_plane.kubeconfig)
    standin.start()
    yield standin
    if not _keep():
        standin.stop()


@pytest.fixture
def broker_pods(pod_standin: StandIn) -> StandIn:
    """Every broker pod Ready now, whatever the worker's previous test left being recreated."""
    pod_standin.wait_pods_ready(timeout=180)
    return pod_standin
