"""A full roll of a cluster with dedicated KRaft controllers (issue 11 §3), on the real testbed:
3 controller-only nodes (100-102, StatefulSet `kafka-controller`) and 3 broker-only nodes (0-2,
StatefulSet `kafka`), their pods kept by the stand-in, under an idempotent acks=all load.

Through the CLI as a user runs it: the dry run's JSON plan (order and why), then `--execute`.
Sampled meanwhile in threads: the KRaft quorum (describe_metadata_quorum) and every node's pid.
Asserts: every node restarted exactly once, the controllers before the brokers, the active
controller last of the controllers (it was the leader right before its restart), a quorum
leader at every sample, 0 acknowledged records lost and none duplicated.

Then through the operator (the chart's RBAC, a policy with spec.cluster.controllerPods): a request
for the three controllers and broker 0 restarts them in that role order, the others untouched."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import AdminCallError, Timeouts
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import CONTROLLER_ID_BASE, Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import CONTROLLER_STATEFULSET, NAMESPACE, STATEFULSET
from tests.k8s.conftest import apply_crds
from tests.k8s.operator_process import apply, chart_operator, kubectl, request_finished, wait_status
from tests.k8s.test_controller_pods import cli
from tests.k8s.test_operator_e2e import events_of, policy
from tests.k8s.test_rolling_restart import ConsumerThread, Load, ProducerThread, read_all

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

PORT_OFFSET = 3000  # from KAFKA_HEALTH_TEST_PORT: brokers base..base+2, controllers base+100..102
CONTROLLERS = [CONTROLLER_ID_BASE + i for i in range(3)]
BROKERS = [0, 1, 2]


@dataclass
class Cluster:
    testbed: Testbed
    bootstrap: str
    kubeconfig: str


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    state_dir = tmp_path_factory.mktemp("controller-roll")
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET
    try:
        out = cli(state_dir, "up", "--k8s", "--brokers", "3", "--controllers", "3", "--base-port", str(base))
        assert out.returncode == 0, out.stderr
        tb = Testbed(state_dir)
        yield Cluster(tb, tb.require().bootstrap_servers, out.stdout.strip().splitlines()[1])
    finally:
        down = cli(state_dir, "down", "--purge")
        assert down.returncode == 0, down.stderr


@dataclass
class Timeline:
    quorum: list[tuple[float, int | None]] = field(default_factory=list)
    """(time, leader id) of every quorum sample; None: no leader in the answer."""
    quorum_errors: list[tuple[float, str]] = field(default_factory=list)
    pids: dict[int, list[tuple[float, int | None]]] = field(default_factory=dict)
    """node → (first time seen, pid) of each process it ran, and (time, None) when it was down."""


class Watcher:
    """Two threads: the quorum every ~0.25 s (the first answer of a sample counts; an error is
    recorded, never retried into success), every node's pid every ~0.2 s."""

    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.out = Timeline()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._quorum, daemon=True),
            threading.Thread(target=self._pids, daemon=True),
        ]

    def __enter__(self) -> Timeline:
        for t in self.threads:
            t.start()
        return self.out

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def _quorum(self) -> None:
        with KafkaAdmin({"bootstrap.servers": self.c.bootstrap}, timeouts=Timeouts(5, 5)) as admin:
            while not self.stop.is_set():
                at = time.time()
                try:
                    self.out.quorum.append((at, admin.describe_quorum().leader_id))
                except Exception as exc:
                    self.out.quorum_errors.append((at, str(exc)))
                self.stop.wait(0.25)

    def _pids(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(Exception):
                state = self.c.testbed.require()
                at = time.time()
                for node in state.nodes:
                    pid = None if self.c.testbed.process_state(node) == "down" else node.pid
                    seen = self.out.pids.setdefault(node.id, [])
                    if not seen or seen[-1][1] != pid:
                        seen.append((at, pid))
            self.stop.wait(0.2)


def transitions(timeline: Timeline) -> list[str]:
    """The quorum's leader changes and each node's process changes, in time order (for failures)."""
    events: list[tuple[float, str]] = []
    last: object = "start"
    for at, lid in timeline.quorum:
        if lid != last:
            events.append((at, f"leader {lid}"))
            last = lid
    for node, seen in timeline.pids.items():
        events.extend((at, f"node {node} pid {pid}") for at, pid in seen)
    return [
        f"{time.strftime('%H:%M:%S', time.gmtime(at))}.{int(at % 1 * 1000):03d} {what}"
        for at, what in sorted(events)
    ]


def restart_args(c: Cluster) -> list[str]:
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
        "--controller-statefulset",
        CONTROLLER_STATEFULSET,
        "--controller-ordinal-offset",
        str(CONTROLLER_ID_BASE),
        "--pause",
        "1s",
        "--pod-ready",
        "3m",
        "--broker-registered",
        "2m",
        "--urp-zero",
        "3m",
    ]


