"""Batched rolling restarts (issue 36, `plan/roll_batches.py`): which brokers restart together,
the order (controllers first and alone, the active one last; combined voters alone, last), why
each batch is what it is, and the live check of one batch. Small hand-built clusters, then a
property test over random ones against a brute-force statement of the rule."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.snapshot import Broker, ClusterSnapshot, Partition, Quorum, QuorumVoter, TopicConfig
from kafka_health.plan.restart_safety import order_brokers
from kafka_health.plan.roll_batches import BatchBy, allowance, check_batch, plan_batches

NOW = datetime(2026, 12, 1, tzinfo=UTC)
CONTROLLERS = (100, 101, 102)
ACTIVE = 101


def part(topic: str, p: int, replicas: Sequence[int], isr: Sequence[int] | None = None) -> Partition:
    return Partition(
        topic=topic,
        partition=p,
        leader=replicas[0],
        replicas=list(replicas),
        isr=list(replicas if isr is None else isr),
    )


def cluster(
    racks: Mapping[int, str | None],
    partitions: Sequence[Partition],
    *,
    min_isr: Mapping[str, int | None] | None = None,
    voters: Sequence[int] = CONTROLLERS,
    leader: int = ACTIVE,
) -> ClusterSnapshot:
    """Brokers with their racks; dedicated controllers by default (voters not among the brokers)."""
    topics = sorted({p.topic for p in partitions})
    configs = {t: 2 for t in topics} if min_isr is None else min_isr
    return ClusterSnapshot(
        cluster="test",
        taken_at=NOW,
        brokers=[Broker(id=b, host="127.0.0.1", port=9092, rack=r, alive=True) for b, r in racks.items()],
        quorum=Quorum(leader_id=leader, voters=[QuorumVoter(id=v, lag=0) for v in voters]),
        partitions=list(partitions),
        topic_configs=[TopicConfig(topic=t, min_insync_replicas=m) for t, m in configs.items()],
    )


SIX: dict[int, str | None] = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}


def rack_aware(count: int = 12) -> list[Partition]:
    """One replica per rack, rotating over the two brokers of each."""
    by_rack = [[1, 2], [3, 4], [5, 6]]
    return [
        part("orders", i, [by_rack[(i + k) % 3][(i // 3 + k) % 2] for k in range(3)]) for i in range(count)
    ]


def nodes_of(snap: ClusterSnapshot) -> list[int]:
    voters = snap.quorum.voters if snap.quorum else []
    return [*(b.id for b in snap.brokers), *(v.id for v in voters)]


def batches(
    snap: ClusterSnapshot, limit: int, by: BatchBy = "Rack", nodes: Sequence[int] | None = None
) -> list[list[int]]:
    return [
        b.nodes
        for b in plan_batches(
            snap, nodes_of(snap) if nodes is None else nodes, max_concurrent=limit, batch_by=by
        ).batches
    ]


# --- the examples of the issue ------------------------------------------------------------------


def test_three_racks_of_two_rack_aware_restart_a_rack_at_a_time() -> None:
    snap = cluster(SIX, rack_aware())
    plan = plan_batches(snap, nodes_of(snap), max_concurrent=2, batch_by="Rack")
    assert [b.nodes for b in plan.batches] == [[100], [102], [101], [1, 2], [3, 4], [5, 6]]
    assert plan.batches[4].why == "rack b: 2 brokers, no partition loses more than its ISR allows"
    assert plan.apart_count == 0 and plan.apart == []
    assert all(check_batch(snap, b.nodes).safe for b in plan.batches)


def test_none_mode_finds_the_racks_of_a_rack_aware_cluster() -> None:
    snap = cluster(SIX, rack_aware())
    assert batches(snap, 2, "None") == [[100], [102], [101], [1, 2], [3, 4], [5, 6]]
    assert batches(snap, 6, "None") == [[100], [102], [101], [1, 2], [3, 4], [5, 6]]


def test_two_replicas_in_one_rack_split_that_rack() -> None:
    snap = cluster(SIX, [*rack_aware(), part("orders", 12, [1, 2, 3])])
    plan = plan_batches(snap, nodes_of(snap), max_concurrent=2, batch_by="Rack")
    assert [b.nodes for b in plan.batches][3:] == [[1], [2], [3, 4], [5, 6]]
    assert plan.batches[3].why == (
        "rack a: broker 1 alone; broker 2 waits: partition orders-12 has ISR [1, 2, 3] with "
        "min.insync.replicas 2, so at most 1 of them at once"
    )
    assert plan.batches[4].why == "rack a: broker 2 alone: the last one left of the rack"
    assert plan.apart_count == 1 and [p.partition for p in plan.apart] == ["orders-12"]
    assert plan.lines()[-1] == "1 partition(s) kept brokers apart: orders-12"
    assert not check_batch(snap, [1, 2]).safe


def test_min_isr_1_lets_two_of_three_in_sync_replicas_restart_together() -> None:
    snap = cluster({1: None, 2: None, 3: None}, [part("t", 0, [1, 2, 3])], min_isr={"t": 1})
    assert batches(snap, 3, "None")[3:] == [[1, 2], [3]]
    assert batches(snap, 2, "None")[3:] == [[1, 2], [3]]
    assert check_batch(snap, [1, 3]).safe
    blocked = check_batch(snap, [1, 2, 3])
    assert not blocked.safe and blocked.blocking_count == 1
    assert blocked.blocking[0].restarting == [1, 2, 3] and blocked.blocking[0].at_once == 2


def test_under_replicated_partition_makes_its_in_sync_brokers_restart_alone() -> None:
    racks = {4: "a", 5: "a", 6: "a", 7: "a"}
    parts = [part("orders", 3, [4, 5, 6], isr=[4, 5]), part("other", 0, [6, 7, 4])]
    snap = cluster(racks, parts, min_isr={"orders": 2, "other": 1})
    assert batches(snap, 4)[3:] == [[4], [5], [6, 7]]
    plan = plan_batches(snap, nodes_of(snap), max_concurrent=4)
    assert (
        plan.batches[3].why
        == "rack a: broker 4 alone: partition orders-3 has ISR [4, 5] with min.insync.replicas 2"
    )
    # 6 is out of orders-3's ISR: restarting it beside 7 costs orders-3 nothing, other-0 allows two
    assert [p.partition for p in plan.apart] == ["orders-3"]


def test_never_safe_partition_keeps_only_its_last_in_sync_replica() -> None:
    """RF 2 with min.insync.replicas 2 is never safe (the never-safe verdict reports it): its
    min-ISR part is left out, but its two replicas never restart together (it would go offline)."""
    snap = cluster(
        {1: "a", 2: "a", 3: "a"},
        [part("fragile", 0, [1, 2]), part("single", 0, [3])],
        min_isr={"fragile": 2, "single": 1},
    )
    assert batches(snap, 3)[3:] == [[1, 3], [2]]
    check = check_batch(snap, [1, 2])
    assert not check.safe and check.blocking[0].never_safe and check.blocking[0].at_once == 1
    assert check_batch(snap, [3]).safe  # RF 1: offline whichever batch restarts it; not the batch's rule


def test_unknown_min_isr_is_not_safe_its_brokers_restart_alone() -> None:
    snap = cluster({1: "a", 2: "a", 3: "a"}, [part("t", 0, [1, 2])], min_isr={"t": None})
    plan = plan_batches(snap, nodes_of(snap), max_concurrent=3)
    assert [b.nodes for b in plan.batches][3:] == [[1], [2], [3]]
    assert "min.insync.replicas unknown" in plan.batches[3].why
    assert not check_batch(snap, [1]).safe


def test_max_concurrent_1_is_todays_order() -> None:
    snap = cluster(SIX, [*rack_aware(), part("orders", 12, [1, 2, 3])])
    by: BatchBy
    for by in ("Rack", "None"):
        plan = plan_batches(snap, nodes_of(snap), max_concurrent=1, batch_by=by)
        assert plan.order == order_brokers(snap, nodes_of(snap))
        assert all(len(b.nodes) == 1 and "maxConcurrent 1" in b.why for b in plan.batches)
    combined = cluster(SIX, rack_aware(), voters=(1, 3, 5), leader=3)
    assert plan_batches(combined, nodes_of(combined)).order == order_brokers(combined, nodes_of(combined))


def test_controllers_first_one_at_a_time_active_last() -> None:
    snap = cluster(SIX, rack_aware(), voters=(100, 101, 102, 103, 104), leader=102)
    plan = plan_batches(snap, [104, 1, 102, 100, 3, 5], max_concurrent=3, batch_by="None")
    assert [b.nodes for b in plan.batches] == [[100], [104], [102], [1], [3], [5]]
    assert plan.batches[2].why.startswith("controller 102 alone: dedicated controller, the active one")
    assert "one KRaft voter at a time" in plan.batches[0].why


def test_combined_voters_alone_after_the_other_brokers_active_last() -> None:
    snap = cluster(SIX, rack_aware(), voters=(1, 3, 5), leader=3)
    assert batches(snap, 2) == [[2], [4], [6], [1], [5], [3]]
    assert batches(snap, 3, "None") == [[2], [4], [6], [1], [5], [3]]


def test_a_broker_without_rack_restarts_alone_with_rack() -> None:
    racks = {1: "a", 2: "a", 3: None, 4: None}
    snap = cluster(racks, [part("t", 0, [1, 3]), part("t", 1, [2, 4])], min_isr={"t": 1})
    plan = plan_batches(snap, nodes_of(snap), max_concurrent=4, batch_by="Rack")
    assert [b.nodes for b in plan.batches][3:] == [[1, 2], [3], [4]]
    assert (
        plan.batches[4].why
        == "broker 3 alone: no broker.rack, and batchBy Rack batches the brokers of one rack"
    )
    assert batches(snap, 4, "None")[3:] == [[1, 2], [3, 4]]  # t-0 keeps 1 and 3 apart, t-1 2 and 4


def test_a_node_not_in_the_metadata_restarts_alone() -> None:
    snap = cluster({1: "a", 2: "a"}, [part("t", 0, [1])], min_isr={"t": 1})
    assert batches(snap, 3, "None", nodes=[1, 2, 9]) == [[1, 2], [9]]
    check = check_batch(snap, [1, 9])
    assert not check.safe and check.alone == ["broker 9 is not in the cluster metadata and restarts alone"]


def test_check_batch_names_voters_and_partitions() -> None:
    snap = cluster(SIX, [*rack_aware(), part("orders", 12, [1, 2, 3])])
    assert check_batch(snap, [100, 101]).alone == [
        "controller 100 restarts alone (dedicated controllers go one at a time)",
        "controller 101 restarts alone (dedicated controllers go one at a time)",
    ]
    check = check_batch(snap, [1, 2, 3])
    assert check.blocking_count == 7  # orders-12, and the six rack-aware partitions on 1 (or 2) and 3
    assert [p.partition for p in check.blocking][:2] == ["orders-1", "orders-2"]
    assert check.summary().startswith(
        "brokers 1, 2, 3 may not restart together: partition orders-1 has ISR [3, 6, 1] with "
        "min.insync.replicas 2, so at most 1 of them at once (the set restarts 1, 3); "
    )
    assert check.summary().endswith(" and 4 more partition(s)")
    assert check_batch(snap, [1]).safe and check_batch(snap, [1, 2]).blocking_count == 1


def test_max_concurrent_below_1_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        plan_batches(cluster(SIX, rack_aware()), [1], max_concurrent=0)


def test_allowance() -> None:
    assert allowance(part("t", 0, [1, 2, 3]), 2) == 1
    assert allowance(part("t", 0, [1, 2, 3]), 1) == 2
    assert allowance(part("t", 0, [1, 2, 3], isr=[1, 2]), 2) == 0
    assert allowance(part("t", 0, [1, 2, 3], isr=[1]), 2) == -1
    assert allowance(part("t", 0, [1, 2, 3]), None) == 0
    assert allowance(part("t", 0, [1, 2]), 2) == 1  # never safe: all but the last in-sync replica
    assert allowance(part("t", 0, [1]), 1) is None


# --- the rule, brute force, over random clusters --------------------------------------------------


def breaks(snap: ClusterSnapshot, nodes: set[int]) -> list[str]:
    """The rule as the issue states it, partition by partition."""
    min_isr = {c.topic: c.min_insync_replicas for c in snap.topic_configs}
    out = []
    for p in snap.partitions:
        isr, m = set(p.isr), min_isr.get(p.topic)
        hit = isr & nodes
        if not hit:
            continue
        if m is None:
            bad = True
        elif len(p.replicas) <= m:  # never safe: only "not the last in-sync replica"
            bad = len(isr) >= 2 and not isr - nodes
        else:
            bad = len(hit) > len(isr) - m or not isr - nodes
        if bad:
            out.append(f"{p.topic}-{p.partition}")
    return out


@st.composite
def clusters(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[int]]:
    n = draw(st.integers(2, 7))
    brokers = list(range(1, n + 1))
    racks = {b: draw(st.sampled_from([None, "a", "b", "c"])) for b in brokers}
    dedicated = draw(st.booleans())
    voters = (
        list(CONTROLLERS)
        if dedicated
        else draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=3, unique=True))
    )
    parts = []
    for i in range(draw(st.integers(0, 14))):
        replicas = draw(st.lists(st.sampled_from(brokers), min_size=1, max_size=min(4, n), unique=True))
        isr = [b for b in replicas if draw(st.booleans())] if draw(st.booleans()) else replicas
        parts.append(part(f"t{i % 3}", i, replicas, isr))
    min_isr = {f"t{t}": draw(st.sampled_from([None, 1, 2, 3])) for t in range(3)}
    snap = cluster(racks, parts, min_isr=min_isr, voters=voters, leader=draw(st.sampled_from(voters)))
    every = [*brokers, *(CONTROLLERS if dedicated else ()), 50]
    nodes = draw(st.lists(st.sampled_from(every), min_size=1, unique=True))
    return snap, nodes


@settings(max_examples=300, deadline=None)
@given(clusters(), st.integers(1, 4), st.sampled_from(["Rack", "None"]))
def test_every_batch_keeps_the_rule_and_every_node_restarts_once(
    case: tuple[ClusterSnapshot, list[int]], limit: int, by: BatchBy
) -> None:
    snap, nodes = case
    plan = plan_batches(snap, nodes, max_concurrent=limit, batch_by=by)
    assert sorted(plan.order) == sorted(set(nodes))
    assert all(1 <= len(b.nodes) <= limit and b.why for b in plan.batches)
    if limit == 1:
        assert plan.order == order_brokers(snap, nodes)
    for b in plan.batches:
        if len(b.nodes) > 1:
            assert not breaks(snap, set(b.nodes)), (b, breaks(snap, set(b.nodes)))
            assert check_batch(snap, b.nodes).safe
            assert all(node < 100 for node in b.nodes)  # no controller, no unknown node in company
            if by == "Rack":
                assert len({r for x in snap.brokers if x.id in b.nodes for r in [x.rack]}) == 1
    ranks = [0 if n in CONTROLLERS else 1 for n in plan.order]
    assert ranks == sorted(ranks)  # controllers first
    if snap.quorum and snap.quorum.leader_id in plan.order:
        voters_in = [n for n in plan.order if n in {v.id for v in snap.quorum.voters}]
        assert voters_in[-1] == snap.quorum.leader_id  # the active controller last of the voters


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_check_batch_agrees_with_the_rule(case: tuple[ClusterSnapshot, list[int]]) -> None:
    snap, _ = case
    brokers = [b.id for b in snap.brokers]
    for size in (1, 2, 3):
        for chosen in itertools.islice(itertools.combinations(brokers, size), 20):
            check = check_batch(snap, chosen)
            assert check.blocking_count == len(breaks(snap, set(chosen)))
            assert [p.partition for p in check.blocking] == sorted(
                breaks(snap, set(chosen)), key=lambda s: (s.split("-")[0], int(s.split("-")[1]))
            )[: len(check.blocking)]
