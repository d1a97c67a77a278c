"""Honest halts and one never-safe rule (issue 33, point 7) on the real testbed: 3 KRaft brokers,
their pods kept by the stand-in, the real kube-apiserver.

- `kafka-health restart` refuses a roll over an RF 3 / min ISR 3 topic by default (the
  operator's neverSafePartitions: Refuse, through the same decision), touches nothing and
  names the partitions; `--never-safe proceed` rolls and names them.
- A roll that halts with a broker in flight (its pod deleted and recreated, waiting for URP 0
  while another broker hangs) names it "restart begun, not confirmed healthy", records it
  (typed `restartBegun`), and following its advice checks that broker's health without
  restarting it again; between brokers the step reads WaitingForSafety.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from typer.testing import CliRunner

from kafka_health.cli.main import app
from kafka_health.cli.restart_honest import halt_lines
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import (
    BrokerPods,
    CurrentRemediation,
    RequestState,
    RestartBegun,
    RestartTimeouts,
)
from kafka_health.plan.restart_resume import BEGUN
from kafka_health.remediate.rolling_restart import Step, run_roll
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.pod_layout import APP_SELECTOR, NAMESPACE
from kafka_health.testbed.standin import StandIn
from tests.k8s.operator_process import apply, broker_starts, chart_operator, kubectl, wait_status
from tests.k8s.test_operator_e2e import events_of
from tests.k8s.test_operator_roll import result_of, roll_policy, stop_operator

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

PODS = BrokerPods(namespace=NAMESPACE, stateful_set="kafka")


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


@pytest.fixture
def op_ns(k8s_control_plane: ControlPlane, crds: None) -> str:
    ns = f"honest-{uuid.uuid4().hex[:6]}"
    kubectl(k8s_control_plane, "create", "namespace", ns)
    return ns


def cli(bootstrap: str, cp: ControlPlane, *extra: str) -> Any:
    args = ["restart", "-b", bootstrap, "-n", NAMESPACE, "--kubeconfig", str(cp.kubeconfig)]
    return CliRunner().invoke(app, [*args, "--statefulset", "kafka", "--pause", "1s", *extra])


# ---------------------------------------------------------------------------------- never-safe
def test_cli_refuses_a_never_safe_roll_by_default_and_touches_nothing(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
    unique_name: str,
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    faults.create_topic(bootstrap, unique_name, 2, 3, config={"min.insync.replicas": "3"})
    before, uids = pids(kafka), pod_uids(core)
    executed = cli(bootstrap, k8s_control_plane, "--execute")
    assert executed.exit_code == 1, executed.output  # the CLI's "refused" (2 is a usage error)
    assert "refused: 2 partition(s) have a replication factor <= min.insync.replicas" in executed.output
    assert f"{unique_name}-0, {unique_name}-1" in executed.output
    assert "or pass --never-safe proceed to roll anyway" in executed.output
    assert "never_safe" in executed.output and "safe\n" not in executed.output  # no node called safe
    dry = cli(bootstrap, k8s_control_plane)
    assert dry.exit_code == 1 and "refused: 2 partition(s)" in dry.output, dry.output
    assert pod_uids(core) == uids and pids(kafka) == before  # nothing restarted


def test_cli_never_safe_proceed_rolls_and_names_the_partitions(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    k8s_control_plane: ControlPlane,
    unique_name: str,
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    faults.create_topic(bootstrap, unique_name, 2, 3, config={"min.insync.replicas": "3"})
    before, uids = pids(kafka), pod_uids(core)
    result = cli(bootstrap, k8s_control_plane, "--never-safe", "proceed", "--brokers", "1", "--execute")
    assert result.exit_code == 0, result.output
    assert "--never-safe proceed: 2 partition(s) with RF <= min.insync.replicas can never roll safely" in (
        result.output
    )
    assert f"(--never-safe proceed): {unique_name}-0, {unique_name}-1" in result.output
    assert "Succeeded: restarted brokers 1" in result.output
    after, uids_after = pids(kafka), pod_uids(core)
    assert after[1] != before[1] and uids_after["kafka-1"] != uids["kafka-1"]
    assert (after[0], after[2]) == (before[0], before[2])


# ---------------------------------------------------------------------------------- honest halt
def test_a_halt_with_a_broker_in_flight_names_it_and_the_advice_never_restarts_it_again(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    unique_name: str,
) -> None:
    """The roll deletes broker A's pod, and right then broker P (not in the roll, it leads some of
    A's partitions) hangs (SIGSTOP): A comes back and registers, but P is fenced and drops out
    of the ISRs, so URP never reaches 0 and WaitingUrpZero times out: the halt names A as
    "restart begun, not confirmed healthy". Following the advice (P healed) checks A's health
    without a second restart, then restarts the next broker; WaitingForSafety between them."""
    core: Any = client.CoreV1Api(k8s_api)
    k8s = K8s(k8s_api)
    faults.create_topic(bootstrap, unique_name, 6, 3, config={"min.insync.replicas": "2"})
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        leader = admin.describe_quorum().leader_id
        assert leader is not None
        first, paused = sorted({0, 1, 2} - {leader})
        before, uids = pids(kafka), pod_uids(core)
        first_uid = uids[f"kafka-{first}"]

        def hang_another(c: CurrentRemediation) -> None:
            if c.step == Step.WAITING_POD_READY and c.current_broker == first and paused not in hung:
                kafka.pause(paused)
                hung.append(paused)

        hung: list[int] = []
        halted = run_roll(
            "halt-1",
            [first, leader],
            k8s=k8s,
            admin=admin,
            pods_spec=PODS,
            namespace=NAMESPACE,
            timeouts=RestartTimeouts(pod_ready="3m", broker_registered="2m", urp_zero="20s"),
            pause=timedelta(seconds=1),
            post_roll_election=False,
            persist=hang_another,
        )
        assert hung == [paused]
        result = halted.result
        assert result.state is RequestState.FAILED, result
        assert result.restart_begun == RestartBegun(broker=first, pod_uid=first_uid)  # typed, not text
        assert result.brokers_done == []
        # Normally WaitingUrpZero; WaitingBrokerRegistered if the quorum was slow to come back.
        assert f"halted at broker {first}, {BEGUN} (Waiting" in (result.message or ""), result
        advice = halt_lines(result, [first, leader])
        assert f"no broker was restarted; broker {first}: {BEGUN} (its pod {first_uid} was deleted)" in advice
        assert f"{leader} was not" in advice
        assert f"--brokers {first},{leader} --restart-begun {first}={first_uid}" in advice
        assert f"broker {first} is not restarted again" in advice
        restarted_once = pids(kafka)[first]
        uid_after_halt = pod_uids(core)[f"kafka-{first}"]
        assert restarted_once != before[first] and uid_after_halt != first_uid  # the restart happened

        # Follow the advice once P is back: A's health is checked, A is not restarted again.
        faults.heal(kafka)
        healthy_pods.wait_pods_ready(timeout=180)
        steps: list[tuple[int | None, str]] = []
        resumed = run_roll(
            "halt-2",
            [first, leader],
            k8s=k8s,
            admin=admin,
            pods_spec=PODS,
            namespace=NAMESPACE,
            timeouts=RestartTimeouts(pod_ready="3m", broker_registered="2m", urp_zero="3m"),
            pause=timedelta(seconds=3),
            post_roll_election=False,
            persist=lambda c: steps.append((c.current_broker, c.step)),
            begun=[result.restart_begun] if result.restart_begun else [],
        )
    assert resumed.ok, resumed.result.message
    assert "healthy again, its restart by an earlier roll confirmed" in resumed.outcomes[0].message
    assert not resumed.outcomes[0].deleted_pod and resumed.outcomes[1].deleted_pod
    assert resumed.result.brokers_done == [first, leader]
    after = pids(kafka)
    assert after[first] == restarted_once and pod_uids(core)[f"kafka-{first}"] == uid_after_halt
    assert after[leader] != before[leader] and after[paused] == before[paused]
    # A: straight to its health check (no CheckingSafety/DeletingPod); the wait between brokers
    # reads WaitingForSafety; Done only after the last.
    assert steps[0] == (first, Step.WAITING_POD_READY)
    assert (first, Step.DELETING_POD) not in steps
    assert (None, Step.WAITING_FOR_SAFETY) in steps
    between = steps.index((None, Step.WAITING_FOR_SAFETY))
    assert steps[between + 1] == (leader, Step.CHECKING_SAFETY)
    assert (leader, Step.DELETING_POD) in steps
    assert steps[-1] == (None, Step.DONE)


# ---------------------------------------------------------------------------------- operator
def test_operator_halt_with_a_broker_in_flight_and_the_new_request_checks_its_health(
    k8s_control_plane: ControlPlane,
    op_ns: str,
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s_api: client.ApiClient,
    tmp_path: Path,
    unique_name: str,
) -> None:
    """Through the operator: the halt's result, history and RollHalted Event name the broker in
    flight, status records it (`restartBegun`), and a new request naming it, as the advice says,
    checks its health without restarting it again."""
    cp, ns = k8s_control_plane, op_ns
    core: Any = client.CoreV1Api(k8s_api)
    faults.create_topic(bootstrap, unique_name, 6, 3, config={"min.insync.replicas": "2"})
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        leader = admin.describe_quorum().leader_id
    assert leader is not None
    first, paused = sorted({0, 1, 2} - {leader})
    first_uid = pod_uids(core)[f"kafka-{first}"]
    before = broker_starts(kafka)
    rolling: dict[str, Any] = {"pauseBetweenBrokers": "0s", "timeouts": {"urpZero": "20s"}}
    body = roll_policy(ns, bootstrap, **rolling, requests=[{"id": "r1", "brokers": [first, leader]}])
    body["spec"]["remediation"]["rateLimits"] = {"rollingRestart": {"cooldown": "0s"}}
    op, ident = chart_operator(cp, tmp_path / "op", ns, extra_namespaces=("kafka",))
    op.start()
    try:
        apply(cp, body)
        wait_status(
            cp,
            ns,
            "roll",
            lambda s: (s.get("currentRemediation") or {}).get("step") == "WaitingPodReady",
            timeout=300,
            what=f"broker {first}'s pod deleted",
        )
        kafka.pause(paused)  # URP never reaches 0 while it hangs
        halted = wait_status(
            cp,
            ns,
            "roll",
            lambda s: result_of(s).get("state") == "Failed",
            timeout=240,
            what="the roll halted",
        )
        faults.heal(kafka)
        healthy_pods.wait_pods_ready(timeout=180)
        result = result_of(halted)
        assert result["restartBegun"] == {"broker": first, "podUid": first_uid}, result
        message = result["message"]
        assert f"halted at broker {first}, {BEGUN} (Waiting" in message, message
        assert f"broker {first}: {BEGUN} (its pod {first_uid} was deleted); {leader} was not" in message
        assert f"brokers: [{first}, {leader}]; broker {first} is not restarted again" in message
        history = [
            h for h in halted["history"] if h["action"] == "RollingRestart" and h["outcome"] == "Failed"
        ]
        assert history and BEGUN in history[-1]["message"], history
        rolled = [e for e in events_of(cp, ns, "roll") if e["reason"] == "RollHalted"]
        assert rolled and f"broker {first}: {BEGUN}" in rolled[0]["message"], rolled
        # Follow the advice: a new request id with the brokers it names.
        body["spec"]["remediation"]["rollingRestart"]["requests"] = [
            {"id": "r1", "brokers": [first, leader]},
            {"id": "r2", "brokers": [first, leader]},
        ]
        apply(cp, body)
        done = wait_status(
            cp,
            ns,
            "roll",
            lambda s: result_of(s, "r2").get("state") in ("Succeeded", "Failed"),
            timeout=300,
            what="the new request done",
        )
        assert result_of(done, "r2")["state"] == "Succeeded", result_of(done, "r2")
        restarted = [e for e in events_of(cp, ns, "roll") if e["reason"] == "BrokerRestarted"]
        assert any("its restart by an earlier roll confirmed" in e["message"] for e in restarted), restarted
    finally:
        stop_operator(cp, ns, op, ident)
    after = broker_starts(kafka)
    # The first broker started once (the halted roll), never again; the leader once (r2).
    assert {b: after[b] - before[b] for b in after} == {first: 1, leader: 1, paused: 0}
