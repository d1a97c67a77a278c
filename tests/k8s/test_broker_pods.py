"""The broker-pod stand-in: pods mirror the real brokers, and deleting a pod restarts its broker."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kubernetes import client, watch

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import APP_SELECTOR, BROKER_ID_LABEL, NAMESPACE
from kafka_health.testbed.standin import StandIn

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]


def is_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def broker_pid(testbed: Testbed, broker_id: int) -> int | None:
    return testbed.broker(testbed.require(), broker_id).pid


def produce(bootstrap: str, topic: str, n: int) -> set[str]:
    faults.create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    acked: set[str] = set()
    for i in range(n):
        producer.produce(
            topic,
            value=f"v{i}",
            on_delivery=lambda e, m: acked.add(m.value().decode()) if e is None else None,
        )
    assert producer.flush(30) == 0
    return acked


def consume_all(bootstrap: str, topic: str, expected: int) -> set[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while len(seen) < expected and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.add(msg.value().decode())
    consumer.close()
    return seen


@contextmanager
def recording_pod(api: client.ApiClient, name: str) -> Iterator[list[tuple[str, str, bool]]]:
    """Record (event, uid, ready) for one pod from a watch running in the background."""
    seen: list[tuple[str, str, bool]] = []
    w = watch.Watch()
    core: Any = client.CoreV1Api(api)

    def run() -> None:
        with suppress(Exception):  # w.stop() ends the stream abruptly
            for ev in w.stream(core.list_namespaced_pod, NAMESPACE, field_selector=f"metadata.name={name}"):
                pod = ev["object"]
                seen.append((ev["type"], pod.metadata.uid, is_ready(pod)))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    wait_for(lambda: seen, timeout=10, what=f"the watch on {name} to start")
    try:
        yield seen
    finally:
        w.stop()


def test_one_ready_pod_per_broker_owned_by_the_statefulset(
    broker_pods: StandIn, k8s_api: client.ApiClient, testbed: Testbed
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    apps: Any = client.AppsV1Api(k8s_api)
    sts = apps.read_namespaced_stateful_set("kafka", NAMESPACE)
    pods = sorted(
        core.list_namespaced_pod(NAMESPACE, label_selector=APP_SELECTOR).items, key=lambda p: p.metadata.name
    )
    assert [p.metadata.name for p in pods] == ["kafka-0", "kafka-1", "kafka-2"]
    for i, pod in enumerate(pods):
        assert pod.metadata.labels[BROKER_ID_LABEL] == str(i)
        owner = pod.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "StatefulSet",
            "kafka",
            sts.metadata.uid,
            True,
        )
        assert is_ready(pod)
        assert pod.status.container_statuses[0].container_id == f"testbed://{broker_pid(testbed, i)}"
    wait_for(
        lambda: apps.read_namespaced_stateful_set_status("kafka", NAMESPACE).status.ready_replicas == 3,
        timeout=10,
        what="StatefulSet status readyReplicas=3",
    )


def test_kubectl_shows_the_pods_ready(broker_pods: StandIn, k8s_control_plane: ControlPlane) -> None:
    kubectl = f"{k8s_control_plane.load().bin_dir}/kubectl"  # type: ignore[union-attr]
    out = subprocess.run(
        [
            kubectl,
            "--kubeconfig",
            str(k8s_control_plane.kubeconfig),
            "get",
            "pods",
            "-n",
            NAMESPACE,
            "--no-headers",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    rows = [line.split()[:3] for line in out.stdout.splitlines()]
    assert rows == [[f"kafka-{i}", "1/1", "Running"] for i in range(3)]


def test_deleting_a_pod_restarts_its_broker_and_keeps_the_data(
    broker_pods: StandIn, kafka: Testbed, bootstrap: str, k8s_api: client.ApiClient, unique_name: str
) -> None:
    acked = produce(bootstrap, unique_name, 300)
    assert len(acked) == 300
    core: Any = client.CoreV1Api(k8s_api)
    old_uid = core.read_namespaced_pod("kafka-1", NAMESPACE).metadata.uid
    old_pid = broker_pid(kafka, 1)

    with recording_pod(k8s_api, "kafka-1") as events:
        t0 = time.monotonic()
        core.delete_namespaced_pod("kafka-1", NAMESPACE)
        pod = wait_for(
            lambda: (
                (p := core.read_namespaced_pod("kafka-1", NAMESPACE)).metadata.uid != old_uid
                and is_ready(p)
                and p
            ),
            timeout=120,
            interval=0.2,
            what="a new Ready kafka-1",
        )
        cycle = time.monotonic() - t0
    print(f"pod delete -> Ready: {cycle:.1f}s")

    new_pid = broker_pid(kafka, 1)
    assert new_pid is not None and new_pid != old_pid
    assert pod.status.container_statuses[0].container_id == f"testbed://{new_pid}"
    assert 1 in faults.registered_brokers(bootstrap)
    # The old pod went away only after its broker stopped; the new one was created not Ready.
    new_events = [(kind, ready) for kind, uid, ready in events if uid == pod.metadata.uid]
    assert new_events[0] == ("ADDED", False)
    assert ("DELETED", old_uid) in {(kind, uid) for kind, uid, _ in events}
    # Other brokers untouched.
    assert all(is_ready(p) for p in core.list_namespaced_pod(NAMESPACE, label_selector=APP_SELECTOR).items)

    assert consume_all(bootstrap, unique_name, len(acked)) == acked
    wait_for(
        lambda: not {tp for tp in faults.under_replicated(bootstrap) if tp[0] == unique_name},
        timeout=60,
        what="broker 1 back in every ISR",
    )


def test_a_stopped_broker_makes_its_pod_not_ready(
    broker_pods: StandIn, kafka: Testbed, k8s_api: client.ApiClient
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    kafka.stop(2)
    pod = wait_for(
        lambda: (
            (p := core.read_namespaced_pod("kafka-2", NAMESPACE)).status.container_statuses[0].state.waiting
            and p
        ),
        timeout=15,
        what="kafka-2 to report its broker down",
    )
    assert pod.status.container_statuses[0].state.waiting.reason == "BrokerDown"
    assert not is_ready(pod)
    kafka.start(2)
    wait_for(
        lambda: is_ready(core.read_namespaced_pod("kafka-2", NAMESPACE)), timeout=30, what="kafka-2 Ready"
    )


def test_a_broker_that_cannot_start_leaves_its_pod_not_ready(
    broker_pods: StandIn, kafka: Testbed, k8s_api: client.ApiClient
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    meta = kafka.data_dir(2) / "meta.properties"
    original = meta.read_text()
    # A node id that does not match the config: Kafka refuses to start (read only at start-up).
    meta.write_text(original.replace("node.id=2", "node.id=7"))
    try:
        old_uid = core.read_namespaced_pod("kafka-2", NAMESPACE).metadata.uid
        core.delete_namespaced_pod("kafka-2", NAMESPACE)
        pod = wait_for(
            lambda: (
                (p := core.read_namespaced_pod("kafka-2", NAMESPACE)).metadata.uid != old_uid
                and p.status.container_statuses
                and p.status.container_statuses[0].state.waiting
                and p.status.container_statuses[0].state.waiting.reason == "BrokerDown"
                and p
            ),
            timeout=90,
            what="the new kafka-2 to report its broker down",
        )
        assert not is_ready(pod)
        assert kafka.process_state(kafka.broker(kafka.require(), 2)) == "down"
        time.sleep(3)  # and it stays that way: the stand-in does not pretend
        assert not is_ready(core.read_namespaced_pod("kafka-2", NAMESPACE))
    finally:
        meta.write_text(original)
    # Deleting the pod again (now that the broker can start) brings it back.
    core.delete_namespaced_pod("kafka-2", NAMESPACE)
    wait_for(
        lambda: is_ready(core.read_namespaced_pod("kafka-2", NAMESPACE)), timeout=120, what="kafka-2 Ready"
    )
