"""The per-Kafka-cluster action lock on the real kube-apiserver, under exactly the chart's RBAC.

Each test runs as the chart's ServiceAccount (a TokenRequest token; the chart's Roles applied):
taking the Lease is a compare-and-swap, a second policy or another replica of the same policy
sees it held, a hand-over lets the policy's next replica take it at once, a frozen holder loses
it after the TTL and finds out before its next step, and a lock namespace the chart did not
grant is refused.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kafka_health.controller.cluster_lease import (
    A_ACTION,
    A_ID,
    A_POLICY,
    A_REPLICA,
    ClusterLease,
    LeaseLost,
    LockSettings,
    read_lock,
)
from kafka_health.k8s.client import K8s, K8sError, load_config
from kafka_health.models.policy import ActionType
from kafka_health.plan.cluster_lock import check_cluster_lock, lock_name
from kafka_health.testbed.controlplane import ControlPlane
from tests.ship.chart import OperatorIdentity, install_operator_identity

pytestmark = pytest.mark.k8s

TTL = 6  # seconds; renewed every 2 s


@pytest.fixture
def lock_ns(k8s_namespace: str) -> str:
    return k8s_namespace


@pytest.fixture
def ident(k8s_control_plane: ControlPlane, lock_ns: str, tmp_path: Path) -> Iterator[OperatorIdentity]:
    """The chart's identity for a release in `lock_ns` (its lock namespace by default)."""
    ident = install_operator_identity(
        k8s_control_plane,
        release=f"lk-{uuid.uuid4().hex[:6]}",
        namespace=lock_ns,
        watch=[lock_ns],
        out_dir=tmp_path,
    )
    yield ident
    ident.uninstall()


@pytest.fixture
def k8s(ident: OperatorIdentity) -> K8s:
    return K8s(load_config(str(ident.kubeconfig)))


def lease(k8s: K8s, ns: str, policy: str, replica: str, cluster: str = "id:c1", **kw: Any) -> ClusterLease:
    return ClusterLease(
        k8s,
        LockSettings(namespace=ns, replica=replica, ttl=timedelta(seconds=TTL)),
        cluster=cluster,
        policy=policy,
        action=kw.pop("action", ActionType.ROLLING_RESTART),
        id=kw.pop("id", "r1"),
        plan_id="roll-r1",
    )


def test_take_conflict_hand_over_and_release(k8s: K8s, lock_ns: str, k8s_api: client.ApiClient) -> None:
    a = lease(k8s, lock_ns, "kafka/main", "pod-a")
    assert a.acquire() is None and a.held
    try:
        # The Lease as kubectl shows it: holderIdentity for people, typed annotations for code.
        raw: Any = client.CoordinationV1Api(k8s_api).read_namespaced_lease(lock_name("id:c1"), lock_ns)
        assert raw.spec.holder_identity == "pod-a/kafka/main/RollingRestart"
        assert raw.spec.lease_duration_seconds == TTL
        annotations = raw.metadata.annotations
        assert (annotations[A_POLICY], annotations[A_REPLICA], annotations[A_ACTION], annotations[A_ID]) == (
            "kafka/main",
            "pod-a",
            "RollingRestart",
            "r1",
        )

        # A second policy (another namespace, or another install sharing the lock namespace).
        other = lease(k8s, lock_ns, "payments/other", "pod-x", action=ActionType.PREFERRED_LEADER_ELECTION)
        held = other.acquire()
        assert held is not None and held.holder == "kafka/main" and held.replica == "pod-a"
        hold = check_cluster_lock(held, "payments/other", held.renewed_at)
        assert hold is not None and hold.message.startswith(
            "ClusterLocked by kafka/main (RollingRestart r1) on replica pod-a"
        )
        assert not other.held

        # The same policy on another replica: not while pod-a holds it ...
        b = lease(k8s, lock_ns, "kafka/main", "pod-b")
        assert b.acquire() is not None
        # ... but at once when pod-a hands it over (paused by peering mid-roll).
        a.hand_over()
        assert not a.held
        with pytest.raises(LeaseLost):
            a.ensure()
        # Another policy still waits for a handed-over lock (until it expires).
        assert other.acquire() is not None
        assert b.acquire() is None and b.held
        stored = read_lock(k8s, LockSettings(lock_ns, "x"), "id:c1")
        assert stored is not None and stored.replica == "pod-b"
        raw = client.CoordinationV1Api(k8s_api).read_namespaced_lease(lock_name("id:c1"), lock_ns)
        assert raw.spec.lease_transitions == 1
        b.ensure(fresh=True)  # still ours: a compare-and-swap renewal succeeds

        b.release()
        assert read_lock(k8s, LockSettings(lock_ns, "x"), "id:c1") is None
        assert other.acquire() is None
        other.release()
    finally:
        a.release()


