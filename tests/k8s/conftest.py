"""Fixtures shared by the operator's end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import kubectl

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def crds(k8s_control_plane: ControlPlane) -> None:
    """The committed CRDs, applied server-side and Established."""
    for path in sorted((REPO / "crds").glob("*.yaml")):
        kubectl(k8s_control_plane, "apply", "--server-side", "-f", str(path))
    kubectl(
        k8s_control_plane, "wait", "--for=condition=Established", "crd/kafkahealthpolicies.kafkahealth.io"
    )
