"""Our CRD's names never shadow another product's on a real kube-apiserver (issue 13): with
Strimzi's `kafkas.kafka.strimzi.io` installed beside ours, `kubectl get kafka` still lists
Strimzi's kind Kafka, and our category `kafkahealth` lists our policies."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import kubectl

pytestmark = pytest.mark.k8s

# The names Strimzi's CRD declares (kind Kafka, plural kafkas, short name k, category strimzi),
# with a schema that keeps any field: enough for discovery and `kubectl get`.
STRIMZI_KAFKA_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "kafkas.kafka.strimzi.io"},
    "spec": {
        "group": "kafka.strimzi.io",
        "scope": "Namespaced",
        "names": {
            "kind": "Kafka",
            "listKind": "KafkaList",
            "plural": "kafkas",
            "singular": "kafka",
            "shortNames": ["k"],
            "categories": ["strimzi"],
        },
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def _apply_json(cp: ControlPlane, doc: dict[str, object]) -> None:
    kubectl(cp, "apply", "--server-side", "-f", "-", input=json.dumps(doc))


def _names(cp: ControlPlane, *args: str) -> set[tuple[str, str]]:
    out = kubectl(cp, "get", *args, "-o", "json").stdout
    return {(i["kind"], i["metadata"]["name"]) for i in json.loads(out)["items"]}


def test_kubectl_get_kafka_lists_strimzis_kind_beside_our_crd(
    k8s_control_plane: ControlPlane, crds: None
) -> None:
    cp = k8s_control_plane
    _apply_json(cp, STRIMZI_KAFKA_CRD)
    kubectl(cp, "wait", "--for=condition=Established", "crd/kafkas.kafka.strimzi.io")
    ns = f"names-{uuid.uuid4().hex[:6]}"
    kubectl(cp, "create", "namespace", ns)
    _apply_json(
        cp,
        {
            "apiVersion": "kafka.strimzi.io/v1beta2",
            "kind": "Kafka",
            "metadata": {"name": "orders", "namespace": ns},
        },
    )
    _apply_json(
        cp,
        {
            "apiVersion": "kafkahealth.io/v1alpha1",
            "kind": "KafkaHealthPolicy",
            "metadata": {"name": "orders-health", "namespace": ns},
            "spec": {"cluster": {"bootstrapServers": ["orders-kafka-bootstrap:9092"]}},
        },
    )
    # kubectl caches discovery for a while; a fresh cache dir per call would be slower than waiting.
    deadline = time.monotonic() + 30
    while True:
        try:
            assert _names(cp, "kafka", "-n", ns) == {("Kafka", "orders")}
            assert _names(cp, "k", "-n", ns) == {("Kafka", "orders")}
            assert _names(cp, "kafkahealth", "-n", ns) == {("KafkaHealthPolicy", "orders-health")}
            assert _names(cp, "khp", "-n", ns) == {("KafkaHealthPolicy", "orders-health")}
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    wide = kubectl(cp, "get", "khp", "-n", ns, "-o", "wide").stdout.splitlines()[0].split()
    narrow = kubectl(cp, "get", "khp", "-n", ns).stdout.splitlines()[0].split()
    assert narrow == ["NAME", "READY", "HEALTH", "FINDINGS", "MODE", "AGE"]
    assert wide == ["NAME", "READY", "HEALTH", "FINDINGS", "REMEDIATION", "MODE", "AGE"]
    kubectl(cp, "delete", "namespace", ns, "--wait=false")
