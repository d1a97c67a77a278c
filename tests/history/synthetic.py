"""Small synthetic snapshots for the history's unit tests."""

from __future__ import annotations

from datetime import UTC, datetime

from kafka_health.models.snapshot import (
    Broker,
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    LogDir,
    Missing,
    Partition,
    PartitionOffsets,
    ReplicaLag,
)

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)

# (topic, partition) → (leader, replicas, isr)
State = dict[tuple[str, int], tuple[int | None, list[int], list[int]]]


def healthy(topics: dict[str, int] | None = None) -> State:
    """RF 3 over brokers 0..2, preferred leaders rotating, full ISR."""
    state: State = {}
    for topic, count in (topics or {"orders": 3, "payments": 2}).items():
        for p in range(count):
            replicas = [(p + i) % 3 for i in range(3)]
            state[(topic, p)] = (replicas[0], replicas, list(replicas))
    return state


def snapshot(
    ts: datetime,
    state: State | None = None,
    *,
    cluster: str = "prod",
    missing: list[Missing] | None = None,
    alive: tuple[int, ...] = (0, 1, 2),
) -> ClusterSnapshot:
    state = healthy() if state is None else state
    unreachable = any(m.part == "metadata" for m in missing or [])
    return ClusterSnapshot(
        cluster=cluster,
        taken_at=ts,
        brokers=[]
        if unreachable
        else [Broker(id=b, host="10.0.0.1", port=9092 + b, alive=b in alive) for b in range(3)],
        partitions=[]
        if unreachable
        else [
            Partition(topic=t, partition=p, leader=leader, replicas=replicas, isr=isr)
            for (t, p), (leader, replicas, isr) in sorted(state.items())
        ],
        replica_lags=[]
        if unreachable
        else [
            ReplicaLag(topic=t, partition=p, broker=b, size_bytes=900, leader_size_bytes=1000)
            for (t, p), (_, replicas, isr) in sorted(state.items())
            for b in replicas
            if b not in isr
        ],
        offsets=[]
        if unreachable
        else [
            PartitionOffsets(topic=t, partition=p, log_start_offset=0, log_end_offset=100 + p)
            for (t, p) in sorted(state)
        ],
        groups=[]
        if unreachable
        else [
            ConsumerGroup(
                group_id="billing",
                state="Stable",
                members=2,
                member_ids=["m-2", "m-1"],
                offsets=[
                    GroupOffset(topic="orders", partition=0, committed_offset=90),
                    GroupOffset(topic="orders", partition=1, committed_offset=None),
                ],
            )
        ],
        log_dirs=[]
        if unreachable
        else [
            LogDir(broker_id=0, path="/d1", used_bytes=100, total_bytes=1000),
            LogDir(broker_id=0, path="/d2", used_bytes=50, total_bytes=1000),
            LogDir(broker_id=1, path="/d1", used_bytes=70, total_bytes=None),
        ],
        missing=missing or [],
    )
