"""A planned roll is not an outage (issue 33 point 6), through the real operator, the real
kube-apiserver, the Kafka testbed and its broker-pod stand-in.

The policy's status and Events are sampled through a roll:

- While the roll restarts a broker on request, `Degraded` never turns True, no Warning
  `IncidentOpened` names that broker, its absence is a `planned_restart:<N>` info incident naming
  the request id, and Argo CD's health check (deploy/argocd/health.lua, run on each sampled
  object) says Progressing, never Degraded.
- A broker stopped by hand while the roll restarts another is an outage as before: a critical
  `broker_down` incident and its Warning Event, `Degraded=True`, Argo CD Degraded.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.standin import StandIn
from tests.k8s.operator_process import apply, chart_operator, condition, get, wait_status
from tests.k8s.test_operator_e2e import events_of
from tests.k8s.test_operator_roll import ready_cluster, result_of, roll_ns, roll_policy, stop_operator
from tests.ship.test_argocd_health import run_health

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]
__all__ = ["ready_cluster", "roll_ns"]  # fixtures, used by name

RESTARTING = {"DeletingPod", "WaitingPodReady", "WaitingBrokerRegistered", "WaitingUrpZero"}


class Sampler(threading.Thread):
    """Reads the policy object every `every` seconds: its conditions, in-flight roll, incidents,
    and the health Argo CD's Lua check gives it."""

    def __init__(self, cp: ControlPlane, ns: str, name: str, every: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.cp, self.ns, self.name, self.every = cp, ns, name, every
        self.stopping = threading.Event()
        self.samples: list[dict[str, Any]] = []

    def run(self) -> None:
        started = time.monotonic()
        while not self.stopping.is_set():
            try:
                obj = get(self.cp, "khp", self.ns, self.name)
            except Exception:  # the API server busy for a moment: the next sample
                self.stopping.wait(self.every)
                continue
            status = obj.get("status") or {}
            current = status.get("currentRemediation") or {}
            self.samples.append(
                {
                    "t": round(time.monotonic() - started, 1),
                    "degraded": condition(status, "Degraded"),
                    "remediating": condition(status, "Remediating"),
                    "current_broker": current.get("currentBroker"),
                    "step": current.get("step"),
                    "incidents": [
                        (i["id"], i["severity"], i["title"]) for i in status.get("topIncidents") or []
                    ],
                    "missing": (status.get("lastDiagnosis") or {}).get("missing") or [],
                    "at": (status.get("lastDiagnosis") or {}).get("at"),
                    "health": status.get("health"),
                    "unread": sorted(
                        {
                            f"{(f.get('evidence') or {}).get('part')}: {(f.get('evidence') or {}).get('reason')}"
                            for f in status.get("topFindings") or []
                            if f["check"] == "snapshot_incomplete"
                        }
                    ),
                    "argo": run_health(obj),
                }
            )
            self.stopping.wait(self.every)

    def timeline(self) -> str:
        """One line per change of what the status says (for the report and failures)."""
        lines, last = [], None
        for s in self.samples:
            key = (
                s["degraded"].get("status"),
                s["degraded"].get("reason"),
                s["current_broker"],
                s["step"],
                tuple(i[:2] for i in s["incidents"]),
                s["argo"]["status"],
                s["health"],
            )
            if key != last:
                lines.append(
                    f"{s['t']:>6}s Degraded={key[0]} {key[1]} | roll broker={key[2]} step={key[3]} "
                    f"| incidents={list(key[4])} | missing={s['missing']} | health={key[6]} Argo={key[5]}"
                    + (f" | unread: {s['unread']}" if s["unread"] else "")
                )
                last = key
        return "\n".join(lines)


def warning_incidents(cp: ControlPlane, ns: str) -> list[str]:
    """The Warning IncidentOpened messages, each from its incident id on (a late cycle's message
    starts "as of <time> (<age> ago): ")."""
    return [
        re.sub(r"^as of \S+ \([^)]*\): ", "", e["message"])
        for e in events_of(cp, ns, "roll")
        if e["reason"] == "IncidentOpened" and e.get("type") == "Warning"
    ]


def test_a_planned_roll_is_progressing_never_degraded(
    k8s_control_plane: ControlPlane,
    roll_ns: str,
    ready_cluster: StandIn,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    tmp_path: Path,
) -> None:
    cp, ns = k8s_control_plane, roll_ns
    faults.create_topic(bootstrap, unique_name, 6, config={"min.insync.replicas": "2"})
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=("kafka",))
    op.start()
    sampler = Sampler(cp, ns, "roll")
    try:
        sampler.start()
        body = roll_policy(ns, bootstrap, pauseBetweenBrokers="0s")
        body["spec"]["diagnostics"]["topFindings"] = 50
        apply(cp, body)
        status = wait_status(
            cp,
            ns,
            "roll",
            lambda s: result_of(s).get("state") in ("Succeeded", "Failed"),
            timeout=600,
            what="the roll finished",
        )
        # One more cycle after the roll: whatever it says is reported too.
        wait_status(
            cp, ns, "roll", lambda s: (s.get("lastDiagnosis") or {}).get("at") != status["lastDiagnosis"]["at"],
            timeout=120, what="a cycle after the roll",
        )  # fmt: skip
        sampler.stopping.set()
        sampler.join(10)
        timeline = sampler.timeline()
        print(f"\nconditions and incidents through the roll:\n{timeline}")
        events = events_of(cp, ns, "roll")
        print(
            "Events:\n" + "\n".join(f"  {e.get('type')} {e['reason']}: {e['message'][:160]}" for e in events)
        )
        assert result_of(status)["state"] == "Succeeded", result_of(status)
        assert sorted(result_of(status)["brokersDone"]) == [0, 1, 2]
        samples = sampler.samples
        # Degraded never True, Argo CD never Degraded, from the request to a cycle after the roll.
        assert not [s for s in samples if s["degraded"].get("status") == "True"], timeline
        assert not [s for s in samples if s["argo"]["status"] == "Degraded"], timeline
        during = [s for s in samples if s["remediating"].get("status") == "True"]
        assert during and all(s["argo"]["status"] == "Progressing" for s in during), timeline
        # A cycle saw a broker away on request: planned_restart, info, naming the request id.
        planned = [(s, i) for s in samples for i in s["incidents"] if i[0].startswith("planned_restart:")]
        assert planned, f"no cycle saw a broker restarting:\n{timeline}"
        for _s, (incident_id, severity, title) in planned:
            assert severity == "info", (incident_id, severity)
            assert "by rolling restart r1" in title, title
        assert any(s["degraded"].get("reason") == "PlannedRestart" for s, _ in planned), timeline
        assert not [s for s in samples if any(i[0].startswith("broker_down:") for i in s["incidents"])], (
            timeline
        )
        # No Warning IncidentOpened for a broker the roll restarted (none at all: nothing else broke).
        assert not [
            m for m in warning_incidents(cp, ns) if m.startswith(("broker_down:", "broker_out_of_sync:"))
        ], events
        assert not [e for e in events if e["reason"] == "ClusterPartlyUnreadable"], events
    finally:
        sampler.stopping.set()
        stop_operator(cp, ns, op, ident)


