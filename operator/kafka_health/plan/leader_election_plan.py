"""Preferred leader election: which partitions to elect, in which batches, and when it is needed.

A partition is elected only when its preferred replica (the first of its replica list) is
alive, in the ISR, and not already the leader — exactly the partitions for which Kafka's
`kafka-leader-election --election-type PREFERRED --all-topic-partitions` would succeed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.snapshot import ClusterSnapshot, Partition


class TopicPartition(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class ElectionPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partitions: list[TopicPartition] = Field(description="To elect, sorted by topic and partition.")
    batches: list[list[TopicPartition]] = Field(description="`partitions` cut into ElectLeaders requests.")
    not_electable: dict[str, int] = Field(
        default_factory=dict,
        description="Partitions off their preferred leader that cannot be elected, counted by reason: "
        "preferred_not_alive, preferred_not_in_isr.",
    )
    brokers: list[int] | None = Field(
        None, description="Only partitions preferring these brokers (post-roll)."
    )

    @property
    def empty(self) -> bool:
        return not self.partitions


def electable(partition: Partition, alive: Collection[int]) -> bool:
    """Preferred replica alive, in the ISR, and not the leader."""
    preferred = partition.preferred_leader
    return (
        preferred is not None
        and preferred in alive
        and preferred in partition.isr
        and partition.leader != preferred
    )


def plan_preferred_election(
    snapshot: ClusterSnapshot, *, batch_size: int, brokers: Collection[int] | None = None
) -> ElectionPlan:
    """The election plan on `snapshot`; with `brokers`, only partitions whose preferred leader is one of them."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    alive = {b.id for b in snapshot.brokers if b.alive}
    chosen: list[TopicPartition] = []
    not_electable: dict[str, int] = defaultdict(int)
    for p in snapshot.partitions:
        preferred = p.preferred_leader
        if preferred is None or p.leader == preferred:
            continue
        if brokers is not None and preferred not in brokers:
            continue
        if electable(p, alive):
            chosen.append(TopicPartition(topic=p.topic, partition=p.partition))
        elif preferred not in alive:
            not_electable["preferred_not_alive"] += 1
        else:
            not_electable["preferred_not_in_isr"] += 1
    chosen.sort(key=lambda tp: (tp.topic, tp.partition))
    batches = [chosen[i : i + batch_size] for i in range(0, len(chosen), batch_size)]
    return ElectionPlan(
        partitions=chosen,
        batches=batches,
        not_electable=dict(not_electable),
        brokers=sorted(brokers) if brokers is not None else None,
    )


def leader_imbalance(snapshot: ClusterSnapshot) -> dict[int, float]:
    """Per alive broker: % of the partitions it is preferred leader of that another broker leads
    (Kafka's leader.imbalance.per.broker.percentage measure)."""
    alive = {b.id for b in snapshot.brokers if b.alive}
    preferred_total: dict[int, int] = defaultdict(int)
    not_led: dict[int, int] = defaultdict(int)
    for p in snapshot.partitions:
        preferred = p.preferred_leader
        if preferred is None or preferred not in alive:
            continue
        preferred_total[preferred] += 1
        if p.leader != preferred:
            not_led[preferred] += 1
    return {b: 100.0 * not_led[b] / total for b, total in sorted(preferred_total.items())}


def imbalance_exceeds(snapshot: ClusterSnapshot, threshold_percent: float) -> tuple[bool, int | None, float]:
    """(any broker strictly over the threshold, the worst broker, its %)."""
    ratios = leader_imbalance(snapshot)
    if not ratios:
        return False, None, 0.0
    worst = max(ratios, key=lambda b: (ratios[b], -b))
    return ratios[worst] > threshold_percent, worst, ratios[worst]
