"""Unclean stops seen (issue 36, point 3), through the real operator, the real kube-apiserver, the
Kafka testbed and its broker-pod stand-in.

`kafka-health testbed broker oom-kill 2` SIGKILLs broker 2 as the OOM killer would; the stand-in
restarts it inside the same pod as a kubelet does (restartCount 1, lastState terminated
OOMKilled, exit 137: read back with kubectl, the oracle). The operator, which reads the pods the
policy names (`spec.cluster.brokerPods`) every cycle, reports an `unclean_stop` finding naming
the pod, its terminationGracePeriodSeconds (as the pod spec has it), the exit and the fix, with
a Warning Event; the fix a user makes -- a new pod -- clears it. A broker paused (fenced while
its container runs, as one recovering its logs is) is `broker_recovering`, in its `broker_down`
incident, until it serves again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import NAMESPACE
from kafka_health.testbed.standin import StandIn
from tests.k8s.operator_process import apply, chart_operator, kubectl, wait_status
from tests.k8s.test_controller_pods import cli
from tests.k8s.test_operator_e2e import events_of, policy
from tests.k8s.test_operator_roll import ready_cluster, roll_ns, stop_operator

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]
__all__ = ["ready_cluster", "roll_ns"]  # fixtures, used by name

POD = "kafka-2"


def pod_json(cp: ControlPlane) -> dict[str, Any]:
    return dict(json.loads(kubectl(cp, "get", "pod", "-n", NAMESPACE, POD, "-o", "json").stdout))


def unclean(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in status.get("topFindings") or [] if f["check"] == "unclean_stop"]


def recovering(status: dict[str, Any], broker: int) -> list[dict[str, Any]]:
    return [
        f
        for f in status.get("topFindings") or []
        if f["check"] == "broker_recovering" and f["subject"] == f"broker/broker={broker}"
    ]


def test_an_oom_killed_broker_is_an_unclean_stop_naming_its_pod_and_grace_period(
    k8s_control_plane: ControlPlane,
    roll_ns: str,
    ready_cluster: StandIn,
    kafka: Testbed,
    bootstrap: str,
    tmp_path: Path,
) -> None:
    cp, ns = k8s_control_plane, roll_ns
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=(NAMESPACE,))
    op.start()
    try:
        # The pods' findings among the top ones whatever else the shared cluster holds: a fenced
        # broker makes a warning per partition (under-replicated, at min ISR), which sort first.
        checks = {"underReplicated": {"enabled": False}, "minIsr": {"enabled": False}}
        body = policy(ns, "unclean", bootstrap, diagnostics={"topFindings": 50, "checks": checks})
        body["spec"]["cluster"]["brokerPods"] = {"namespace": NAMESPACE, "statefulSet": "kafka"}
        apply(cp, body)
        wait_status(cp, ns, "unclean", lambda s: s.get("lastDiagnosis"), timeout=180, what="a first cycle")
        before = pod_json(cp)

        killed = cli(kafka.state_dir, "broker", "oom-kill", "2")
        assert killed.returncode == 0, killed.stderr

        # The kubelet's part, read back as kubectl shows it: the same pod, restarted in place.
        def restarted() -> dict[str, Any] | None:
            pod = pod_json(cp)
            (c,) = pod["status"]["containerStatuses"]
            return pod if c.get("restartCount") == 1 and c.get("ready") else None

        pod = wait_for(restarted, timeout=180, interval=1.0, what="kafka-2 restarted in place and Ready")
        assert pod["metadata"]["uid"] == before["metadata"]["uid"]
        (container,) = pod["status"]["containerStatuses"]
        last = container["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (137, "OOMKilled"), last
        grace = pod["spec"]["terminationGracePeriodSeconds"]

        status = wait_status(cp, ns, "unclean", lambda s: unclean(s), timeout=120, what="unclean_stop")
        (f,) = unclean(status)
        print(json.dumps(f, indent=1))
        assert f["severity"] == "warning" and f["subject"] == "broker/broker=2"
        ev = f["evidence"]  # (status evidence is text)
        assert (ev["pod"], ev["container"], ev["exit_code"], ev["reason"]) == (
            POD,
            "kafka",
            "137",
            "OOMKilled",
        )
        assert ev["grace_period_seconds"] == str(grace) and ev["restart_count"] == "1"
        assert f"pod {POD}, terminationGracePeriodSeconds {grace} s" in f["message"]
        assert "memory limit" in f["remediation"]
        wait_for(
            lambda: any(
                e["reason"] == "IncidentOpened" and "unclean_stop" in e["message"] and e["type"] == "Warning"
                for e in events_of(cp, ns, "unclean")
            ),
            timeout=60,
            what="a Warning IncidentOpened Event for the unclean stop",
        )

        # A broker fenced while its container runs (paused here: Kafka cannot tell it from one
        # recovering its logs) is broker_recovering, in its broker_down incident.
        kafka.pause(1)
        try:
            status = wait_status(
                cp, ns, "unclean", lambda s: recovering(s, 1), timeout=120, what="broker_recovering"
            )
            (r,) = recovering(status, 1)
            assert r["evidence"]["pod"] == "kafka-1" and "fenced while its pod kafka-1 runs" in r["message"]
            assert any(i["id"] == "broker_down:1" for i in status.get("topIncidents") or []), status
        finally:
            kafka.resume(1)
        wait_status(cp, ns, "unclean", lambda s: not recovering(s, 1), timeout=120, what="recovered")

        # The fix (a new pod: a restart with its controlled shutdown) clears it.
        kubectl(cp, "delete", "pod", "-n", NAMESPACE, POD, "--wait=true", "--timeout=180s")
        ready_cluster.wait_pods_ready(timeout=180)
        assert not pod_json(cp)["status"]["containerStatuses"][0].get("lastState")  # ({} as a kubelet has it)
        wait_status(cp, ns, "unclean", lambda s: not unclean(s), timeout=120, what="unclean_stop cleared")
    finally:
        stop_operator(cp, ns, op, ident)
        if pod_json(cp)["status"]["containerStatuses"][0].get("lastState"):
            # Failed half-way: no later test may find this pod's OOM kill.
            kubectl(cp, "delete", "pod", "-n", NAMESPACE, POD, "--wait=true", "--timeout=180s")
            ready_cluster.wait_pods_ready(timeout=180)
