"""Rule 4's `recovering` blocker: never restart while another broker is fenced with its process
running (log recovery or metadata catch-up; Strimzi's rule), seen through `rule_4_recovering`
and the roll's `pods_recovering` (the pods as PodInfo, no Kubernetes)."""

from __future__ import annotations

import pytest

from kafka_health.k8s.client import PodInfo
from kafka_health.models.snapshot import Broker, ClusterSnapshot
from kafka_health.plan.restart_safety import check_restart_safety, rule_4_recovering
from kafka_health.remediate.broker_pods import BrokerPod
from kafka_health.remediate.roll_checks import pods_recovering

from .factories import snapshot


def fenced(snap: ClusterSnapshot, *ids: int) -> ClusterSnapshot:
    """`snap` with brokers `ids` registered but fenced (what KRaft shows while one recovers)."""
    brokers = [
        Broker(id=b.id, host=b.host, port=b.port, alive=False, fenced=True) if b.id in ids else b
        for b in snap.brokers
    ]
    return snap.model_copy(update={"brokers": brokers})


def pod(bid: int, *, running: bool, deleting: bool = False) -> BrokerPod:
    info = PodInfo(
        name=f"kafka-{bid}",
        namespace="ns",
        uid=f"u{bid}",
        labels={},
        ready=False,
        phase="Running",
        deleting=deleting,
        running=running,
    )
    return BrokerPod(broker_id=bid, pod=info)


def test_a_fenced_broker_whose_process_runs_is_recovering() -> None:
    blockers = rule_4_recovering(fenced(snapshot(down=[2]), 2), 1, running={2})
    assert [b.rule for b in blockers] == ["recovering"]
    assert "broker 2 fenced while its process runs" in blockers[0].message


def test_a_fenced_broker_whose_process_is_gone_is_down_not_recovering() -> None:
    assert rule_4_recovering(fenced(snapshot(down=[2]), 2), 1, running=set()) == []


def test_an_alive_broker_with_a_running_process_is_not_recovering() -> None:
    assert rule_4_recovering(snapshot(), 1, running={1, 2, 3}) == []


def test_the_candidate_itself_is_not_its_own_blocker() -> None:
    # Restarting a recovering broker is refused by the others' rules; this rule names the others.
    assert rule_4_recovering(fenced(snapshot(down=[2]), 2), 2, running={2}) == []


def test_unregistered_broker_with_running_process_is_not_called_recovering() -> None:
    # fenced=None (unknown, e.g. known only as a replica): the rule names only what KRaft says.
    assert rule_4_recovering(snapshot(down=[2]), 1, running={2}) == []


def test_several_recovering_brokers_are_listed_in_order() -> None:
    blockers = rule_4_recovering(fenced(snapshot(brokers=[1, 2, 3, 4], down=[4, 2]), 4, 2), 1, running={4, 2})
    assert blockers[0].message.startswith("broker 2, broker 4 fenced")


@pytest.mark.parametrize(
    ("running", "deleting", "refused"),
    [(True, False, True), (False, False, False), (True, True, False)],
)
def test_the_roll_refuses_by_name_while_a_pod_runs_a_fenced_broker(
    running: bool, deleting: bool, refused: bool
) -> None:
    snap = fenced(snapshot(down=[2]), 2)
    safety = check_restart_safety(snap, 1)
    pods = {1: pod(1, running=True), 2: pod(2, running=running, deleting=deleting), 3: pod(3, running=True)}
    result = pods_recovering(safety, snap, pods)
    assert not result.safe  # rule 4 refuses a fenced broker whatever its pod does
    assert ("recovering" in {b.rule for b in result.blockers}) is refused
    if refused:
        assert "recovering" in result.summary()


def test_a_healthy_cluster_with_running_pods_stays_safe() -> None:
    snap = snapshot()
    safety = check_restart_safety(snap, 1, remaining=[1, 2, 3])
    result = pods_recovering(safety, snap, {b: pod(b, running=True) for b in (1, 2, 3)})
    assert result.safe and result is safety
