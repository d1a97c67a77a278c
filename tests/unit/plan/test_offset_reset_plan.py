"""Offset reset plans (current → target per strategy, clamped) and the Empty-group gate."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.policy import OffsetResetRequest
from kafka_health.models.snapshot import ClusterSnapshot, PartitionOffsets
from kafka_health.plan.offset_reset_plan import (
    GateState,
    OffsetResetPlan,
    group_gate,
    not_in_metadata,
    plan_offset_reset,
    target_timestamp,
)

from .factories import NOW, balanced, group, snapshot


def request(**strategy: Any) -> OffsetResetRequest:
    body = {"id": "r1", "group": "billing", "topics": ["orders"], **strategy}
    return OffsetResetRequest.model_validate(body)


def snap(committed: dict[tuple[str, int], int | None] | None = None, **kwargs: Any) -> ClusterSnapshot:
    parts = balanced("orders", count=2) + balanced("payments", count=1)
    offsets = [
        PartitionOffsets(topic="orders", partition=0, log_start_offset=100, log_end_offset=1000),
        PartitionOffsets(topic="orders", partition=1, log_start_offset=0, log_end_offset=50),
        PartitionOffsets(topic="payments", partition=0, log_start_offset=5, log_end_offset=5),
    ]
    committed = committed if committed is not None else {("orders", 0): 500, ("orders", 1): 10}
    return snapshot(parts, offsets=offsets, groups=[group("billing", committed=committed)], **kwargs)


def targets(plan: OffsetResetPlan) -> dict[tuple[str, int], int | None]:
    return {(e.topic, e.partition): e.target for e in plan.entries}


def test_earliest_and_latest() -> None:
    assert targets(plan_offset_reset(request(earliest=True), snap(), now=NOW)) == {
        ("orders", 0): 100,
        ("orders", 1): 0,
    }
    assert targets(plan_offset_reset(request(latest=True), snap(), now=NOW)) == {
        ("orders", 0): 1000,
        ("orders", 1): 50,
    }


def test_to_offset_is_clamped_into_the_log_and_says_so() -> None:
    plan = plan_offset_reset(request(toOffset=60), snap(), now=NOW)
    assert targets(plan) == {("orders", 0): 100, ("orders", 1): 50}
    first, second = plan.entries
    assert first.clamped and "clamped to log start" in (first.note or "")
    assert second.clamped and "clamped to log end" in (second.note or "")
    assert plan.executable


def test_shift_by_moves_from_the_committed_offset_and_clamps() -> None:
    plan = plan_offset_reset(request(shiftBy=-20), snap(), now=NOW)
    assert targets(plan) == {("orders", 0): 480, ("orders", 1): 0}
    assert [e.current for e in plan.entries] == [500, 10]


def test_shift_by_without_a_committed_offset_is_a_problem() -> None:
    plan = plan_offset_reset(request(shiftBy=5), snap(committed={("orders", 0): 500}), now=NOW)
    assert not plan.executable
    assert plan.problems == ["orders-1: no committed offset to shift from"]
    assert plan.entries[1].target is None


def test_datetime_strategies_use_the_looked_up_offsets_or_log_end() -> None:
    looked_up = {("orders", 0): 700, ("orders", 1): None}
    plan = plan_offset_reset(request(byDuration="2h"), snap(), now=NOW, offsets_for_times=looked_up)
    assert plan.timestamp == NOW - timedelta(hours=2)
    assert targets(plan) == {("orders", 0): 700, ("orders", 1): 50}
    assert "no message at or after" in (plan.entries[1].note or "")


def test_datetime_strategy_without_lookups_is_missing_data() -> None:
    plan = plan_offset_reset(request(toDatetime="2024-06-01T00:00:00Z"), snap(), now=NOW)
    assert not plan.executable and len(plan.missing) == 2 and not plan.problems


def test_target_timestamp() -> None:
    at = target_timestamp(request(toDatetime="2024-06-01T00:00:00+02:00"), NOW)
    assert at is not None and at.isoformat() == "2024-06-01T00:00:00+02:00"
    assert target_timestamp(request(byDuration="90m"), NOW) == NOW - timedelta(minutes=90)
    assert target_timestamp(request(latest=True), NOW) is None


def test_partitions_and_topics_are_united_and_unknown_names_reported() -> None:
    r = OffsetResetRequest.model_validate(
        {
            "id": "r",
            "group": "billing",
            "topics": ["payments", "nope"],
            "partitions": [{"topic": "orders", "partition": 1}, {"topic": "orders", "partition": 9}],
            "latest": True,
        }
    )
    plan = plan_offset_reset(r, snap(), now=NOW)
    assert [(e.topic, e.partition) for e in plan.entries] == [("orders", 1), ("payments", 0)]
    assert plan.problems == [not_in_metadata("nope"), "partition orders-9 does not exist"]
    # A topic the metadata leaves out may exist, hidden from the principal: never "does not exist".
    assert "does not exist, or the principal lacks DESCRIBE on TOPIC nope" in plan.problems[0]
    # The brokers' log dirs hold it (the snapshot's hidden partitions): an authorization error.
    hidden = plan_offset_reset(r, snap().model_copy(update={"hidden": {"nope": [0, 1]}}), now=NOW)
    assert hidden.problems[0].startswith("authorization denied: the principal lacks DESCRIBE on TOPIC nope")
    assert "does not exist" not in hidden.problems[0]


def test_unknown_log_offsets_are_missing_data() -> None:
    s = snapshot(balanced("orders", count=1), offsets=[], groups=[group("billing")])
    plan = plan_offset_reset(request(earliest=True), s, now=NOW)
    assert plan.missing and plan.entries[0].target is None and not plan.executable


def test_lines_read_like_the_kafka_tool() -> None:
    plan = plan_offset_reset(request(latest=True), snap(), now=NOW)
    assert plan.lines() == ["billing orders 0 500 -> 1000", "billing orders 1 10 -> 50"]


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(0, 1000),
    length=st.integers(0, 1000),
    committed=st.one_of(st.none(), st.integers(0, 3000)),
    strategy=st.sampled_from(["toOffset", "shiftBy", "earliest", "latest"]),
    value=st.integers(-3000, 3000).filter(lambda v: v != 0),
)
def test_targets_always_lie_within_the_log(
    start: int, length: int, committed: int | None, strategy: str, value: int
) -> None:
    s = snapshot(
        balanced("orders", count=1),
        offsets=[
            PartitionOffsets(
                topic="orders", partition=0, log_start_offset=start, log_end_offset=start + length
            )
        ],
        groups=[group("billing", committed={("orders", 0): committed})],
    )
    body: dict[str, Any] = (
        {strategy: True}
        if strategy in ("earliest", "latest")
        else {strategy: abs(value) if strategy == "toOffset" else value}
    )
    plan = plan_offset_reset(request(**body), s, now=NOW)
    entry = plan.entries[0]
    if entry.target is None:
        assert strategy == "shiftBy" and committed is None
        return
    assert start <= entry.target <= start + length
    raw = {"earliest": start, "latest": start + length, "toOffset": abs(value)}.get(strategy)
    if strategy == "shiftBy":
        assert committed is not None
        raw = committed + value
    assert entry.clamped == (raw != entry.target)


# --- the Empty-group gate -----------------------------------------------------------------------


@pytest.mark.parametrize("state", ["Empty", "Dead"])
def test_gate_is_ready_for_a_group_without_members(state: str) -> None:
    assert (
        group_gate(group(state=state), waiting_since=None, timeout=timedelta(minutes=5), now=NOW).state
        is GateState.READY
    )


def test_gate_is_ready_for_a_group_that_does_not_exist_yet() -> None:
    assert (
        group_gate(None, waiting_since=None, timeout=timedelta(minutes=5), now=NOW).state is GateState.READY
    )


def test_gate_waits_for_an_active_group_then_blocks() -> None:
    active = group(state="Stable", members=2)
    first = group_gate(active, waiting_since=None, timeout=timedelta(minutes=5), now=NOW)
    assert (
        first.state is GateState.WAIT
        and first.waiting_since == NOW
        and first.deadline == NOW + timedelta(minutes=5)
    )
    later = group_gate(
        active, waiting_since=NOW, timeout=timedelta(minutes=5), now=NOW + timedelta(minutes=4)
    )
    assert later.state is GateState.WAIT and later.waiting_since == NOW
    blocked = group_gate(
        active, waiting_since=NOW, timeout=timedelta(minutes=5), now=NOW + timedelta(minutes=5)
    )
    assert blocked.state is GateState.BLOCKED and "new request id" in blocked.message


def test_gate_treats_members_as_not_empty_whatever_the_state() -> None:
    odd = group(state="Empty", members=1)
    assert group_gate(odd, waiting_since=None, timeout=timedelta(minutes=1), now=NOW).state is GateState.WAIT
