"""A cluster with something wrong in every check family, plus the history that shows it."""

from __future__ import annotations

from pathlib import Path

from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup, LogDir
from tests.spark.builders import (
    at,
    balanced_topic,
    brokers,
    config,
    end_offsets,
    group,
    part,
    quorum,
    record,
    snapshot,
)

GIB = 1024**3


def troubled_cluster(history: Path) -> ClusterSnapshot:
    """Broker 3 down, broker 1 flapping, a stalled and a rebalancing group, a filling disk,
    weak topic settings; `history` gets 6 earlier snapshots. Returns the snapshot to diagnose."""

    def state(minute: float, i: int) -> ClusterSnapshot:
        flapping = i % 2 == 1
        parts = []
        for p in balanced_topic("orders", 12):
            isr = [r for r in p.replicas if not (flapping and r == 1)]
            leader = p.leader if p.leader in isr else isr[0]
            parts.append(part("orders", p.partition, leader, p.replicas, isr))
        parts += [
            part("payments", 0, 0, [0, 3], [0]),
            part("payments", 1, None, [3], [3]),
            part("audit", 0, 2, [2]),
        ]
        ends = {("orders", p): 1000 + 100 * i for p in range(12)}
        members = [f"m{i % 3}", "stable"] if i % 2 else ["m0", "stable"]
        return snapshot(
            partitions=parts,
            configs=[config("orders"), config("payments", 1, unclean=True), config("audit", 2)],
            broker_list=brokers(0, 1, 2, dead=(3,)),
            offsets=end_offsets(ends, start=200),
            groups=[
                group("billing", {("orders", p): 900 for p in range(12)}),
                group("archiver", {("orders", 0): 100}, state="Empty"),
                ConsumerGroup(
                    group_id="flaky",
                    state="PreparingRebalance" if i % 3 == 0 else "Stable",
                    members=len(members),
                    member_ids=members,
                ),
            ],
            log_dirs=[
                LogDir(
                    broker_id=b, path=f"/data/{b}", used_bytes=(50 + 2 * i + b) * GIB, total_bytes=100 * GIB
                )
                for b in range(3)
            ],
            quorum_state=quorum(leader=0, lags={0: 0, 1: 0, 2: 4000}),
            taken_at=at(minute),
        )

    minutes = [-25, -20, -15, -10, -5]
    record(history, [state(m, i) for i, m in enumerate(minutes)])
    return state(0, len(minutes))
