"""The rolling-restart safety rules (docs/safety.md, "Rolling restart"), one test per rule, and a property against the rule text."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.snapshot import EligibleLeaders, Missing, Partition, Reassignment
from kafka_health.plan.reassignment_safety import reassignments_involving
from kafka_health.plan.restart_safety import (
    RestartSafety,
    check_restart_safety,
    order_brokers,
)

from .factories import balanced, partition, snapshot


def rules(result: RestartSafety) -> set[str]:
    return {b.rule for b in result.blockers}


def test_healthy_cluster_allows_a_non_controller_broker() -> None:
    result = check_restart_safety(snapshot(), 1, remaining=[1, 2, 3])
    assert result.safe and not result.blockers
    assert "may restart now" in result.summary()


def test_any_under_replicated_partition_blocks_every_broker() -> None:
    # URP elsewhere in the cluster (broker 1 not involved) still blocks broker 1.
    parts = [*balanced("orders"), partition("other", 0, [2, 3], isr=[2])]
    result = check_restart_safety(snapshot(parts, min_isr={"orders": 2, "other": 1}), 1)
    urp = [b for b in result.blockers if b.rule == "under_replicated"]
    assert not result.safe and len(urp) == 1
    assert urp[0].partitions == ["other-0"]


def test_offline_partition_blocks() -> None:
    parts = [*balanced(), partition("dead", 0, [2], isr=[], leader=None)]
    result = check_restart_safety(snapshot(parts, min_isr={"orders": 2, "dead": 1}), 1)
    assert "offline" in rules(result)


def test_no_broker_restarts_while_a_partition_has_an_eligible_leader_replica() -> None:
    """KIP-966: a replica enters the ELR only when it leaves an ISR already below min ISR, so a
    partition with an ELR is under-replicated and rule 1 holds every broker, its ELR members
    included: a roll never takes away the last eligible replica (nor the ISR left)."""
    parts = [*balanced(), partition("tight", 0, [1, 2, 3], isr=[1])]
    snap = snapshot(parts, min_isr={"orders": 2, "tight": 2})
    snap.eligible_leaders = [EligibleLeaders(topic="tight", partition=0, elr=[2], last_known_elr=[])]
    for broker in (1, 2, 3):
        result = check_restart_safety(snap, broker, remaining=[1, 2, 3])
        assert not result.safe and "under_replicated" in rules(result), broker


def test_partition_under_min_isr_on_the_candidate_blocks() -> None:
    # RF 3, min ISR 3 would be skipped; use RF 4, min ISR 3, ISR 2.
    parts = [partition("t", 0, [1, 2, 3, 4], isr=[2, 3])]
    result = check_restart_safety(snapshot(parts, brokers=(1, 2, 3, 4), min_isr={"t": 3}), 1)
    assert "min_isr" in rules(result)
    assert any("under min ISR" in b.message for b in result.blockers)


def test_at_min_isr_blocks_only_a_broker_in_the_isr() -> None:
    # RF 3, min ISR 2, ISR {1, 2}: restarting 1 would leave 1 < 2; broker 3 (not in ISR) would not.
    parts = [partition("t", 0, [1, 2, 3], isr=[1, 2])]
    snap = snapshot(parts, min_isr={"t": 2})
    in_isr = check_restart_safety(snap, 1)
    assert any(b.rule == "min_isr" and "at min ISR" in b.message for b in in_isr.blockers)
    out_of_isr = check_restart_safety(snap, 3)
    assert not any(b.rule == "min_isr" for b in out_of_isr.blockers)
    # ... though rule 1 (URP = 0) still blocks every broker.
    assert "under_replicated" in rules(out_of_isr)


def test_partitions_with_rf_not_above_min_isr_are_skipped_and_reported() -> None:
    parts = [*balanced(), partition("fragile", 0, [1, 2], isr=[1, 2]), partition("single", 0, [1])]
    result = check_restart_safety(snapshot(parts, min_isr={"orders": 2, "fragile": 2, "single": 1}), 1)
    assert result.safe
    assert [(s.topic, s.replication_factor, s.min_insync_replicas) for s in result.skipped] == [
        ("fragile", 2, 2),
        ("single", 1, 1),
    ]
    assert "2 partition(s) with RF <= min ISR skipped" in result.summary()


def test_unknown_min_isr_blocks() -> None:
    result = check_restart_safety(snapshot(min_isr={"orders": None}), 1)
    assert "min_isr_unknown" in rules(result)


def test_another_broker_down_blocks_one_at_a_time() -> None:
    result = check_restart_safety(snapshot(down=[2]), 1)
    assert "one_at_a_time" in rules(result)


def test_unknown_broker_blocks() -> None:
    assert "unknown_broker" in rules(check_restart_safety(snapshot(), 9))


def test_quorum_majority_needs_the_other_caught_up_voters() -> None:
    # 3 voters, voter 2 lagging: without voter 1 only the leader (3) is caught up: 1 < 2.
    result = check_restart_safety(snapshot(voter_lag={2: 5000}), 1)
    assert "quorum" in rules(result)
    assert "majority needs 2" in result.summary()
    # Restarting the lagging voter itself leaves 1 and 3: a majority.
    assert "quorum" not in rules(check_restart_safety(snapshot(voter_lag={2: 5000}), 2))


def test_unknown_voter_lag_counts_as_not_caught_up() -> None:
    assert "quorum" in rules(check_restart_safety(snapshot(voter_lag={2: None}), 1))


def test_non_voter_broker_ignores_the_quorum_majority() -> None:
    snap = snapshot(
        brokers=(1, 2, 3, 4), voters=(1, 2, 3), voter_lag={2: 5000}, partitions=balanced(brokers=(1, 2, 3, 4))
    )
    assert check_restart_safety(snap, 4).safe


def test_no_quorum_leader_or_unknown_quorum_blocks() -> None:
    assert "quorum" in rules(check_restart_safety(snapshot(controller=None), 1))
    assert "quorum_unknown" in rules(check_restart_safety(snapshot(quorum=False), 1))


def test_active_controller_goes_last() -> None:
    snap = snapshot()
    assert "controller_last" in rules(check_restart_safety(snap, 3, remaining=[3, 1]))
    assert check_restart_safety(snap, 3, remaining=[3]).safe


def test_order_puts_non_voters_first_and_the_active_controller_last() -> None:
    snap = snapshot(
        brokers=(1, 2, 3, 4, 5), voters=(1, 2, 3), controller=2, partitions=balanced(brokers=(1, 2, 3, 4, 5))
    )
    assert order_brokers(snap, [5, 2, 1, 3, 4]) == [4, 5, 1, 3, 2]
    assert order_brokers(snap, [2, 2, 1]) == [1, 2]


def test_a_reassignment_holds_the_brokers_it_involves_and_its_new_replicas_are_no_urp() -> None:
    """Rule 5: `moving-0` moves from {1, 2} to {2, 3} (3 being added, out of sync on purpose,
    1 being removed). Brokers 1, 2 and 3 are held by rule 5; broker 4, which it does not
    involve, may restart: rule 1 does not count 3's replica as under-replicated."""
    parts = [*balanced(brokers=(1, 2, 3, 4)), partition("moving", 0, [1, 2, 3], isr=[1, 2])]
    snap = snapshot(parts, brokers=(1, 2, 3, 4), min_isr={"orders": 2, "moving": 1})
    snap.reassignments = [
        Reassignment(topic="moving", partition=0, replicas=[1, 2, 3], adding=[3], removing=[1])
    ]
    for broker in (1, 2, 3):
        held = check_restart_safety(snap, broker)
        assert rules(held) == {"reassignment"}, held.blockers
        assert held.blockers[0].partitions == ["moving-0"]
        assert "kafka-reassign-partitions --verify" in held.blockers[0].message
    assert check_restart_safety(snap, 4).safe
    # A replica out of sync that nobody adds is under-replicated as ever.
    snap.partitions[-1] = partition("moving", 0, [1, 2, 3], isr=[1])
    assert "under_replicated" in rules(check_restart_safety(snap, 4))


