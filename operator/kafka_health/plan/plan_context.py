"""What the planner reads (`PlanContext`), and the holds every part of it asks for.

Shared by the planner's parts: `candidates` (what could run), `choose` (which one does) and
`in_flight` (the next step of an action already running).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ANNOTATION_ELECT_LEADERS,
    ANNOTATION_ROLLING_RESTART,
    ActionType,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    Mode,
    NeverSafePartitions,
    OffsetResetRequest,
    ReassignmentsInFlight,
    RollingRestartRequest,
    WithheldReason,
)
from kafka_health.models.reasons import BlockerRule
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.cluster_lock import ClusterLock
from kafka_health.plan.decision import PlannedAction
from kafka_health.plan.guardrails import PolicyRef, SafetyLimits, common_holds
from kafka_health.plan.hold import Hold
from kafka_health.plan.reassignment_safety import reassignment_progress
from kafka_health.plan.restart_safety import RestartSafety, check_restart_safety, order_brokers

MAX_DETAILS = 100
SNAPSHOT_HOLDS = (
    WithheldReason.SNAPSHOT_UNREADABLE,
    WithheldReason.SNAPSHOT_STALE,
    WithheldReason.SNAPSHOT_INCOMPLETE,
)


@dataclass(frozen=True)
class PlanContext:
    """Everything the planner may look at. `snapshot` must be read live, just before planning."""

    policy: PolicyRef
    spec: KafkaHealthPolicySpec
    status: KafkaHealthPolicyStatus
    snapshot: ClusterSnapshot | None
    now: datetime
    diagnosis: Diagnosis | None = None
    lock: ClusterLock | None = None
    """The cluster's action lock as read now (the Lease), None when free."""
    replica: str | None = None
    """This operator replica (the lock's holder names it); None: any replica of the policy."""
    offsets_for_times: Mapping[str, Mapping[tuple[str, int], int | None]] = field(default_factory=dict)
    """Per offset-reset request id: ListOffsets results for `timestamp_lookups(ctx)[id]`."""
    limits: SafetyLimits = field(default_factory=SafetyLimits)
    broker_pods_ready: Mapping[int, bool] | None = None
    """Broker id → its pod is Ready and not terminating, read live with `snapshot` (None: not
    read; a roll then relies on the executor's own check before the delete)."""

    def __post_init__(self) -> None:
        if self.now.tzinfo is None:
            raise ValueError("PlanContext.now must be timezone-aware")


@dataclass
class Candidate:
    """One action that could run now, with what holds it back and its plan (when one was made)."""

    action: ActionType
    id: str | None
    holds: list[Hold]
    planned: PlannedAction | None = None
    offset_request: OffsetResetRequest | None = None


def restart_requests(ctx: PlanContext) -> list[RollingRestartRequest]:
    """Rolling restart requests from the spec, then the one named by the annotation (if valid and new)."""
    requests = list(ctx.spec.remediation.rolling_restart.requests or [])
    value = ctx.policy.annotations.get(ANNOTATION_ROLLING_RESTART, "").strip()
    if value and value not in {r.id for r in requests}:
        with contextlib.suppress(ValidationError):  # an invalid id: reported by invalid_annotation_requests
            requests.append(
                RollingRestartRequest(id=value, reason=f"annotation {ANNOTATION_ROLLING_RESTART}")
            )
    return requests


def election_request(ctx: PlanContext) -> str | None:
    """The annotation's election request id, unless already done (in history)."""
    value = ctx.policy.annotations.get(ANNOTATION_ELECT_LEADERS, "").strip()
    if not value:
        return None
    done = any(
        r.action is ActionType.PREFERRED_LEADER_ELECTION and r.id == value for r in ctx.status.history or []
    )
    return None if done else value


def holds_for(
    ctx: PlanContext, action: ActionType, *, group: str | None = None, starting: bool = True
) -> list[Hold]:
    """The common guardrails' holds on `action` now."""
    return common_holds(
        action,
        policy=ctx.policy,
        spec=ctx.spec,
        status=ctx.status,
        snapshot=ctx.snapshot,
        lock=ctx.lock,
        now=ctx.now,
        limits=ctx.limits,
        group=group,
        starting=starting,
        replica=ctx.replica,
    )


def snapshot_usable(holds: list[Hold]) -> bool:
    return not any(h.reason in SNAPSHOT_HOLDS for h in holds)


def observing(ctx: PlanContext) -> bool:
    return ctx.spec.remediation.mode is Mode.OBSERVE


def refuses_never_safe(ctx: PlanContext) -> bool:
    return ctx.spec.remediation.rolling_restart.never_safe_partitions is NeverSafePartitions.REFUSE


def refuses_reassignments(ctx: PlanContext) -> bool:
    return ctx.spec.remediation.rolling_restart.reassignments_in_flight is ReassignmentsInFlight.REFUSE


def next_broker_safety(
    ctx: PlanContext, snapshot: ClusterSnapshot, brokers: list[int], holds: list[Hold]
) -> tuple[list[int], RestartSafety]:
    """The restart order of `brokers` and whether its first may restart now (a hold when not),
    alike for a new roll and for the next broker of one in flight."""
    order = order_brokers(snapshot, brokers)
    safety = check_restart_safety(
        snapshot,
        order[0],
        remaining=order,
        max_voter_lag=ctx.limits.max_voter_lag,
        max_voter_lag_ms=ctx.limits.max_voter_lag_ms,
        refuse_never_safe=refuses_never_safe(ctx),
    )
    pods = _pods_hold(ctx)
    if pods is not None:
        holds.append(pods)
    # A reassignment in flight is its own hold (its own reason and timeout), the other rules one.
    moving = [b for b in safety.blockers if b.rule is BlockerRule.REASSIGNMENT]
    others = [b for b in safety.blockers if b.rule is not BlockerRule.REASSIGNMENT]
    if moving:
        holds.append(
            Hold(
                WithheldReason.REASSIGNMENT_IN_PROGRESS,
                f"broker {safety.broker}: {moving[0].message}{reassignment_progress(ctx.diagnosis)}",
            )
        )
    if others:
        holds.append(
            Hold(WithheldReason.UNSAFE_TO_RESTART, safety.model_copy(update={"blockers": others}).summary())
        )
    return order, safety


def _pods_hold(ctx: PlanContext) -> Hold | None:
    """One broker at a time, seen from Kubernetes: every broker pod Ready and not terminating."""
    if ctx.broker_pods_ready is None:
        return None
    busy = sorted(b for b, ready in ctx.broker_pods_ready.items() if not ready)
    if not busy:
        return None
    return Hold(
        WithheldReason.BROKER_NOT_READY,
        f"the pod(s) of broker(s) {', '.join(map(str, busy))} not Ready or terminating: one broker at a time",
    )