def test_another_broker_stopped_during_a_roll_is_still_an_outage(
    k8s_control_plane: ControlPlane,
    roll_ns: str,
    ready_cluster: StandIn,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    tmp_path: Path,
) -> None:
    cp, ns = k8s_control_plane, roll_ns
    faults.create_topic(bootstrap, unique_name, 6, config={"min.insync.replicas": "2"})
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=("kafka",))
    op.start()
    sampler = Sampler(cp, ns, "roll")
    current: int | None = None
    victim: int | None = None
    try:
        sampler.start()
        apply(cp, roll_policy(ns, bootstrap, pauseBetweenBrokers="0s", timeouts={"urpZero": "60s"}))
        restarting = wait_status(
            cp,
            ns,
            "roll",
            lambda s: (s.get("currentRemediation") or {}).get("step") in RESTARTING,
            timeout=300,
            what="the roll restarting a broker",
        )
        current = restarting["currentRemediation"]["currentBroker"]
        victim = next(b for b in (2, 1, 0) if b != current)
        kafka.stop(victim)  # not the roll's doing
        seen = wait_status(
            cp,
            ns,
            "roll",
            lambda s: (
                any(i["id"] == f"broker_down:{victim}" for i in s.get("topIncidents") or [])
                and condition(s, "Degraded").get("status") == "True"
            ),
            timeout=180,
            what=f"broker {victim} reported down and Degraded",
        )
        sampler.stopping.set()
        sampler.join(10)
        timeline = sampler.timeline()
        print(f"\nbroker {current} restarting on request, broker {victim} stopped by hand:\n{timeline}")
        down = next(i for i in seen["topIncidents"] if i["id"] == f"broker_down:{victim}")
        print(f"Degraded: {condition(seen, 'Degraded')}\n{down['id']} ({down['severity']}): {down['title']}")
        assert down["severity"] == "critical", down
        degraded = condition(seen, "Degraded")
        assert degraded["reason"] in ("ClusterPartlyUnreadable", "RemediationHalted"), degraded
        if degraded["reason"] == "ClusterPartlyUnreadable":
            assert f"log_dirs:{victim}" in degraded["message"], degraded
        assert run_health(get(cp, "khp", ns, "roll"))["status"] == "Degraded"

        def opened() -> list[str]:
            return [m for m in warning_incidents(cp, ns) if m.startswith(f"broker_down:{victim} ")]

        deadline = time.monotonic() + 60
        while not opened() and time.monotonic() < deadline:
            time.sleep(1)
        messages = opened()
        print("Warning IncidentOpened:\n" + "\n".join(f"  {m[:200]}" for m in warning_incidents(cp, ns)))
        assert messages and "(critical" in messages[0], json.dumps(events_of(cp, ns, "roll"))[:3000]
    finally:
        sampler.stopping.set()
        if current is not None and victim is not None:
            # The roll's broker comes back through its pod (the stand-in starts it) once the
            # stopped one is back (with both down the quorum has 1 of 3 voters); healing the
            # cluster before that would start it twice.
            with contextlib.suppress(Exception):
                kafka.start(victim)
            with contextlib.suppress(Exception):
                kafka.wait_serving(kafka.require(), [current], timeout=180)
        stop_operator(cp, ns, op, ident)
