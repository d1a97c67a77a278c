"""A roll held by a partition reassignment (issue 34 point 3), through the real operator, the real
kube-apiserver, the Kafka testbed and its broker-pod stand-in.

A throttled `kafka-reassign-partitions --execute` adds broker 2 to a topic on brokers 0 and 1
(30 MB a partition under a 1 KB/s throttle: about 5 minutes, longer than the operator takes to see
it), under an idempotent acks=all load on another topic. A roll of broker 2 requested with
`reassignmentsInFlight: Proceed` is held before it starts as `ReassignmentInProgress` (restart
safety rule 5: the broker a reassignment adds), in the request's result and the Remediating
condition, never as an unsafe or failed broker, and restarts nothing. The throttle lifted and the
move completed, `kafka-reassign-partitions --verify` says so (and removes the throttles); the roll
then restarts broker 2 and succeeds, and no acknowledged message is lost. (A roll already in
flight waits between brokers as `currentRemediation.waitingReason: ReassignmentInProgress`, up to
`timeouts.reassignment`: tests/unit/plan/test_roll_waits.py.)
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.standin import StandIn
from tests.k8s.operator_process import apply, broker_starts, chart_operator, condition, wait_status
from tests.k8s.test_operator_e2e import events_of
from tests.k8s.test_operator_roll import ready_cluster, result_of, roll_ns, roll_policy, stop_operator
from tests.k8s.test_rolling_restart import ConsumerThread, Load, ProducerThread, read_all

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]
__all__ = ["ready_cluster", "roll_ns"]  # fixtures, used by name


def _tool_ok(tb: Testbed, tool: str, args: list[str]) -> str:
    out = tb.tool(tool, args)
    assert out.returncode == 0, out.stdout + out.stderr
    return str(out.stdout)


def test_a_roll_waits_for_a_reassignment_then_finishes_and_loses_nothing(
    k8s_control_plane: ControlPlane,
    roll_ns: str,
    ready_cluster: StandIn,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    tmp_path: Path,
) -> None:
    cp, ns = k8s_control_plane, roll_ns
    moving, topic, partitions = f"{unique_name}-moving", unique_name, 6
    # min.insync.replicas 1: no rule but the reassignment's holds broker 2 (at min ISR would too).
    faults.create_topic(
        bootstrap, moving, assignment=[[0, 1], [1, 0], [0, 1]], config={"min.insync.replicas": "1"}
    )
    faults.fill(bootstrap, moving, 3, kb_each=30_000)  # ~5 min at the throttle: the operator sees it first
    faults.create_topic(bootstrap, topic, partitions, config={"min.insync.replicas": "2"})
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": moving, "partition": p, "replicas": r}
                    for p, r in enumerate(([0, 1, 2], [1, 0, 2], [0, 1, 2]))
                ],
            }
        )
    )
    reassign = ["--reassignment-json-file", str(plan)]
    _tool_ok(kafka, "kafka-reassign-partitions", [*reassign, "--execute", "--throttle", "1000"])
    load = Load()
    producer = ProducerThread(bootstrap, topic, load)
    reader = ConsumerThread(bootstrap, topic, partitions, load)
    before = broker_starts(kafka)
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=("kafka",))
    op.start()
    try:
        for t in (producer, reader):
            t.start()
        wait_for(lambda: len(load.acked) > 300, timeout=90, what="load running")
        apply(
            cp,
            roll_policy(
                ns,
                bootstrap,
                pauseBetweenBrokers="0s",
                reassignmentsInFlight="Proceed",
                requests=[{"id": "r1", "brokers": [2]}],
            ),
        )
        held = wait_status(
            cp,
            ns,
            "roll",
            lambda s: condition(s, "Remediating").get("reason") == "ReassignmentInProgress",
            timeout=300,
            what="the roll held by the reassignment",
        )
        print(f"\nheld: {condition(held, 'Remediating')}\nrequest: {result_of(held)}")
        # Its only broker is one the reassignment adds: the roll waits to start, with that reason
        # and the partitions named, in the request's result and the Remediating condition.
        message = condition(held, "Remediating")["message"]
        assert "broker 2" in message and f"{moving}-0" in message and "--verify" in message, message
        assert result_of(held)["state"] == "Pending" and result_of(held)["message"] == message
        assert not held.get("currentRemediation"), held.get("currentRemediation")
        assert condition(held, "Degraded").get("status") != "True", condition(held, "Degraded")
        incidents = {i["id"] for i in held.get("topIncidents") or []}
        assert "reassignment:cluster" in incidents and "broker_out_of_sync:2" not in incidents, incidents
        # It quotes what the new replicas still have to copy (and an ETA once the history shows
        # them copying: under this test's load Kafka's 1000 B/s throttle may not let them copy).
        assert re.search(r"\(\d+ B left to copy(, ETA \d+ s at the rate they copy)?\)", message), message
        time.sleep(20)  # a few cycles more: still held, nothing restarted, never halted
        still = wait_status(cp, ns, "roll", lambda s: True, timeout=30, what="the status")
        assert condition(still, "Remediating").get("reason") == "ReassignmentInProgress"
        assert broker_starts(kafka) == before and result_of(still)["state"] == "Pending", result_of(still)

        # Lift the throttle, let the move complete, and --verify it (which removes the throttles).
        _tool_ok(
            kafka,
            "kafka-reassign-partitions",
            [*reassign, "--execute", "--additional", "--throttle", "1000000000"],
        )

        def verified() -> bool:
            out = _tool_ok(kafka, "kafka-reassign-partitions", [*reassign, "--verify"])
            return not re.search(r"is still in progress", out)

        wait_for(verified, timeout=120, interval=2, what="--verify: the reassignment complete")
        status = wait_status(
            cp,
            ns,
            "roll",
            lambda s: result_of(s).get("state") in ("Succeeded", "Failed"),
            timeout=600,
            what="the roll finished",
        )
        assert result_of(status)["state"] == "Succeeded", result_of(status)
        assert result_of(status)["brokersDone"] == [2]
        after = broker_starts(kafka)
        assert {b: after[b] - before[b] for b in after} == {0: 0, 1: 0, 2: 1}, (before, after)
        reasons = [e["reason"] for e in events_of(cp, ns, "roll")]
        assert "RollHalted" not in reasons and "RollSucceeded" in reasons, reasons
        time.sleep(2)
        producer.stopping.set()
        producer.join(180)
        wait_for(lambda: load.acked <= set(load.consumed), timeout=120, what="every acked message read")
    finally:
        for t in (producer, reader):
            t.stopping.set()
        stop_operator(cp, ns, op, ident)
        kafka.tool("kafka-reassign-partitions", [*reassign, "--verify"])  # throttles gone whatever happened
        faults.delete_named(bootstrap, moving)  # 270 MB the session's other tests need not carry
    assert load.acked, "the producer never got an acknowledgement"
    assert load.acked <= set(read_all(bootstrap, topic, partitions)), "an acknowledged message was lost"
    assert not [line for line in op.log().splitlines() if "Traceback" in line], op.log()[-3000:]