def test_unread_reassignments_block() -> None:
    snap = snapshot(brokers=(1, 2, 3))
    snap.missing = [Missing(part="reassignments", reason="authorization denied")]
    assert rules(check_restart_safety(snap, 1)) == {"reassignment_unknown"}


def test_a_roll_names_the_reassignments_that_involve_its_brokers() -> None:
    snap = snapshot(brokers=(1, 2, 3, 4))
    snap.reassignments = [
        Reassignment(topic="a", partition=p, replicas=[1, 2, 3], adding=[3], removing=[1]) for p in range(5)
    ]
    assert reassignments_involving(snap, [4]) is None
    why = reassignments_involving(snap, [1, 4])
    assert why == (
        "5 partition reassignment(s) in flight (a-0, a-1, a-2, ...) involve broker(s) 1: the roll starts "
        "once they complete (kafka-reassign-partitions --verify)"
    )


# --- property: `safe` exactly when the rule text says so --------------------------------------


Cluster = tuple[list[Partition], dict[str, int], int, list[Reassignment]]


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    brokers = [1, 2, 3, 4]
    parts, moves = [], []
    min_isr = {}
    for t in range(draw(st.integers(1, 4))):
        topic = f"t{t}"
        rf = draw(st.integers(1, 4))
        min_isr[topic] = draw(st.integers(1, 4))
        for p in range(draw(st.integers(1, 3))):
            replicas = draw(st.permutations(brokers))[:rf]
            isr = [b for b in replicas if draw(st.booleans())] or replicas[:1]
            isr = replicas if draw(st.booleans()) else isr
            parts.append(partition(topic, p, replicas, isr=isr, leader=isr[0]))
            if draw(st.booleans()):  # being reassigned: some replicas added, some removed
                adding = [b for b in replicas if draw(st.booleans())]
                removing = [b for b in replicas if b not in adding and draw(st.booleans())]
                moves.append(
                    Reassignment(
                        topic=topic, partition=p, replicas=replicas, adding=adding, removing=removing
                    )
                )
    return parts, min_isr, draw(st.sampled_from(brokers)), moves


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_safe_iff_the_rules_hold(case: Cluster) -> None:
    parts, min_isr, candidate, moves = case
    snap = snapshot(parts, brokers=(1, 2, 3, 4), min_isr=dict(min_isr), voters=(1, 2, 3, 4), controller=4)
    snap.reassignments = moves
    result = check_restart_safety(snap, candidate, remaining=[candidate])

    adding = {(r.topic, r.partition): set(r.adding) for r in moves}
    no_urp = all(set(p.replicas) - set(p.isr) <= adding.get((p.topic, p.partition), set()) for p in parts)
    not_involved = all(candidate not in {*r.replicas, *r.adding, *r.removing} for r in moves)
    per_partition_ok = all(
        len(p.replicas) <= min_isr[p.topic]
        or not (len(p.isr) < min_isr[p.topic] or (len(p.isr) == min_isr[p.topic] and candidate in p.isr))
        for p in parts
        if candidate in p.replicas
    )
    assert result.safe == (no_urp and per_partition_ok and not_involved)
    skipped = {(s.topic, s.partition) for s in result.skipped}
    assert skipped == {
        (p.topic, p.partition)
        for p in parts
        if candidate in p.replicas and len(p.replicas) <= min_isr[p.topic]
    }


def test_each_rule_that_refuses_logs_one_line_and_a_safe_broker_logs_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Broker 3 down (rule 4), t-0 under-replicated (rule 1) and at min ISR with broker 1 in it (rule 2).
    parts = [partition("t", 0, [1, 2, 3], isr=[1, 2])]
    snap = snapshot(parts, min_isr={"t": 2})
    with caplog.at_level(logging.INFO, logger="kafka_health.plan.restart_safety"):
        check_restart_safety(snapshot(), 1, remaining=[1, 2, 3])
        assert not caplog.records
        result = check_restart_safety(snap, 1)
    lines = [r.getMessage() for r in caplog.records]
    assert {"under_replicated", "min_isr"} <= rules(result)
    assert len([m for m in lines if "rule 1" in m]) == 1 and len([m for m in lines if "rule 2" in m]) == 1
    assert all(m.startswith("restart of broker 1 refused by ") for m in lines)
    assert any("at min ISR with broker 1" in m for m in lines)
