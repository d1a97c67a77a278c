"""Rolls in batches (`--max-concurrent`, `--batch-by rack`) on a cluster shaped like a user's:
3 dedicated controllers and 6 brokers in 3 racks (rack-aware replicas), their pods kept by the
stand-in (podManagementPolicy Parallel), under an idempotent acks=all producer and a consumer.

One scenario, shared by its assertions: the dry run plans a rack per batch; the CLI restarts
the first batch (one rack's two brokers together); the operator (killed mid-batch) rolls every
broker in batches: nothing acknowledged lost or duplicated, every broker restarted exactly once
per roll, the brokers down together always of one rack (so no partition lost two replicas),
three batches. The speed-up over one broker
at a time is not measured here: in CI other tests' clusters share the two cores, so one roll's
time against another's measures the neighbours; `bench/roll_bench.py --mode batches`, on a
quiet machine, rolls the same cluster both ways in one run. One-at-a-time rolls (the default)
are proven by tests/k8s/test_rolling_restart.py and the operator roll tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, config
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import APP_SELECTOR, NAMESPACE, STATEFULSET
from tests.k8s.conftest import apply_crds
from tests.k8s.operator_process import (
    OperatorProcess,
    apply,
    chart_operator,
    kubectl,
    request_finished,
    wait_status,
)
from tests.k8s.test_controller_pods import cli
from tests.k8s.test_controller_roll import Cluster, Timeline, Watcher, transitions
from tests.k8s.test_operator_e2e import events_of
from tests.k8s.test_operator_roll import roll_policy
from tests.k8s.test_rolling_restart import ConsumerThread, Load, ProducerThread, read_all

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

# From KAFKA_HEALTH_TEST_PORT: brokers +2480..+2485, controllers +2580..+2582 (plaintext: no +200).
PORT_OFFSET = 2480
BROKERS = [0, 1, 2, 3, 4, 5]
RACK_OF = {b: f"rack-{b % 3}" for b in BROKERS}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    state_dir = tmp_path_factory.mktemp("roll-batches")
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET
    try:
        out = cli(
            state_dir,
            "up",
            "--k8s",
            "--brokers",
            "6",
            "--controllers",
            "3",
            "--racks",
            "3",
            "--base-port",
            str(base),
            timeout=600,
        )
        assert out.returncode == 0, out.stderr
        tb = Testbed(state_dir)
        yield Cluster(tb, tb.require().bootstrap_servers, out.stdout.strip().splitlines()[1])
    finally:
        down = cli(state_dir, "down", "--purge")
        assert down.returncode == 0, down.stderr


def restart_args(c: Cluster, *extra: str) -> list[str]:
    return [
        "restart",
        "-b",
        c.bootstrap,
        "-n",
        NAMESPACE,
        "--kubeconfig",
        c.kubeconfig,
        "--statefulset",
        STATEFULSET,
        "--pause",
        "0s",
        "--pod-ready",
        "3m",
        "--broker-registered",
        "2m",
        "--urp-zero",
        "3m",
        *extra,
    ]


class NotReady(threading.Thread):
    """Every ~0.2 s, the broker pods not Ready or terminating: the brokers restarting together."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(daemon=True)
        self.core: Any = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        self.stopping = threading.Event()
        self.seen: list[set[int]] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            with contextlib.suppress(Exception):
                pods = self.core.list_namespaced_pod(
                    NAMESPACE, label_selector=APP_SELECTOR, _request_timeout=5
                )
                busy = {
                    int(p.metadata.name.rsplit("-", 1)[1])
                    for p in pods.items
                    if p.metadata.deletion_timestamp is not None
                    or not any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
                }
                if busy:
                    self.seen.append(busy)
            self.stopping.wait(0.2)


def restarts(timeline: Timeline) -> dict[int, int]:
    """Broker → how many times its process changed during the timeline."""
    return {b: len([p for _, p in timeline.pids.get(b, []) if p is not None]) - 1 for b in BROKERS}


