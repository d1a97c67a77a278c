"""Typed remediation state and the Lease's typed holder fields (pure: no server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from kafka_health.controller.cluster_lease import A_POLICY, A_REPLICA, to_lease, to_lock
from kafka_health.models.policy import ActionType, CurrentRemediation, RemediationStep, parse_status
from kafka_health.plan.cluster_lock import ClusterLock, lock_name
from kafka_health.remediate.rolling_restart import Step, pod_uid_of

NOW = datetime(2026, 11, 23, 7, 0, tzinfo=UTC)


def roll(**fields: object) -> dict[str, object]:
    return {
        "action": "RollingRestart",
        "id": "r1",
        "planId": "roll-r1",
        "startedAt": NOW.isoformat(),
        "currentBroker": 2,
        **fields,
    }


def test_step_is_one_enum_for_every_executor() -> None:
    assert Step is RemediationStep
    for value in ("WaitingPodReady", "Electing", "ResettingOffsets", "WaitingForSafety"):
        assert CurrentRemediation.model_validate(roll(step=value)).step is RemediationStep(value)
    with pytest.raises(ValidationError):
        CurrentRemediation.model_validate(roll(step="SomethingElse"))


def test_old_persisted_status_is_migrated_once_when_read() -> None:
    """The only reading of a message: a roll persisted before podUid existed; nothing else."""
    old = parse_status(
        {
            "currentRemediation": roll(
                step="WaitingSafe", message="broker 2: deleting pod kafka-2 podUid=1f2e-3d"
            )
        }
    )
    current = old.current_remediation
    assert current is not None
    assert current.step is RemediationStep.WAITING_FOR_SAFETY
    assert current.pod_uid == "1f2e-3d" and pod_uid_of(current) == "1f2e-3d"
    # A typed podUid wins; a message mentioning another uid is never read.
    typed = CurrentRemediation.model_validate(
        roll(step="WaitingPodReady", podUid="aa-1", message="podUid=bb-2")
    )
    assert typed.pod_uid == "aa-1"
    assert CurrentRemediation.model_validate(roll(step="WaitingPodReady", message="no uid")).pod_uid is None


def test_step_deadline_round_trips_in_status() -> None:
    deadline = NOW + timedelta(minutes=10)
    status = parse_status(
        {"currentRemediation": roll(step="WaitingPodReady", stepDeadline=deadline.isoformat())}
    )
    assert status.current_remediation is not None and status.current_remediation.step_deadline == deadline


def test_lease_holder_fields_round_trip() -> None:
    lock = ClusterLock(
        cluster="id:abc",
        holder="kafka/main",
        replica="operator-7d9-x2",
        action=ActionType.OFFSET_RESET,
        id="rewind",
        plan_id="reset-1",
        acquired_at=NOW,
        renewed_at=NOW + timedelta(seconds=10),
        ttl_seconds=30,
    )
    lease = to_lease(lock, "ops", transitions=2, resource_version="42")
    assert lease.name == lock_name("id:abc") and lease.namespace == "ops"
    assert lease.holder_identity == "operator-7d9-x2/kafka/main/OffsetReset"
    assert lease.annotations[A_POLICY] == "kafka/main" and lease.annotations[A_REPLICA] == "operator-7d9-x2"
    assert to_lock(lease) == lock
    handed_over = to_lease(
        lock.model_copy(update={"replica": None}), "ops", transitions=2, resource_version="43"
    )
    assert A_REPLICA not in handed_over.annotations and handed_over.holder_identity.startswith("-/")
    back = to_lock(handed_over)
    assert back is not None and back.replica is None
    # A Lease with no holder (or not ours: no typed fields) holds no lock.
    assert (
        to_lock(lease.__class__(name="x", namespace="ops", holder_identity=None, lease_duration_seconds=30))
        is None
    )
