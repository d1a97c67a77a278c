"""Preferred leader election: exactly the partitions whose preferred replica is alive, in the ISR and not leading."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.snapshot import Partition
from kafka_health.plan.leader_election_plan import (
    TopicPartition,
    imbalance_exceeds,
    leader_imbalance,
    plan_preferred_election,
)

from .factories import balanced, partition, snapshot


def names(plan_partitions: list[TopicPartition]) -> list[str]:
    return [str(tp) for tp in plan_partitions]


def test_balanced_cluster_needs_no_election() -> None:
    plan = plan_preferred_election(snapshot(), batch_size=10)
    assert plan.empty and plan.batches == []
    assert leader_imbalance(snapshot()) == {1: 0.0, 2: 0.0, 3: 0.0}


def test_elects_only_partitions_whose_preferred_replica_is_alive_in_isr_and_not_leader() -> None:
    parts = [
        partition("t", 0, [1, 2, 3], leader=2),  # electable
        partition("t", 1, [1, 2, 3], isr=[2, 3], leader=2),  # preferred 1 not in ISR
        partition("t", 2, [2, 3, 1], leader=2),  # already led by preferred
        partition("t", 3, [3, 1, 2], leader=1),  # preferred 3 is down
        partition("a", 0, [1, 3], leader=3),  # electable, sorts first
    ]
    plan = plan_preferred_election(snapshot(parts, down=[3]), batch_size=10)
    assert names(plan.partitions) == ["a-0", "t-0"]
    assert plan.not_electable == {"preferred_not_in_isr": 1, "preferred_not_alive": 1}


def test_batches_cut_the_sorted_partitions() -> None:
    parts = [partition("t", i, [1, 2, 3], leader=2) for i in range(5)]
    plan = plan_preferred_election(snapshot(parts), batch_size=2)
    assert [names(b) for b in plan.batches] == [["t-0", "t-1"], ["t-2", "t-3"], ["t-4"]]


def test_post_roll_election_is_limited_to_the_restarted_brokers() -> None:
    parts = [partition("t", 0, [1, 2, 3], leader=2), partition("t", 1, [2, 1, 3], leader=1)]
    plan = plan_preferred_election(snapshot(parts), batch_size=10, brokers=[2])
    assert names(plan.partitions) == ["t-1"] and plan.brokers == [2]


def test_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        plan_preferred_election(snapshot(), batch_size=0)


def test_imbalance_per_broker_and_threshold_is_strict() -> None:
    # Broker 1 prefers 4 partitions, 1 led elsewhere: 25 %.
    parts = [partition("t", 0, [1, 2, 3], leader=2), *[partition("t", i, [1, 2, 3]) for i in range(1, 4)]]
    snap = snapshot(parts)
    assert leader_imbalance(snap) == {1: 25.0}
    assert imbalance_exceeds(snap, 20) == (True, 1, 25.0)
    assert imbalance_exceeds(snap, 25)[0] is False


def test_dead_preferred_brokers_do_not_count_towards_imbalance() -> None:
    parts = [partition("t", 0, [1, 2, 3], isr=[2, 3], leader=2)]
    assert leader_imbalance(snapshot(parts, down=[1])) == {}
    assert imbalance_exceeds(snapshot(parts, down=[1]), 0) == (False, None, 0.0)


@st.composite
def partitions(draw: st.DrawFn) -> list[Partition]:
    out = []
    for i in range(draw(st.integers(0, 12))):
        replicas = draw(st.permutations([1, 2, 3]))[: draw(st.integers(1, 3))]
        isr = [b for b in replicas if draw(st.booleans())]
        leader = draw(st.sampled_from([*isr, None])) if isr else None
        out.append(partition("t", i, replicas, isr=isr, leader=leader))
    return out


@settings(max_examples=200, deadline=None)
@given(partitions(), st.sets(st.sampled_from([1, 2, 3])), st.integers(1, 5))
def test_plan_matches_the_rule(parts: list[Partition], down: set[int], batch_size: int) -> None:
    plan = plan_preferred_election(snapshot(parts, down=down), batch_size=batch_size)
    expected = [
        f"t-{p.partition}"
        for p in parts
        if p.replicas[0] not in down and p.replicas[0] in p.isr and p.leader != p.replicas[0]
    ]
    assert names(plan.partitions) == expected
    assert [tp for batch in plan.batches for tp in batch] == plan.partitions
    assert all(1 <= len(batch) <= batch_size for batch in plan.batches)


def test_balanced_helper_is_balanced() -> None:
    assert plan_preferred_election(snapshot(balanced(count=9)), batch_size=3).empty