def roll(
    c: Cluster, topic: str, partitions: int, *extra: str
) -> tuple[float, Timeline, Load, str, list[set[int]]]:
    """One roll by the CLI under load: (seconds, the pid timeline, the load, the CLI's output,
    the sets of broker pods seen not Ready together)."""

    def by_cli() -> str:
        rolled = CliRunner().invoke(app, restart_args(c, "--execute", "--no-elect", *extra))
        assert rolled.exit_code == 0, rolled.output
        return rolled.output

    return under_load(c, topic, partitions, by_cli)


def under_load(
    c: Cluster, topic: str, partitions: int, act: Callable[[], str]
) -> tuple[float, Timeline, Load, str, list[set[int]]]:
    """`act()` (a roll) under an acks=all producer and a consumer: (seconds, the pid timeline,
    the load, what `act` returned, the sets of broker pods seen not Ready together)."""
    load = Load()
    producer = ProducerThread(c.bootstrap, topic, load)
    consumer = ConsumerThread(c.bootstrap, topic, partitions, load)
    pods = NotReady(c.kubeconfig)
    with Watcher(c) as timeline:
        producer.start()
        consumer.start()
        wait_for(lambda: len(load.acked) > 300, timeout=60, what="the producer running")
        pods.start()
        started = time.monotonic()
        try:
            said = act()
        finally:
            pods.stopping.set()
        seconds = time.monotonic() - started
        pods.stopping.set()
        pods.join(10)
        time.sleep(1)
        producer.stopping.set()
        producer.join(180)
        wait_for(lambda: load.acked <= set(load.consumed), timeout=120, what="every acknowledged record read")
        consumer.stopping.set()
        consumer.join(30)
    return seconds, timeline, load, said, pods.seen


def test_a_rack_at_a_time_loses_nothing_and_never_takes_two_racks_down(cluster: Cluster) -> None:
    partitions = 12
    topic = "a-rack-at-a-time"
    faults.create_topic(cluster.bootstrap, topic, partitions, config={"min.insync.replicas": "2"})
    with KafkaAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
        snap = collect_snapshot(admin, "kafka", lambda: datetime.now(UTC))
    assert {b.id: b.rack for b in snap.brokers} == RACK_OF
    mine = [p for p in snap.partitions if p.topic == topic]
    assert all(len({RACK_OF[r] for r in p.replicas}) == 3 for p in mine), "rack-aware replicas"

    # The dry run's plan: one batch per rack, each saying why.
    dry = CliRunner().invoke(app, [*restart_args(cluster, "--max-concurrent", "2"), "--output", "json"])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.output)["batches"]
    assert [b["nodes"] for b in plan["batches"]] == [[0, 3], [1, 4], [2, 5]]
    assert all(b["why"].startswith(f"rack rack-{i}: 2 brokers") for i, b in enumerate(plan["batches"]))

    # The CLI rolls the first batch (rack-0's brokers, --brokers 0,3); every batch of a whole roll,
    # and a batch resumed after a kill, is the operator's test below (the same roll steps).
    seconds, timeline, load, out, together = roll(
        cluster, topic, partitions, "--max-concurrent", "2", "--brokers", "0,3"
    )
    print(out)
    print(*transitions(timeline), sep="\n")
    print(f"one rack's batch: {seconds:.1f}s")

    assert restarts(timeline) == {b: int(b in (0, 3)) for b in BROKERS}, timeline.pids
    assert {0, 3} in together, together  # down together
    assert all(s <= {0, 3} for s in together), together
    nothing_lost(cluster, load, topic, partitions)
    assert out.count("restarted together") == 1, out


def nothing_lost(c: Cluster, load: Load, topic: str, partitions: int) -> None:
    assert len(load.acked) > 1000
    assert load.acked <= set(load.consumed)
    assert len(load.consumed) == len(set(load.consumed)), "a record read twice"
    log = read_all(c.bootstrap, topic, partitions)
    assert len(log) == len(set(log)), f"duplicates in the log of {topic}"
    assert load.acked <= set(log)


