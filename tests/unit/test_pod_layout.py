"""The stand-in's pod layouts: StatefulSet names (unchanged) and Strimzi's node-pool names and labels.

The Strimzi layout with combined nodes is exercised on the real API server by
tests/compat/test_older_kafka.py; this covers the names for dedicated controllers too.
"""

from __future__ import annotations

import pytest

from kafka_health.testbed.broker_config import CONTROLLER_ID_BASE
from kafka_health.testbed.pod_layout import NAMESPACE, STRIMZI_NAMESPACE, PodLayout
from kafka_health.testbed.state import BrokerState


def node(node_id: int, role: str) -> BrokerState:
    return BrokerState(id=node_id, port=0, controller_port=0, role=role)


def test_statefulset_layout_keeps_the_kafka_names() -> None:
    layout = PodLayout()
    assert layout.namespace == NAMESPACE
    brokers, controllers = layout.sets(dedicated_controllers=True)
    assert brokers.pod(2) == "kafka-2" and controllers.pod(CONTROLLER_ID_BASE + 1) == "kafka-controller-1"
    assert brokers.pod_labels(2) == {
        "app.kubernetes.io/name": "kafka",
        "kafkahealth.io/broker-id": "2",
        "statefulset.kubernetes.io/pod-name": "kafka-2",
        "apps.kubernetes.io/pod-index": "2",
    }
    assert brokers.owner is None  # a real StatefulSet the stand-in creates


def test_strimzi_layout_names_pools_and_roles_as_strimzi_does() -> None:
    layout = PodLayout.strimzi()
    assert layout.namespace == STRIMZI_NAMESPACE
    combined, _ = layout.sets(dedicated_controllers=False)
    assert combined.pod(0) == "my-cluster-dual-role-0"
    assert (
        combined.labels["strimzi.io/broker-role"] == combined.labels["strimzi.io/controller-role"] == "true"
    )

    brokers, controllers = layout.sets(dedicated_controllers=True)
    assert layout.set_of(node(1, "broker"), True).pod(1) == "my-cluster-broker-1"
    controller = node(CONTROLLER_ID_BASE + 2, "controller")
    assert layout.set_of(controller, True).pod(controller.id) == f"my-cluster-controller-{controller.id}"
    assert (brokers.labels["strimzi.io/broker-role"], brokers.labels["strimzi.io/controller-role"]) == (
        "true",
        "false",
    )
    assert (
        controllers.labels["strimzi.io/broker-role"],
        controllers.labels["strimzi.io/controller-role"],
    ) == (
        "false",
        "true",
    )
    labels = brokers.pod_labels(1)
    assert labels["strimzi.io/cluster"] == "my-cluster" and labels["strimzi.io/pool-name"] == "broker"
    assert labels["strimzi.io/pod-name"] == "my-cluster-broker-1"
    assert not any("broker-id" in k or "node-id" in k for k in labels)  # the id is the name's suffix
    assert brokers.owner == {
        "apiVersion": "core.strimzi.io/v1beta2",
        "kind": "StrimziPodSet",
        "name": "my-cluster-broker",
    }
    assert layout.watch_selector == "strimzi.io/cluster=my-cluster"


def test_an_unknown_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="one of statefulset, strimzi"):
        PodLayout("operator")
