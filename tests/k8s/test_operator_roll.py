"""Rolling restarts through the operator, as users run them: a request in a policy, the operator
under the chart's RBAC and flags, the real Kafka testbed and the broker-pod stand-in.

- A roll under an idempotent acks=all load with active consumer groups: nothing lost, every broker
  restarted once, the operator process never restarts (issue 14: librdkafka crashed the process
  when a group coordinator restarted), the never-safe partitions named when the roll starts.
- A cluster that turns unsafe between two brokers: the roll waits with a voice (condition
  reason, one Event), halts at timeouts.safeToRestart (Degraded, RollHalted, what to do next)
  and touches no other broker.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.standin import StandIn
from tests.k8s.operator_process import (
    OperatorProcess,
    apply,
    broker_starts,
    chart_operator,
    condition,
    kubectl,
    wait_status,
)
from tests.k8s.test_operator_e2e import INTERVAL_S, events_of, policy
from tests.k8s.test_rolling_restart import ConsumerThread, Load, ProducerThread, read_all

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]


class GroupConsumer(threading.Thread):
    """A subscribed consumer group member that commits as it reads: the group has a coordinator
    whose restarts the operator's offset reads must survive."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.stopping = threading.Event()
        self.read = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 200,
                "auto.offset.reset": "earliest",
                "logger": faults._QUIET,
            }
        )
        self.consumer.subscribe([topic])

    def run(self) -> None:
        while not self.stopping.is_set():
            for m in self.consumer.consume(200, timeout=0.3):
                if m.error() is None:
                    self.read += 1
        self.consumer.close()


@pytest.fixture
def roll_ns(k8s_control_plane: ControlPlane, crds: None) -> str:
    ns = f"roll-{uuid.uuid4().hex[:6]}"
    kubectl(k8s_control_plane, "create", "namespace", ns)
    return ns


def stop_operator(cp: ControlPlane, ns: str, op: OperatorProcess, ident: Any) -> None:
    """Delete the test's policies while the operator still runs (it removes its finalizer), then stop it."""
    kubectl(cp, "delete", "khp", "--all", "-n", ns, "--wait=false", check=False)
    with contextlib.suppress(TimeoutError):
        wait_for(
            lambda: not kubectl(cp, "get", "khp", "-n", ns, "-o", "name", check=False).stdout.strip(),
            timeout=150,
            what="the policies deleted",
        )
    op.stop()
    ident.uninstall()


@pytest.fixture
def ready_cluster(broker_pods: StandIn, kafka: Testbed) -> Iterator[StandIn]:
    faults.heal(kafka)
    broker_pods.wait_pods_ready(timeout=180)
    yield broker_pods
    faults.heal(kafka)
    broker_pods.wait_pods_ready(timeout=180)


def roll_policy(ns: str, bootstrap: str, **rolling: Any) -> dict[str, Any]:
    body = policy(
        ns,
        "roll",
        bootstrap,
        remediation={
            "mode": "Enforce",
            "preferredLeaderElection": {"enabled": False},
            # These tests read the diagnosis during the roll (planned restarts, conditions):
            # it runs every interval, not every diagnosisInterval (2m by default).
            "rollingRestart": {
                "requireMaintenanceWindow": False,
                "requests": [{"id": "r1"}],
                "diagnosisInterval": f"{INTERVAL_S}s",
                **rolling,
            },
        },
    )
    body["spec"]["cluster"]["brokerPods"] = {"namespace": "kafka", "statefulSet": "kafka"}
    return body


def result_of(status: dict[str, Any], request: str = "r1") -> dict[str, Any]:
    return next((r for r in status.get("rollingRestarts") or [] if r["id"] == request), {})