def test_the_operator_rolls_a_rack_at_a_time_and_resumes_a_batch_after_a_kill(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The operator (chart RBAC) with maxConcurrent 2, batchBy Rack, under load: it is SIGKILLed
    while its first batch is in flight (status.currentRemediation.batch: both members and their
    pod uids); its replacement continues that batch without deleting a pod again. Every broker
    restarted exactly once, a rack at a time, three BatchStarted Events, nothing lost."""
    partitions = 12
    topic = "operator-rack-at-a-time"
    faults.create_topic(cluster.bootstrap, topic, partitions, config={"min.insync.replicas": "2"})
    cp = ControlPlane(cluster.testbed.state_dir)
    apply_crds(cp)
    ns = "batch-roll"
    kubectl(cp, "create", "namespace", ns, check=False)
    body = roll_policy(
        ns,
        cluster.bootstrap,
        pauseBetweenBrokers="0s",
        maxConcurrent=2,
        batchBy="Rack",
        diagnosisInterval="2m",
        requests=[{"id": "b1", "reason": "batches e2e"}],
    )
    first, ident = chart_operator(cp, tmp_path_factory.mktemp("op1"), ns, extra_namespaces=(NAMESPACE,))
    second: OperatorProcess | None = None
    in_flight: dict[str, Any] = {}

    def roll_through_the_operator() -> str:
        nonlocal second
        first.start()
        apply(cp, body)
        seen = wait_status(
            cp,
            ns,
            "roll",
            lambda s: (
                ((s.get("currentRemediation") or {}).get("step") or "").startswith("Waiting")
                and len((s.get("currentRemediation") or {}).get("batch") or []) == 2
            ),
            timeout=600,
            what="a batch in flight",
        )
        first.stop(kill=True)  # SIGKILL mid-batch: its pods deleted, the waits not done
        in_flight.update(seen["currentRemediation"])
        second = OperatorProcess(
            cp, tmp_path_factory.mktemp("op2"), [], *first.extra, kubeconfig=ident.kubeconfig
        )
        second.start()
        status = wait_status(
            cp, ns, "roll", request_finished("rollingRestarts", "b1"), timeout=900, what="the roll done"
        )
        return json.dumps(status)

    try:
        seconds, timeline, load, said, together = under_load(
            cluster, topic, partitions, roll_through_the_operator
        )
        status = json.loads(said)
        print(f"operator, a rack at a time, killed once: {seconds:.1f}s")
        print(*transitions(timeline), sep="\n")
        result = next(r for r in status["rollingRestarts"] if r["id"] == "b1")
        assert result["state"] == "Succeeded", result
        assert sorted(result["brokersDone"]) == BROKERS
        members = in_flight["batch"]
        assert all(m.get("podUid") for m in members), in_flight
        assert len({RACK_OF[m["broker"]] for m in members}) == 1, in_flight
        assert restarts(timeline) == dict.fromkeys(BROKERS, 1), timeline.pids
        assert any(len(s) == 2 for s in together), together
        assert all(len({RACK_OF[b] for b in s}) == 1 for s in together), together
        events = events_of(cp, ns, "roll")
        batches = [e["message"] for e in events if e["reason"] == "BatchStarted"]
        assert len(batches) >= 3 and all("together: rack rack-" in m for m in batches), batches
        restarted = " ".join(e["message"] for e in events if e["reason"] == "BrokerRestarted")
        assert restarted.count("restarted together") >= 3, restarted
        nothing_lost(cluster, load, topic, partitions)
    finally:
        kubectl(cp, "delete", "khp", "--all", "-n", ns, "--wait=true", "--timeout=120s", check=False)
        first.stop()
        if second is not None:
            second.stop()
        ident.uninstall()
