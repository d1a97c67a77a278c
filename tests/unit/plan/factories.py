"""Small builders for snapshots, specs and status used by the planner tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
)
from kafka_health.models.snapshot import (
    Broker,
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    Missing,
    Partition,
    PartitionOffsets,
    Quorum,
    QuorumVoter,
    TopicConfig,
)
from kafka_health.plan.guardrails import PolicyRef
from kafka_health.plan.planner import PlanContext

NOW = datetime(2024, 6, 3, 2, 30, tzinfo=UTC)  # a Monday, 02:30 UTC
BROKERS = (1, 2, 3)
CONTROLLER = 3


def partition(
    topic: str, p: int, replicas: Sequence[int], isr: Sequence[int] | None = None, leader: int | None = -1
) -> Partition:
    """leader=-1 (default): the preferred replica leads; None: offline."""
    return Partition(
        topic=topic,
        partition=p,
        leader=replicas[0] if leader == -1 else leader,
        replicas=list(replicas),
        isr=list(replicas if isr is None else isr),
    )


def balanced(
    topic: str = "orders", count: int = 6, brokers: Sequence[int] = BROKERS, rf: int = 3
) -> list[Partition]:
    """`count` partitions, replicas rotating over `brokers`, every preferred replica leading."""
    n = len(brokers)
    return [partition(topic, i, [brokers[(i + k) % n] for k in range(rf)]) for i in range(count)]


def snapshot(
    partitions: Iterable[Partition] | None = None,
    *,
    brokers: Sequence[int] = BROKERS,
    down: Iterable[int] = (),
    min_isr: dict[str, int | None] | None = None,
    controller: int | None = CONTROLLER,
    voters: Sequence[int] | None = None,
    voter_lag: dict[int, int | None] | None = None,
    quorum: bool = True,
    taken_at: datetime = NOW,
    missing: Iterable[tuple[str, str]] = (),
    groups: Iterable[ConsumerGroup] = (),
    offsets: Iterable[PartitionOffsets] | None = None,
    cluster_id: str | None = "kafka-cluster-1",
) -> ClusterSnapshot:
    parts = list(balanced() if partitions is None else partitions)
    topics = sorted({p.topic for p in parts})
    configs = min_isr if min_isr is not None else {t: 2 for t in topics}
    down_set = set(down)
    lag = voter_lag or {}
    q = None
    if quorum:
        q = Quorum(
            leader_id=controller,
            voters=[QuorumVoter(id=v, lag=lag.get(v, 0)) for v in (brokers if voters is None else voters)],
        )
    return ClusterSnapshot(
        cluster="test",
        cluster_id=cluster_id,
        taken_at=taken_at,
        brokers=[Broker(id=b, host="127.0.0.1", port=9092 + b, alive=b not in down_set) for b in brokers],
        quorum=q,
        partitions=parts,
        topic_configs=[TopicConfig(topic=t, min_insync_replicas=m) for t, m in configs.items()],
        offsets=list(offsets)
        if offsets is not None
        else [
            PartitionOffsets(topic=p.topic, partition=p.partition, log_start_offset=100, log_end_offset=1000)
            for p in parts
        ],
        groups=list(groups),
        missing=[Missing(part=part, reason=reason) for part, reason in missing],
    )


def group(
    group_id: str = "billing",
    state: str = "Empty",
    members: int = 0,
    committed: dict[tuple[str, int], int | None] | None = None,
) -> ConsumerGroup:
    return ConsumerGroup(
        group_id=group_id,
        state=state,
        members=members,
        offsets=[
            GroupOffset(topic=t, partition=p, committed_offset=o) for (t, p), o in (committed or {}).items()
        ],
    )


def spec(**remediation: Any) -> KafkaHealthPolicySpec:
    """A valid spec with broker pods and `remediation` (camelCase keys) on top of the defaults."""
    return KafkaHealthPolicySpec.model_validate(
        {
            "cluster": {"bootstrapServers": ["k:9092"], "brokerPods": {"statefulSet": "kafka"}},
            "remediation": remediation,
        }
    )


def record(
    action: ActionType = ActionType.PREFERRED_LEADER_ELECTION,
    *,
    started: datetime,
    minutes: float = 1,
    outcome: ActionOutcome = ActionOutcome.SUCCEEDED,
    plan_id: str = "p",
    generation: int = 1,
    breaker_reset: str | None = None,
    id: str | None = None,
) -> ActionRecord:
    return ActionRecord(
        action=action,
        id=id,
        plan_id=plan_id,
        outcome=outcome,
        started_at=started,
        finished_at=None if outcome is ActionOutcome.RUNNING else started + timedelta(minutes=minutes),
        generation=generation,
        breaker_reset=breaker_reset,
    )


def context(
    policy_spec: KafkaHealthPolicySpec,
    snap: ClusterSnapshot | None = None,
    *,
    status: KafkaHealthPolicyStatus | dict[str, Any] | None = None,
    now: datetime = NOW,
    annotations: dict[str, str] | None = None,
    generation: int = 1,
    **kwargs: Any,
) -> PlanContext:
    st = (
        status
        if isinstance(status, KafkaHealthPolicyStatus)
        else KafkaHealthPolicyStatus.model_validate(status or {})
    )
    return PlanContext(
        policy=PolicyRef(
            namespace="kafka", name="main", generation=generation, annotations=annotations or {}
        ),
        spec=policy_spec,
        status=st,
        snapshot=snapshot() if snap is None else snap,
        now=now,
        **kwargs,
    )