def test_roll_through_the_operator_under_load_with_consumer_groups(
    k8s_control_plane: ControlPlane,
    roll_ns: str,
    ready_cluster: StandIn,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    tmp_path: Path,
) -> None:
    cp, ns = k8s_control_plane, roll_ns
    topic, partitions = unique_name, 6
    faults.create_topic(bootstrap, topic, partitions, config={"min.insync.replicas": "2"})
    never_safe = f"{unique_name}-rf2"
    faults.create_topic(bootstrap, never_safe, 1, rf=2, config={"min.insync.replicas": "2"})
    load = Load()
    producer = ProducerThread(bootstrap, topic, load)
    reader = ConsumerThread(bootstrap, topic, partitions, load)
    groups = [GroupConsumer(bootstrap, topic, f"{unique_name}-g{i}") for i in range(2)]
    before = broker_starts(kafka)
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=("kafka",))
    op.start()
    pid = op.proc.pid if op.proc else None
    try:
        for t in (producer, reader, *groups):
            t.start()
        wait_for(
            lambda: len(load.acked) > 300 and all(g.read for g in groups), timeout=90, what="load running"
        )
        # Refuse (the default): the roll does not start; status names the partition and the fix, and
        # the min_isr_too_high finding says the same.
        refusing = roll_policy(ns, bootstrap, pauseBetweenBrokers="0s")
        refusing["spec"]["diagnostics"]["topFindings"] = 50
        apply(cp, refusing)
        refused = wait_status(
            cp,
            ns,
            "roll",
            lambda s: any(w["reason"] == "NeverSafePartitions" for w in s.get("withheld") or []),
            timeout=300,
            what="the roll refused for the never-safe partition",
        )
        held = next(w for w in refused["withheld"] if w["reason"] == "NeverSafePartitions")
        assert f"{never_safe}-0" in held["message"] and "neverSafePartitions: Proceed" in held["message"]
        assert not refused.get("currentRemediation")
        finding = [f for f in refused.get("topFindings") or [] if f["check"] == "min_isr_too_high"]
        assert any(never_safe in f["subject"] and "is refused" in f["message"] for f in finding), finding
        # Proceed: the same request rolls, and says what it costs.
        proceeding = roll_policy(ns, bootstrap, pauseBetweenBrokers="0s", neverSafePartitions="Proceed")
        proceeding["spec"]["diagnostics"]["topFindings"] = 50
        apply(cp, proceeding)
        started = wait_status(
            cp, ns, "roll", lambda s: bool(s.get("currentRemediation")), timeout=180, what="the roll started"
        )
        current = started["currentRemediation"]
        assert f"{never_safe}-0" in (current.get("neverSafePartitions") or []), current
        status = wait_status(
            cp,
            ns,
            "roll",
            lambda s: result_of(s).get("state") in ("Succeeded", "Failed"),
            timeout=600,
            what="the roll finished",
        )
        assert result_of(status)["state"] == "Succeeded", result_of(status)
        assert sorted(result_of(status)["brokersDone"]) == [0, 1, 2]
        after = broker_starts(kafka)
        assert {b: after[b] - before[b] for b in after} == {0: 1, 1: 1, 2: 1}, (before, after)
        # The operator process never died: same process, still serving (zero restarts).
        assert op.proc is not None and op.proc.poll() is None and op.proc.pid == pid
        assert op.ready()
        rolled = [e for e in events_of(cp, ns, "roll") if e["reason"] == "RollStarted"]
        assert rolled and f"{never_safe}-0" in rolled[0]["message"], rolled
        assert "unavailable to acks=all" in rolled[0]["message"]
        reasons = [e["reason"] for e in events_of(cp, ns, "roll")]
        assert reasons.count("BrokerRestarted") == 3 and "RollSucceeded" in reasons, reasons
        time.sleep(2)
        producer.stopping.set()
        producer.join(180)
        wait_for(lambda: load.acked <= set(load.consumed), timeout=120, what="every acked message read")
    finally:
        for t in (producer, reader, *groups):
            t.stopping.set()
        stop_operator(cp, ns, op, ident)
    assert load.failed == 0 or load.acked, "the producer never got an acknowledgement"
    assert load.acked <= set(read_all(bootstrap, topic, partitions)), "an acknowledged message was lost"
    assert not [line for line in op.log().splitlines() if "Traceback" in line], op.log()[-3000:]


def test_unsafe_between_brokers_waits_with_a_voice_then_halts(
    k8s_control_plane: ControlPlane,
    roll_ns: str,
    ready_cluster: StandIn,
    kafka: Testbed,
    bootstrap: str,
    tmp_path: Path,
) -> None:
    cp, ns = k8s_control_plane, roll_ns
    before = broker_starts(kafka)
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=("kafka",))
    op.start()
    try:
        apply(cp, roll_policy(ns, bootstrap, pauseBetweenBrokers="20s", timeouts={"safeToRestart": "30s"}))
        first = wait_status(
            cp,
            ns,
            "roll",
            lambda s: len((s.get("currentRemediation") or {}).get("brokersDone") or []) == 1,
            timeout=300,
            what="the first broker restarted",
        )
        done = first["currentRemediation"]["brokersDone"][0]
        # Between brokers (pauseBetweenBrokers 20s) the step reads WaitingForSafety, as documented.
        assert first["currentRemediation"]["step"] == "WaitingForSafety", first["currentRemediation"]
        assert first["currentRemediation"].get("currentBroker") is None
        victim = next(b for b in (0, 1, 2) if b != done)
        kafka.stop(victim)  # SIGTERM outside the roll: the cluster is no longer safe to roll
        waiting = wait_status(
            cp,
            ns,
            "roll",
            lambda s: (
                condition(s, "Remediating").get("reason") in ("WaitingForSafety", "WaitingForBrokerReady")
            ),
            timeout=120,
            what="the roll waiting for safety",
        )
        cond = condition(waiting, "Remediating")
        assert cond["status"] == "True" and "halts at" in cond["message"], cond
        assert waiting["currentRemediation"].get("waitingSince"), waiting["currentRemediation"]
        assert waiting["currentRemediation"]["step"] == "WaitingForSafety", waiting["currentRemediation"]
        halted = wait_status(
            cp,
            ns,
            "roll",
            lambda s: result_of(s).get("state") == "Failed",
            timeout=180,
            what="the roll halted",
        )
        message = result_of(halted)["message"]
        assert "not safe to restart within 30s" in message and "To finish" in message, message
        assert condition(halted, "Degraded")["reason"] == "RemediationHalted"
        assert not halted.get("currentRemediation")
        events = events_of(cp, ns, "roll")
        waits = [e for e in events if e["reason"] in ("WaitingForSafety", "WaitingForBrokerReady")]
        assert len(waits) == 1 and waits[0].get("count", 1) == 1, waits  # one Event when waiting starts
        assert any(e["reason"] == "RollHalted" for e in events)
        # Nothing else was touched: only the first broker restarted (the victim was stopped by us).
        after = broker_starts(kafka)
        assert {b: after[b] - before[b] for b in after} == {b: (1 if b == done else 0) for b in after}
        assert any(h["action"] == "RollingRestart" and h["outcome"] == "Failed" for h in halted["history"])
    finally:
        stop_operator(cp, ns, op, ident)
