"""The rolling-restart safety rules (docs/safety.md, "Rolling restart"), one test per rule, and a property against the rule text."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.snapshot import Partition
from kafka_health.plan.restart_safety import RestartSafety, check_restart_safety, order_brokers

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


# --- property: `safe` exactly when the rule text says so --------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Partition], dict[str, int], int]:
    brokers = [1, 2, 3, 4]
    parts = []
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
    return parts, min_isr, draw(st.sampled_from(brokers))


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_safe_iff_the_rules_hold(case: tuple[list[Partition], dict[str, int], int]) -> None:
    parts, min_isr, candidate = case
    snap = snapshot(parts, brokers=(1, 2, 3, 4), min_isr=dict(min_isr), voters=(1, 2, 3, 4), controller=4)
    result = check_restart_safety(snap, candidate, remaining=[candidate])

    no_urp = all(len(p.isr) == len(p.replicas) for p in parts)
    per_partition_ok = all(
        len(p.replicas) <= min_isr[p.topic]
        or not (len(p.isr) < min_isr[p.topic] or (len(p.isr) == min_isr[p.topic] and candidate in p.isr))
        for p in parts
        if candidate in p.replicas
    )
    assert result.safe == (no_urp and per_partition_ok)
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
