"""The leadership drain's rule (plan/leadership_drain.py), case by case and against a simulated Kafka.

The simulation applies a plan as Kafka does: a reorder replaces the replica list (same set), a
preferred election makes the first replica leader when it is in the ISR."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.snapshot import ClusterSnapshot, Partition
from kafka_health.plan.leadership_drain import (
    Key,
    demoted_order,
    drain_plan,
    listed,
    restore_plan,
    restored,
    still_leads,
)

from .factories import balanced, partition, snapshot


def apply(snap: ClusterSnapshot, orders: dict[Key, list[int]], elect: list[Key]) -> ClusterSnapshot:
    """What Kafka does with a reorder then a preferred election."""
    out: list[Partition] = []
    for p in snap.partitions:
        key = (p.topic, p.partition)
        replicas = orders.get(key, p.replicas)
        assert sorted(replicas) == sorted(p.replicas), "a reorder never changes the replica set"
        leader = replicas[0] if key in elect and replicas[0] in p.isr else p.leader
        out.append(p.model_copy(update={"replicas": list(replicas), "leader": leader}))
    return snap.model_copy(update={"partitions": out})


def test_the_demoted_order_puts_the_broker_last_and_an_in_sync_replica_first() -> None:
    assert demoted_order([1, 2, 3], [1, 2, 3], 1) == [2, 3, 1]
    assert demoted_order([1, 2, 3], [1, 3], 1) == [3, 2, 1]  # 2 is out of sync: not preferred
    assert demoted_order([2, 1, 3], [1, 2, 3], 1) == [2, 3, 1]


def test_a_balanced_topic_drains_to_nothing_and_restores_to_its_orders() -> None:
    snap = snapshot(balanced())  # 6 partitions over brokers 1, 2, 3: broker 1 leads 2 of them
    plan = drain_plan(snap, 1)
    assert plan.elect == [("orders", 0), ("orders", 3)]
    assert set(plan.reorder) == {("orders", 0), ("orders", 3)} == set(plan.original)
    assert plan.original[("orders", 0)] == [1, 2, 3] and plan.reorder[("orders", 0)] == [2, 3, 1]
    assert plan.stuck == []
    drained = apply(snap, plan.reorder, plan.elect)
    assert still_leads(drained, 1) == []
    back = restore_plan(drained, 1, plan.original)
    assert back.reorder == plan.original and back.elect == [("orders", 0), ("orders", 3)]
    assert restored(drained, back) == [("orders", 0), ("orders", 3)]
    again = apply(drained, back.reorder, back.elect)
    assert [p.replicas for p in again.partitions] == [p.replicas for p in snap.partitions]
    assert [p.leader for p in again.partitions] == [p.leader for p in snap.partitions]
    assert restored(again, back) == []


def test_a_partition_led_by_another_broker_is_reordered_but_not_elected() -> None:
    snap = snapshot([partition("t", 0, [1, 2, 3], leader=2)])
    plan = drain_plan(snap, 1)
    assert plan.reorder == {("t", 0): [2, 3, 1]} and plan.elect == []


def test_the_broker_leading_a_partition_it_does_not_prefer_is_elected_without_a_reorder() -> None:
    snap = snapshot([partition("t", 0, [2, 1, 3], leader=1)])
    plan = drain_plan(snap, 1)
    assert plan.reorder == {} and plan.original == {} and plan.elect == [("t", 0)]
    assert still_leads(apply(snap, plan.reorder, plan.elect), 1) == []


def test_a_preferred_replica_out_of_sync_is_moved_behind_the_in_sync_ones() -> None:
    snap = snapshot([partition("t", 0, [2, 1, 3], isr=[1, 3], leader=1)], min_isr={"t": 1})
    plan = drain_plan(snap, 1)
    assert plan.reorder == {("t", 0): [3, 2, 1]} and plan.original == {("t", 0): [2, 1, 3]}
    assert still_leads(apply(snap, plan.reorder, plan.elect), 1) == []


def test_a_partition_with_no_other_replica_in_sync_cannot_move() -> None:
    snap = snapshot([partition("t", 0, [1, 2, 3], isr=[1]), partition("u", 0, [1])], min_isr={"t": 1, "u": 1})
    plan = drain_plan(snap, 1)
    assert plan.stuck == [("t", 0), ("u", 0)] and plan.empty
    assert still_leads(snap, 1, plan.stuck) == []
    assert still_leads(snap, 1) == [("t", 0), ("u", 0)]


def test_a_broker_holding_no_replica_has_nothing_to_drain() -> None:
    assert drain_plan(snapshot(balanced()), 9).empty


def test_a_resumed_drain_starts_from_the_orders_it_kept() -> None:
    """Killed after the reorder, before the election: the live order is already demoted, the
    original is the one persisted, and the resumed drain keeps that one, not the live one."""
    snap = snapshot(balanced())
    first = drain_plan(snap, 1)
    half = apply(snap, first.reorder, [])  # reordered, not yet elected
    resumed = drain_plan(half, 1, first.original)
    assert resumed.original == first.original
    assert resumed.reorder == {}  # already in the demoted order
    assert resumed.elect == first.elect
    done = apply(half, resumed.reorder, resumed.elect)
    back = restore_plan(done, 1, resumed.original)
    final = apply(done, back.reorder, back.elect)
    assert [p.replicas for p in final.partitions] == [p.replicas for p in snap.partitions]


def test_a_partition_reassigned_meanwhile_or_deleted_is_left_alone() -> None:
    kept = {("t", 0): [1, 2, 3], ("gone", 0): [1, 2, 3], ("same", 0): [1, 2, 3]}
    snap = snapshot(
        [partition("t", 0, [2, 3, 4], leader=2), partition("same", 0, [2, 3, 1], leader=2)],
        brokers=(1, 2, 3, 4),
    )
    back = restore_plan(snap, 1, kept)
    assert back.changed == [("t", 0)] and back.gone == [("gone", 0)]
    assert back.reorder == {("same", 0): [1, 2, 3]} and back.elect == [("same", 0)]


def test_no_election_back_while_the_broker_is_out_of_sync() -> None:
    snap = snapshot([partition("t", 0, [2, 3, 1], isr=[2, 3], leader=2)])
    back = restore_plan(snap, 1, {("t", 0): [1, 2, 3]})
    assert back.reorder == {("t", 0): [1, 2, 3]} and back.elect == []


def test_listed_caps_the_names() -> None:
    keys = [("t", i) for i in range(7)]
    assert listed(keys) == "t-0, t-1, t-2, t-3, t-4 (+2 more)"
    assert listed(keys[:2]) == "t-0, t-1"


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    brokers = list(range(1, draw(st.integers(2, 5)) + 1))
    parts = []
    for i in range(draw(st.integers(1, 12))):
        rf = draw(st.integers(1, len(brokers)))
        replicas = draw(st.permutations(brokers))[:rf]
        isr = [r for r in replicas if draw(st.booleans())] or [replicas[0]]
        leader = draw(st.sampled_from(isr))
        parts.append(partition("t", i, replicas, isr=isr, leader=leader))
    return snapshot(parts, brokers=tuple(brokers), min_isr={"t": 1})


@settings(max_examples=300, deadline=None)
@given(clusters(), st.integers(1, 5))
def test_after_a_drain_the_broker_leads_only_what_cannot_move_and_the_restore_gives_back_every_order(
    snap: ClusterSnapshot, broker: int
) -> None:
    plan = drain_plan(snap, broker)
    drained = apply(snap, plan.reorder, plan.elect)
    assert still_leads(drained, broker, plan.stuck) == []
    for key in plan.stuck:  # stuck: led by the broker, no other replica in sync
        p = next(x for x in snap.partitions if (x.topic, x.partition) == key)
        assert p.leader == broker and set(p.isr) & set(p.replicas) <= {broker}
    # Nothing else moved: a partition the broker does not lead keeps its leader.
    for before, after in zip(snap.partitions, drained.partitions, strict=True):
        if before.leader != broker:
            assert after.leader == before.leader
    back = restore_plan(drained, broker, plan.original)
    final = apply(drained, back.reorder, back.elect)
    assert [p.replicas for p in final.partitions] == [p.replicas for p in snap.partitions]
    assert restored(final, back) == []