def test_full_roll_controllers_first_active_last_quorum_led_throughout_nothing_lost(cluster: Cluster) -> None:
    topic, partitions = "controller-roll", 6
    faults.create_topic(cluster.bootstrap, topic, partitions, config={"min.insync.replicas": "2"})

    # The dry run's plan: controllers first (followers by id, the active one last), then brokers.
    dry = CliRunner().invoke(app, [*restart_args(cluster), "--output", "json"])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.output)
    leader = plan["quorumLeader"]
    assert leader in CONTROLLERS
    followers = sorted(set(CONTROLLERS) - {leader})
    assert plan["order"] == [*followers, leader, *BROKERS]
    roles = [(n["node"], n["role"]) for n in plan["nodes"]]
    assert roles == [
        *((f, "controller") for f in followers),
        (leader, "active controller"),
        *((b, "broker") for b in BROKERS),
    ]
    assert all(n["why"] for n in plan["nodes"])
    assert plan["nodes"][0]["safeNow"] is True

    load = Load()
    producer = ProducerThread(cluster.bootstrap, topic, load)
    consumer = ConsumerThread(cluster.bootstrap, topic, partitions, load)
    with Watcher(cluster) as timeline:
        producer.start()
        consumer.start()
        wait_for(lambda: len(load.acked) > 500, timeout=60, what="the producer running")
        rolled = CliRunner().invoke(app, [*restart_args(cluster), "--execute", "--no-elect"])
        acked_at_roll_end = len(load.acked)
        time.sleep(1)
        producer.stopping.set()
        producer.join(180)
        wait_for(lambda: load.acked <= set(load.consumed), timeout=120, what="every acknowledged record read")
        consumer.stopping.set()
        consumer.join(30)
    print(rolled.output)
    print(*transitions(timeline), sep="\n")
    assert rolled.exit_code == 0, rolled.output
    assert "Succeeded: restarted brokers " in rolled.output

    # Every node restarted exactly once; the order of the restarts as the processes show it.
    down_at, up_at = {}, {}
    for node in [*CONTROLLERS, *BROKERS]:
        pids = [pid for _, pid in timeline.pids.get(node, [])]
        running = [pid for pid in pids if pid is not None]
        assert len(running) == 2 and pids[0] is not None, (node, timeline.pids.get(node))
        up_at[node] = next(at for at, pid in timeline.pids[node] if pid == running[1])
        down_at[node] = next((at for at, pid in timeline.pids[node] if pid is None), up_at[node])
    order = sorted(up_at, key=up_at.__getitem__)
    assert (
        sorted(order, key=down_at.__getitem__) == order
    )  # one at a time: each went down after the last was up
    assert all(up_at[a] <= down_at[b] for a, b in itertools.pairwise(order))
    assert set(order[:3]) == set(CONTROLLERS), order  # the controllers before any broker
    assert order[3:] == BROKERS
    # The active controller last of the controllers: it led the quorum at every sample until the
    # other two were restarted and back, and the leadership first moved only after that.
    second, last = order[1], order[2]
    changes = [(at, lid) for (at, lid) in timeline.quorum if lid != last]
    assert {lid for at, lid in timeline.quorum if at <= up_at[second]} == {last}, transitions(timeline)
    assert changes and changes[0][0] > up_at[second], transitions(timeline)

    # The quorum had a leader at every sample of the roll.
    assert len(timeline.quorum) > 100
    assert [lid for _, lid in timeline.quorum if lid is None] == []
    assert timeline.quorum_errors == []

    # 0 acknowledged records lost, none written twice.
    assert acked_at_roll_end > 1000
    assert load.acked <= set(load.consumed)
    assert {v: at for v, at in load.positions.items() if len(at) > 1} == {}
    log_values = read_all(cluster.bootstrap, topic, partitions)
    assert len(log_values) == len(set(log_values))
    assert load.acked <= set(log_values)