def test_the_holder_renews_while_it_acts(k8s: K8s, lock_ns: str) -> None:
    a = lease(k8s, lock_ns, "kafka/main", "pod-a", cluster="id:renew")
    assert a.acquire() is None
    try:
        time.sleep(TTL * 1.7)  # without renewal it would have expired
        assert lease(k8s, lock_ns, "payments/other", "pod-x", cluster="id:renew").acquire() is not None
        a.ensure(fresh=True)
    finally:
        a.release()


def test_a_frozen_holder_loses_the_lock_and_finds_out_before_its_next_step(k8s: K8s, lock_ns: str) -> None:
    a = lease(k8s, lock_ns, "kafka/main", "pod-a", cluster="id:frozen")
    assert a.acquire() is None
    a._stop.set()  # what SIGSTOP does to its renewals (the thread is gone, the hold stays)
    time.sleep(0.5)
    b = lease(k8s, lock_ns, "kafka/main", "pod-b", cluster="id:frozen")
    assert b.acquire() is not None  # not expired yet: pod-a may still be mid-step
    time.sleep(TTL + 1)
    assert b.acquire() is None  # expired: the standby takes over
    # pod-b finishes its action and releases the Lease before pod-a "resumes".
    b.release()
    assert read_lock(k8s, LockSettings(lock_ns, "x"), "id:frozen") is None
    # pod-a's next check fails, from the local clock or by compare-and-swap, and its stale write
    # does not bring its record back (a deleted Lease would be recreated by that update).
    with pytest.raises(LeaseLost):
        a.ensure(fresh=False)
    assert not a.held
    with pytest.raises(LeaseLost):
        a.ensure(fresh=True)
    a.release()
    a.hand_over()
    assert read_lock(k8s, LockSettings(lock_ns, "x"), "id:frozen") is None


def test_concurrent_takes_have_exactly_one_winner(k8s: K8s, lock_ns: str) -> None:
    contenders = [lease(k8s, lock_ns, f"ns{i}/p", f"pod-{i}", cluster="id:race") for i in range(6)]
    results: dict[int, object] = {}
    start = threading.Barrier(len(contenders))

    def take(i: int) -> None:
        start.wait()
        results[i] = contenders[i].acquire()

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(contenders))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    winners = [i for i, r in results.items() if r is None]
    assert len(results) == len(contenders) and len(winners) == 1, results
    for c in contenders:
        c.release()


def test_a_lock_namespace_the_chart_did_not_grant_is_refused(k8s: K8s, k8s_api: client.ApiClient) -> None:
    elsewhere = f"t-nolock-{uuid.uuid4().hex[:6]}"
    core: Any = client.CoreV1Api(k8s_api)
    core.create_namespace({"metadata": {"name": elsewhere}})
    with pytest.raises(K8sError) as denied:
        lease(k8s, elsewhere, "kafka/main", "pod-a").acquire()
    assert denied.value.status == 403


def test_status_writes_are_compare_and_swap_too(k8s: K8s, lock_ns: str, k8s_api: client.ApiClient) -> None:
    """A replica that read the status before another one wrote it cannot overwrite that write."""
    custom: Any = client.CustomObjectsApi(k8s_api)
    body = {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": "cas", "namespace": lock_ns},
        "spec": {"cluster": {"bootstrapServers": ["127.0.0.1:9092"]}},
    }
    custom.create_namespaced_custom_object("kafkahealth.io", "v1alpha1", lock_ns, "kafkahealthpolicies", body)
    stored = k8s.read_policy(lock_ns, "cas")
    assert stored is not None
    read_at = stored["metadata"]["resourceVersion"]
    written = k8s.patch_policy_status(lock_ns, "cas", {"remediationSummary": "first"}, read_at)
    assert written and written != read_at
    with pytest.raises(K8sError) as stale:
        k8s.patch_policy_status(lock_ns, "cas", {"remediationSummary": "stale"}, read_at)
    assert stale.value.status == 409
    assert (k8s.read_policy(lock_ns, "cas") or {})["status"]["remediationSummary"] == "first"
    assert k8s.patch_policy_status(lock_ns, "cas", {"remediationSummary": "next"}, written)
