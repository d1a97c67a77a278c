"""Fixtures of the shipping tests (chart, examples, Argo CD health check, dashboards).

The control-plane fixtures (`k8s_control_plane`, `k8s_api`, `k8s_namespace`) come from
tests/k8s_fixtures.py (a plugin of tests/conftest.py), so the chart and example tests run
`kubectl apply --server-side --dry-run=server` against the same real API server as the rest.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.ship import chart


@pytest.fixture(scope="session")
def helm_bin() -> str:
    """The pinned helm (hack/helm.sh; $KAFKA_HEALTH_HELM overrides)."""
    return chart.helm_binary()


@pytest.fixture(scope="session")
def k8s_bin_dir(k8s_control_plane: Any) -> str | None:
    state = k8s_control_plane.load()
    return state.bin_dir if state else None


@pytest.fixture(scope="session")
def chart_crds(k8s_control_plane: Any, k8s_bin_dir: str | None) -> None:
    """The chart's CRDs (KafkaHealthPolicy, Kopf peerings), applied for real and Established."""
    chart.install_crds(k8s_control_plane.kubeconfig, k8s_bin_dir)


@pytest.fixture
def make_namespace(k8s_api: Any, request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """Create extra namespaces for a test: make_namespace('brokers') -> 't-brokers-<6 hex>'."""
    from kubernetes import client

    core: Any = client.CoreV1Api(k8s_api)
    made: list[str] = []

    def make(hint: str) -> str:
        name = f"t-{re.sub(r'[^a-z0-9-]+', '-', hint.lower())[:40]}-{uuid.uuid4().hex[:6]}"
        core.create_namespace({"metadata": {"name": name, "labels": {"kafkahealth.io/test": "true"}}})
        made.append(name)
        return name

    yield make
    for name in made:
        core.delete_namespace(name)
