"""The operator with a principal that may not see every topic (issue 33, point 1): the policy is
not Ready (reason KafkaAuthorizationDenied, naming what is hidden and the ACL), Degraded says the
same, and the `visibility:cluster` incident leads; nothing reads healthy. A real SASL_SSL broker,
the unprivileged SCRAM user `app` with DESCRIBE on CLUSTER only, the operator as the chart runs it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import OperatorProcess, apply, chart_operator, condition, kubectl, wait_status
from tests.secured.helpers import secured_testbed

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

INTERVAL_S = 10


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    it = secured_testbed(
        tmp_path_factory.mktemp("op-vis"), "sasl_ssl", port_key="operator-visibility:sasl_ssl"
    )
    tb = next(it)
    made = tb.tool(
        "kafka-topics", ["--create", "--topic", "orders", "--partitions", "4", "--replication-factor", "1"]
    )
    assert made.returncode == 0, made.stderr
    acl = ["--allow-principal", "User:app", "--operation", "Describe", "--cluster"]
    added = tb.tool("kafka-acls", ["--add", *acl])
    assert added.returncode == 0, added.stderr
    yield tb
    next(it, None)


@pytest.fixture(scope="module")
def ns(k8s_control_plane: ControlPlane, crds: None, sasl: Testbed) -> str:
    name = f"vis-{uuid.uuid4().hex[:6]}"
    cp = k8s_control_plane
    kubectl(cp, "create", "namespace", name)
    material = sasl.material()
    literals = {"username": security.APP, "password": material.password(security.APP)}
    kubectl(
        cp,
        "create",
        "secret",
        "generic",
        "kafka-app",
        "-n",
        name,
        *[f"--from-literal={k}={v}" for k, v in literals.items()],
    )
    kubectl(
        cp, "create", "secret", "generic", "kafka-ca", "-n", name, f"--from-file=ca.crt={material.ca_file}"
    )
    return name


@pytest.fixture(scope="module")
def operator(
    k8s_control_plane: ControlPlane, ns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    op, ident = chart_operator(k8s_control_plane, tmp_path_factory.mktemp("operator"), ns)
    op.start()
    yield op
    op.stop()
    ident.uninstall()


def policy(ns: str, sasl: Testbed) -> dict[str, Any]:
    return {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": "app", "namespace": ns},
        "spec": {
            "cluster": {
                "bootstrapServers": sasl.require().bootstrap_servers.split(","),
                "security": {
                    "protocol": "SASL_SSL",
                    "sasl": {
                        "mechanism": "SCRAM-SHA-512",
                        "username": {"name": "kafka-app", "key": "username"},
                        "password": {"name": "kafka-app", "key": "password"},
                    },
                    "tls": {"ca": {"name": "kafka-ca", "key": "ca.crt"}},
                },
            },
            "diagnostics": {"interval": f"{INTERVAL_S}s"},
        },
    }


def test_a_partial_view_is_not_ready_and_names_what_is_hidden(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, ns: str, sasl: Testbed
) -> None:
    cp = k8s_control_plane
    apply(cp, policy(ns, sasl))
    status = wait_status(
        cp, ns, "app", lambda s: "lastDiagnosis" in s and condition(s, "Ready"), timeout=300, what="diagnosed"
    )
    ready = condition(status, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "KafkaAuthorizationDenied"), status
    assert ready["message"].startswith(
        "Authorization denied: 4 partitions in 1 topic on the brokers are hidden"
    )
    assert "(orders)" in ready["message"] and "--operation Describe --topic '*'" in ready["message"]
    degraded = condition(status, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "KafkaAuthorizationDenied"), status
    assert "visibility" in status["lastDiagnosis"]["missing"]
    top = status["topIncidents"][0]
    assert top["id"] == "visibility:cluster" and top["severity"] == "critical", status["topIncidents"]
    assert status["health"] == "Critical"
    assert condition(status, "Healthy")["status"] == "False"
