"""After a roll: preferred leader election for the restarted brokers (docs/remediation-rolling-restart.md, "The whole roll").

Only partitions whose preferred replica is one of the restarted brokers, alive and in the ISR
(`plan_preferred_election(..., brokers=...)` on a live snapshot), in batches, carried out by the
leader-election executor (`execute_election`: live re-check before each batch, one bounded
ElectLeaders call per batch through `KafkaAdmin.elect_preferred`, an outcome per partition).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import UTC, datetime

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.plan.leader_election_plan import plan_preferred_election
from kafka_health.remediate.leader_election import ElectionOutcome, execute_election


def elect_preferred_for(
    admin: KafkaAdmin,
    brokers: Collection[int],
    *,
    batch_size: int = 100,
    cluster_name: str = "kafka",
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    guard: Callable[[], None] = lambda: None,
) -> ElectionOutcome:
    """Elect preferred leaders for the partitions preferring one of `brokers` (live plan, then the calls)."""
    snapshot = collect_snapshot(admin, cluster_name, clock)
    plan = plan_preferred_election(snapshot, batch_size=batch_size, brokers=set(brokers))
    return execute_election(admin, plan, guard=guard)