def test_operator_rolls_dedicated_controllers_first_through_controller_pods(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The operator (chart RBAC, the policy's spec.cluster.controllerPods) rolls the three
    controllers and one broker of a request: the controllers first, the active one last of them,
    then the broker; each once, the others untouched, a quorum leader at every sample."""

    cp = ControlPlane(cluster.testbed.state_dir)
    apply_crds(cp)
    ns = "controller-roll"
    kubectl(cp, "create", "namespace", ns, check=False)
    wanted = [*CONTROLLERS, 0]
    body = policy(
        ns,
        "roll",
        cluster.bootstrap,
        remediation={
            "mode": "Enforce",
            "preferredLeaderElection": {"enabled": False},
            "rollingRestart": {
                "requireMaintenanceWindow": False,
                "pauseBetweenBrokers": "1s",
                "requests": [{"id": "c1", "brokers": wanted, "reason": "controllers e2e"}],
            },
        },
    )
    body["spec"]["cluster"]["brokerPods"] = {"namespace": NAMESPACE, "statefulSet": STATEFULSET}
    body["spec"]["cluster"]["controllerPods"] = {
        "namespace": NAMESPACE,
        "statefulSet": CONTROLLER_STATEFULSET,
        "brokerId": {"source": "Label", "label": "kafkahealth.io/node-id"},
    }
    op, ident = chart_operator(cp, tmp_path_factory.mktemp("op"), ns, extra_namespaces=(NAMESPACE,))
    with KafkaAdmin({"bootstrap.servers": cluster.bootstrap}) as admin:
        leader = admin.describe_quorum().leader_id
    assert leader in CONTROLLERS
    try:
        with Watcher(cluster) as timeline:
            op.start()
            apply(cp, body)
            status = wait_status(
                cp,
                ns,
                "roll",
                request_finished("rollingRestarts", "c1"),
                timeout=900,
                what="the operator's roll done",
            )
        print(*transitions(timeline), sep="\n")
        result = next(r for r in status["rollingRestarts"] if r["id"] == "c1")
        assert result["state"] == "Succeeded", result
        assert sorted(result["brokersDone"]) == sorted(wanted)

        # Each requested node restarted once, in order; the other brokers untouched.
        up_at = {}
        for node in [*CONTROLLERS, *BROKERS]:
            running = [(at, pid) for at, pid in timeline.pids.get(node, []) if pid is not None]
            if node in wanted:
                assert len(running) == 2, (node, timeline.pids.get(node))
                up_at[node] = running[1][0]
            else:
                assert len(running) == 1, (node, timeline.pids.get(node))
        order = sorted(up_at, key=up_at.__getitem__)
        followers = sorted(set(CONTROLLERS) - {leader})
        assert order == [*followers, leader, 0], (order, transitions(timeline))
        assert [lid for _, lid in timeline.quorum if lid is None] == [], transitions(timeline)
        assert timeline.quorum_errors == []
        restarted = [e for e in events_of(cp, ns, "roll") if e["reason"] == "BrokerRestarted"]
        assert sum(int(e.get("count") or 1) for e in restarted) == len(wanted), restarted
        messages = " ".join(e["message"] for e in restarted)  # each node named for what it is
        assert all(f"controller {c} restarted" in messages for c in CONTROLLERS), messages
        assert "broker 0 restarted" in messages, messages
    finally:
        kubectl(cp, "delete", "khp", "--all", "-n", ns, "--wait=true", "--timeout=120s", check=False)
        op.stop()
        ident.uninstall()


@pytest.mark.spark
def test_a_paused_broker_shows_as_a_lagging_observer_before_it_is_fenced(cluster: Cluster) -> None:
    """Broker-only nodes are the quorum's observers. A broker frozen (SIGSTOP) stops fetching the
    metadata log: 2.5 s later (the testbed's broker.session.timeout.ms is 4 s) the
    quorum check reports it as quorum_observer_lagging, from the real quorum's answer (read
    through broker 0 by a fresh client each time, so no request waits on the frozen broker)."""
    from datetime import UTC, datetime

    from kafka_health.models.snapshot import Broker, ClusterSnapshot
    from kafka_health_spark.checks.quorum import quorum_voter_lagging
    from kafka_health_spark.findings import collect_findings
    from kafka_health_spark.frames import build_frames
    from kafka_health_spark.session import get_session
    from kafka_health_spark.thresholds import Thresholds

    spark = get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g")
    thresholds = Thresholds().with_overrides({"quorum_caught_up_seconds": 2})
    first = cluster.bootstrap.split(",")[0]  # broker 0

    def observers_lagging() -> list[int]:
        with KafkaAdmin({"bootstrap.servers": first}, timeouts=Timeouts(3, 3)) as admin:
            q = admin.describe_quorum()
        assert {o.id for o in q.observers} == set(BROKERS), q
        # The quorum check alone: every broker taken as registered (broker 2 is fenced after 4 s).
        live = [Broker(id=b, host="127.0.0.1", port=0, alive=True) for b in BROKERS]
        snap = ClusterSnapshot(cluster="observers", taken_at=datetime.now(UTC), brokers=live, quorum=q)
        found = collect_findings(
            quorum_voter_lagging(build_frames(spark, snap, None, thresholds), thresholds), 100
        )
        return [
            f.subject.broker
            for f in found
            if f.check == "quorum_observer_lagging" and f.subject.broker is not None
        ]

    assert observers_lagging() == []  # all three brokers observe, caught up
    cluster.testbed.pause(2)
    paused = time.monotonic()
    try:
        time.sleep(2.5)
        seen: list[list[int]] = []
        while time.monotonic() - paused < 8 and [2] not in seen:
            seen.append(observers_lagging())
    finally:
        cluster.testbed.resume(2)
    assert [2] in seen, seen
    wait_for(lambda: observers_lagging() == [], timeout=60, what="broker 2 caught up again")


def test_a_frozen_broker_never_fails_a_quorum_read(cluster: Cluster) -> None:
    """kafka-python sends DescribeQuorum to a random broker when its fresh client holds no
    answering connection; a frozen broker picked twice failed the read (2 of 27 reads over three
    freezes, before). Now the brokers are asked in turn, each for at most half the request
    timeout, so every read through a fresh client answers while broker 2 is frozen (SIGSTOP, for
    7 s: before and after it is fenced at the testbed's broker.session.timeout.ms, 4 s)."""
    first = cluster.bootstrap.split(",")[0]
    for _ in range(2):
        failures: list[str] = []
        reads = 0
        cluster.testbed.pause(2)
        paused = time.monotonic()
        try:
            while time.monotonic() - paused < 7:
                try:
                    with KafkaAdmin({"bootstrap.servers": first}, timeouts=Timeouts(3, 3)) as admin:
                        assert admin.describe_quorum().leader_id is not None
                except AdminCallError as exc:
                    failures.append(str(exc))
                reads += 1
        finally:
            cluster.testbed.resume(2)
        assert failures == [] and reads >= 4, (failures, reads)
        wait_for(lambda: 2 in unfenced(first), timeout=60, what="broker 2 unfenced again")


def unfenced(bootstrap: str) -> set[int]:
    with KafkaAdmin({"bootstrap.servers": bootstrap}, timeouts=Timeouts(3, 3)) as admin:
        return {b.id for b in admin.describe_cluster() if not b.fenced}
