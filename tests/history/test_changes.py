"""The rules of one history cycle, on synthetic snapshots (pure logic, no files)."""

from __future__ import annotations

from datetime import timedelta

from kafka_health.history import changes
from kafka_health.history.schema import BROKER_SAMPLES, GROUP_OFFSET_SAMPLES, member_hash
from kafka_health.models.snapshot import ClusterSnapshot, Missing

from .synthetic import T0, healthy, snapshot


def _next(previous: changes.PartitionChanges | None, snap: ClusterSnapshot) -> changes.PartitionChanges:
    result = changes.diff_partitions(previous.baseline if previous else None, snap)
    assert result is not None
    return result


def test_first_snapshot_writes_every_partition() -> None:
    first = _next(None, snapshot(T0))
    assert first.full
    assert first.changed == sorted(healthy())
    assert first.removed == []


def test_unchanged_snapshot_writes_nothing() -> None:
    first = _next(None, snapshot(T0))
    second = _next(first, snapshot(T0 + timedelta(seconds=30)))
    assert not second.full
    assert second.changed == []
    assert second.removed == []


def test_isr_reordering_is_not_a_change_but_shrink_leader_and_replica_changes_are() -> None:
    state = healthy()
    first = _next(None, snapshot(T0, state))
    later = dict(state)
    leader, replicas, isr = later[("orders", 0)]
    later[("orders", 0)] = (leader, replicas, list(reversed(isr)))  # same set, other order
    later[("orders", 1)] = (later[("orders", 1)][0], later[("orders", 1)][1], [1, 2])  # ISR shrink
    later[("orders", 2)] = (0, later[("orders", 2)][1], later[("orders", 2)][2])  # leader moved
    later[("payments", 1)] = (1, [1, 0, 2], [1, 0, 2])  # replica order changed (preferred leader)
    second = _next(first, snapshot(T0 + timedelta(seconds=30), later))
    assert second.changed == [("orders", 1), ("orders", 2), ("payments", 1)]
    # The baseline now holds the new state, so the same state again is no change.
    third = _next(second, snapshot(T0 + timedelta(seconds=60), later))
    assert third.changed == []


def test_offline_partition_is_a_change() -> None:
    state = healthy()
    first = _next(None, snapshot(T0, state))
    state[("orders", 0)] = (None, state[("orders", 0)][1], [])
    second = _next(first, snapshot(T0 + timedelta(seconds=30), state))
    assert second.changed == [("orders", 0)]
    assert second.baseline.states[("orders", 0)].leader is None


def test_first_snapshot_of_a_new_utc_day_writes_the_full_state() -> None:
    first = _next(None, snapshot(T0))
    midnight = T0.replace(hour=23, minute=59, second=50)
    same_day = _next(first, snapshot(midnight))
    next_day = _next(same_day, snapshot(midnight + timedelta(seconds=30)))
    assert not same_day.full and same_day.changed == []
    assert next_day.full and next_day.changed == sorted(healthy())


def test_snapshot_without_metadata_changes_nothing() -> None:
    first = _next(None, snapshot(T0))
    down = snapshot(T0 + timedelta(seconds=30), missing=[Missing(part="metadata", reason="timed out")])
    assert changes.diff_partitions(first.baseline, down) is None


def test_deleted_topic_is_removed_but_unreadable_topic_is_kept() -> None:
    first = _next(None, snapshot(T0))
    only_orders = {k: v for k, v in healthy().items() if k[0] == "orders"}
    deleted = _next(first, snapshot(T0 + timedelta(seconds=30), only_orders))
    assert deleted.removed == [("payments", 0), ("payments", 1)]
    assert ("payments", 0) not in deleted.baseline.states

    unreadable = snapshot(
        T0 + timedelta(seconds=30),
        only_orders,
        missing=[Missing(part="partitions:payments", reason="TOPIC_AUTHORIZATION_FAILED")],
    )
    kept = _next(first, unreadable)
    assert kept.removed == []
    assert kept.baseline.states[("payments", 1)] == first.baseline.states[("payments", 1)]


def test_baseline_round_trips_through_its_arrow_table() -> None:
    first = _next(None, snapshot(T0))
    again = changes.baseline_from_table(changes.baseline_table(first.baseline))
    assert again == first.baseline


def test_broker_samples_sum_log_dirs_and_know_total_only_when_every_dir_reports_it() -> None:
    table = changes.broker_samples(snapshot(T0, alive=(0, 2)))
    assert table.schema == BROKER_SAMPLES
    rows = {r["broker"]: r for r in table.to_pylist()}
    assert rows[0]["used_bytes"] == 150 and rows[0]["total_bytes"] == 2000
    assert rows[1]["used_bytes"] == 70 and rows[1]["total_bytes"] is None  # not reported
    assert rows[1]["alive"] is False
    assert rows[2]["used_bytes"] is None and rows[2]["total_bytes"] is None  # no log dir read


def test_group_offset_samples_put_committed_beside_log_offsets() -> None:
    table = changes.group_offset_samples(snapshot(T0))
    assert table.schema == GROUP_OFFSET_SAMPLES
    rows = table.to_pylist()
    assert [(r["partition"], r["committed_offset"], r["log_end_offset"]) for r in rows] == [
        (0, 90, 100),
        (1, None, 101),
    ]


def test_group_samples_hash_the_member_set_whatever_its_order() -> None:
    rows = changes.group_samples(snapshot(T0)).to_pylist()
    assert rows[0]["member_hash"] == member_hash(["m-1", "m-2"]) == member_hash(["m-2", "m-1"])
    assert member_hash(["m-1"]) != member_hash(["m-1", "m-2"])


def test_member_hash_agrees_with_the_spark_side_current_sample() -> None:
    """Spark computes the current snapshot's member_hash itself; a mismatch would read as a rebalance."""
    from kafka_health_spark.tables import member_hash as spark_member_hash

    assert spark_member_hash(["b", "a"]) == member_hash(["a", "b"])
