"""Fixtures shared by the operator's end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import kubectl

REPO = Path(__file__).resolve().parents[2]


def apply_crds(cp: ControlPlane) -> None:
    """The committed CRDs, applied server-side and Established."""
    for path in sorted((REPO / "crds").glob("*.yaml")):
        kubectl(cp, "apply", "--server-side", "-f", str(path))
    kubectl(cp, "wait", "--for=condition=Established", "crd/kafkahealthpolicies.kafkahealth.io")


@pytest.fixture(scope="module")
def crds(k8s_control_plane: ControlPlane) -> None:
    """The committed CRDs, applied server-side and Established."""
    apply_crds(k8s_control_plane)
