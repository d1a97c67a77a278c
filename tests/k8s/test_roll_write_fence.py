"""A roll driver's status writes are fenced on the status itself, on the real kube-apiserver.

The Lease check and the status write are two calls. A replica frozen between them (the hand-over
test's SIGSTOP once landed there) woke up holding a Lease check it had passed, and laid its old
progress over the new holder's: the next turn resumed a broker already done and reported its
restart twice. The fence: a roll write goes through only while the stored currentRemediation is
the one this driver last read or wrote.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
from kubernetes import client

from kafka_health.controller.cluster_lease import ClusterLease, LeaseLost
from kafka_health.controller.roll_driver import RollDriver, RollHost
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import (
    ActionType,
    CurrentRemediation,
    KafkaHealthPolicyStatus,
    RemediationStep,
    parse_status,
)
from kafka_health.report.status import status_patch
from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import bare_policy, kubectl

pytestmark = pytest.mark.k8s

T0 = datetime(2026, 11, 29, 16, 0, 0, 123456, tzinfo=UTC)


@dataclass
class _Runtime:
    k8s: K8s


@dataclass
class _Host:
    """What the driver's status writes use of its worker."""

    runtime: _Runtime
    namespace: str
    name: str
    status_lock: threading.RLock = field(default_factory=threading.RLock)


class _HeldLease:
    """A Lease check that passes: the write fence alone is under test here."""

    held = True

    def ensure(self, *, fresh: bool = True) -> None:
        return None


def _roll(step: RemediationStep, broker: int | None, done: list[int]) -> CurrentRemediation:
    return CurrentRemediation(
        action=ActionType.ROLLING_RESTART,
        id="r1",
        plan_id="roll-r1",
        step=step,
        started_at=T0,
        step_started_at=T0 + timedelta(seconds=len(done) * 30 + 0.5),
        step_deadline=T0 + timedelta(minutes=10, microseconds=7),
        brokers_planned=[0, 2, 1],
        brokers_done=done,
        current_broker=broker,
        pod_uid="uid-2" if broker is not None else None,
        last_broker_finished_at=T0 + timedelta(seconds=29.25) if done else None,
    )


def _driver(k8s: K8s, ns: str) -> RollDriver:
    driver = RollDriver(cast(RollHost, _Host(_Runtime(k8s), ns, "roll")), on_event=lambda *a: None)
    driver.lease = cast(ClusterLease, _HeldLease())
    return driver


def test_a_write_over_another_replicas_progress_is_refused(
    k8s_control_plane: ControlPlane, k8s_api: client.ApiClient, crds: None
) -> None:
    cp = k8s_control_plane
    ns = bare_policy(cp, "fence", "roll")
    k8s = K8s(k8s_api)
    mid_broker = KafkaHealthPolicyStatus(current_remediation=_roll(RemediationStep.WAITING_POD_READY, 2, [0]))
    k8s.patch_policy_status(ns, "roll", status_patch(mid_broker))
    try:
        frozen, holder = _driver(k8s, ns), _driver(k8s, ns)
        assert frozen.read() is not None  # the replica that will be frozen reads broker 2 in flight

        # Its own writes pass the fence, one after another (the stored form equals what it wrote:
        # microseconds and all), so a roll is never stopped by its own progress.
        frozen.persist(mid_broker)
        waiting_urp = _roll(RemediationStep.WAITING_URP_ZERO, 2, [0])
        frozen.persist(KafkaHealthPolicyStatus(current_remediation=waiting_urp))

        # The new holder takes over from status and finishes broker 2.
        holder.read()
        broker_2_done = _roll(RemediationStep.WAITING_FOR_SAFETY, None, [0, 2])
        holder.persist(KafkaHealthPolicyStatus(current_remediation=broker_2_done))

        # The frozen replica wakes up past its Lease check: its write is refused, status unchanged.
        with pytest.raises(LeaseLost, match="another replica wrote roll progress"):
            frozen.persist(KafkaHealthPolicyStatus(current_remediation=waiting_urp))
        stored = k8s.read_policy(ns, "roll")
        assert stored is not None
        assert parse_status(stored.get("status")).current_remediation == broker_2_done

        # The holder goes on writing.
        next_broker = _roll(RemediationStep.DELETING_POD, 1, [0, 2])
        holder.persist(KafkaHealthPolicyStatus(current_remediation=next_broker))
        stored = k8s.read_policy(ns, "roll")
        assert stored is not None
        assert parse_status(stored.get("status")).current_remediation == next_broker
    finally:
        kubectl(cp, "delete", "namespace", ns, "--wait=false")
