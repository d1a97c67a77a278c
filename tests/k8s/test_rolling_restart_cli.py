"""`kafka-health restart` on the real testbed: dry run by default, --execute restarts one at a time."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import APP_SELECTOR, NAMESPACE
from kafka_health.testbed.standin import StandIn

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]


def pod_uids(core: Any) -> dict[str, str]:
    return {
        p.metadata.name: p.metadata.uid
        for p in core.list_namespaced_pod(NAMESPACE, label_selector=APP_SELECTOR).items
    }


def pids(testbed: Testbed) -> dict[int, int | None]:
    return {b.id: b.pid for b in testbed.require().brokers}


@pytest.fixture
def healthy_pods(broker_pods: StandIn, kafka: Testbed) -> Iterator[StandIn]:
    faults.heal(kafka)
    broker_pods.wait_pods_ready(timeout=180)
    yield broker_pods
    faults.heal(kafka)
    broker_pods.wait_pods_ready(timeout=180)


def base_args(bootstrap: str, cp: ControlPlane) -> list[str]:
    return ["restart", "-b", bootstrap, "-n", NAMESPACE, "--kubeconfig", str(cp.kubeconfig)]


def test_dry_run_prints_order_verdicts_and_skipped_partitions_and_touches_nothing(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
    unique_name: str,
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    # RF 2 with min.insync.replicas 2: can never roll safely, reported as skipped (with
    # --never-safe proceed; refused by default: tests/k8s/test_restart_honest.py).
    faults.create_topic(bootstrap, unique_name, 1, 2, config={"min.insync.replicas": "2"})
    before, uids = pids(kafka), pod_uids(core)
    result = CliRunner().invoke(
        app, [*base_args(bootstrap, k8s_control_plane), "--statefulset", "kafka", "--never-safe", "proceed"]
    )
    assert result.exit_code == 0, result.output
    assert "DRY RUN" in result.output
    assert "Order: " in result.output
    assert "controller" in result.output
    assert f"{unique_name}-0" in result.output and "skipped (RF <= min.insync.replicas" in result.output
    assert pod_uids(core) == uids and pids(kafka) == before


def test_dry_run_json_plan_of_combined_nodes_voters_active_controller_last(
    healthy_pods: StandIn, kafka: Testbed, bootstrap: str, k8s_control_plane: ControlPlane
) -> None:
    args = [*base_args(bootstrap, k8s_control_plane), "--statefulset", "kafka"]
    result = CliRunner().invoke(app, [*args, "--output", "json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    leader = plan["quorumLeader"]
    assert plan["order"] == [*sorted({0, 1, 2} - {leader}), leader]
    assert [(n["node"], n["role"]) for n in plan["nodes"]] == [
        *((b, "voter") for b in plan["order"][:2]),
        (leader, "active voter"),
    ]
    assert "last of all" in plan["nodes"][2]["why"] and all(n["safeNow"] for n in plan["nodes"])
    # No dedicated controllers here: naming node 100 is refused; JSON is for the dry run only.
    refused = CliRunner().invoke(app, [*args, "--brokers", "100"])
    assert refused.exit_code == 3 and "node(s) 100 not in the cluster" in refused.output
    both = CliRunner().invoke(app, [*args, "--output", "json", "--execute"])
    assert both.exit_code == 3 and "--output json is for the dry run" in both.output


def test_dry_run_blocks_while_a_broker_is_down(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
) -> None:
    kafka.stop(2)
    wait_for(lambda: 2 not in faults.registered_brokers(bootstrap), timeout=60, what="broker 2 gone")
    result = CliRunner().invoke(
        app, [*base_args(bootstrap, k8s_control_plane), "--selector", "app.kubernetes.io/name=kafka"]
    )
    assert result.exit_code == 1, result.output
    assert "BLOCKED" in result.output and "one_at_a_time" in result.output


def test_dry_run_blocks_while_a_broker_is_fenced_with_its_process_running(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
) -> None:
    """Rule `recovering` (Strimzi's): a broker registered but fenced while its pod's container runs
    -- here paused (SIGSTOP), which Kafka cannot tell from one recovering its logs -- blocks
    every other restart, beside `one_at_a_time` (its pod is not Ready)."""
    kafka.pause(2)
    try:
        wait_for(lambda: 2 not in faults.registered_brokers(bootstrap), timeout=60, what="broker 2 fenced")
        result = CliRunner().invoke(
            app,
            [
                *base_args(bootstrap, k8s_control_plane),
                "--selector",
                "app.kubernetes.io/name=kafka",
                "--output",
                "json",
            ],
        )
        assert result.exit_code == 1, result.output
        rows = {r["node"]: r for r in json.loads(result.output)["nodes"]}
        for node in (0, 1):
            rules = {b["rule"] for b in rows[node]["blockers"]}
            assert {"recovering", "one_at_a_time"} <= rules, rows[node]
            (why,) = [b["message"] for b in rows[node]["blockers"] if b["rule"] == "recovering"]
            assert "broker 2 fenced while its process runs" in why, why
    finally:
        kafka.resume(2)


def test_execute_restarts_the_chosen_broker_once(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    before, uids = pids(kafka), pod_uids(core)
    result = CliRunner().invoke(
        app,
        [
            *base_args(bootstrap, k8s_control_plane),
            "--statefulset",
            "kafka",
            "--brokers",
            "1",
            "--pause",
            "1s",
            "--execute",
            "--id",
            "cli-test",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Succeeded: restarted brokers 1" in result.output
    after, uids_after = pids(kafka), pod_uids(core)
    assert after[1] != before[1] and uids_after["kafka-1"] != uids["kafka-1"]
    assert after[0] == before[0] and after[2] == before[2]
    assert uids_after["kafka-0"] == uids["kafka-0"] and uids_after["kafka-2"] == uids["kafka-2"]


def test_lock_namespace_refuses_while_another_holder_acts_then_holds_the_lease_for_the_roll(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
    k8s_namespace: str,
) -> None:
    """--lock-namespace: the operator's per-cluster Lease. Held by a policy: the roll is refused and
    nothing is touched. Free: the CLI holds it while it rolls (an operator would see ClusterLocked
    by cli/...) and empties it at the end."""
    from datetime import timedelta

    from confluent_kafka.admin import AdminClient

    from kafka_health.controller.cluster_lease import ClusterLease, LockSettings, read_lock
    from kafka_health.k8s.client import K8s, load_config
    from kafka_health.models.policy import ActionType
    from kafka_health.plan.cluster_lock import cluster_id_key

    core: Any = client.CoreV1Api(k8s_api)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the future resolves
    cluster_id = admin.describe_cluster().result(timeout=30).cluster_id
    key = cluster_id_key(cluster_id)
    k8s = K8s(load_config(str(k8s_control_plane.kubeconfig)))
    settings = LockSettings(namespace=k8s_namespace, replica="operator-0", ttl=timedelta(seconds=30))
    operator = ClusterLease(
        k8s,
        settings,
        cluster=key,
        policy="prod/nightly",
        action=ActionType.PREFERRED_LEADER_ELECTION,
        id="e1",
    )
    assert operator.acquire() is None
    args = [
        *base_args(bootstrap, k8s_control_plane),
        "--statefulset",
        "kafka",
        "--brokers",
        "1",
        "--pause",
        "1s",
        "--execute",
        "--id",
        "cli-locked",
        "--lock-namespace",
        k8s_namespace,
    ]
    before, uids = pids(kafka), pod_uids(core)
    try:
        refused = CliRunner().invoke(app, args)
    finally:
        operator.release()
    assert refused.exit_code == 1, refused.output
    assert "ClusterLocked by prod/nightly (PreferredLeaderElection e1)" in refused.output
    assert pod_uids(core) == uids and pids(kafka) == before

    holders: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.3):
            lock = read_lock(k8s, settings, key)
            if lock is not None:
                holders.append(f"{lock.holder} {lock.action} {lock.id}")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        rolled = CliRunner().invoke(app, args)
    finally:
        done.set()
        watcher.join(5)
    assert rolled.exit_code == 0, rolled.output
    assert "Succeeded: restarted brokers 1" in rolled.output
    assert pod_uids(core)["kafka-1"] != uids["kafka-1"]
    assert holders and all(
        h.startswith("cli/") and h.endswith("RollingRestart cli-locked") for h in holders
    ), holders
    assert read_lock(k8s, settings, key) is None  # emptied at the end
