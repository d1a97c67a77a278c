"""Pure logic of one history cycle: what changed since the previous snapshot, and the samples.

No I/O here: `store` feeds in the previous partition state and writes what these functions
return, so the rules (ISR order is not a change, an unreadable topic is not a deletion, the
first snapshot of a day writes the full state) are unit-tested on small synthetic snapshots.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from kafka_health.history.schema import (
    BROKER_SAMPLES,
    GROUP_OFFSET_SAMPLES,
    GROUP_SAMPLES,
    PARTITION_REMOVED,
    PARTITION_STATE,
    REPLICA_LAG_SAMPLES,
    member_hash,
)
from kafka_health.models.snapshot import ClusterSnapshot

Key = tuple[str, int]


class PartitionState(NamedTuple):
    """A tuple, so 100k of them are cheap to build and compare every cycle."""

    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    def same_as(self, other: PartitionState) -> bool:
        """Equal leader and replica order; ISR compared as a set (Kafka may reorder it)."""
        if self == other:
            return True
        return (
            self.leader == other.leader
            and self.replicas == other.replicas
            and sorted(self.isr) == sorted(other.isr)
        )


@dataclass(frozen=True)
class Baseline:
    """The partition state the next snapshot is compared with, and when it was read."""

    ts: datetime
    states: dict[Key, PartitionState]


@dataclass(frozen=True)
class PartitionChanges:
    changed: list[Key]  # new or different, to write to partition_state
    removed: list[Key]  # gone from the metadata, to write to partition_removed
    full: bool  # first state of the day (or ever): every partition is written
    baseline: Baseline  # what the next snapshot compares with


def utc(ts: datetime) -> datetime:
    """`ts` as aware UTC (a naive one is taken to be UTC already)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def unreadable_topics(snapshot: ClusterSnapshot) -> set[str]:
    """Topics listed in the metadata whose partitions could not be read (`partitions:<topic>`)."""
    return {m.part.split(":", 1)[1] for m in snapshot.missing if m.part.startswith("partitions:")}


def partition_states(snapshot: ClusterSnapshot) -> dict[Key, PartitionState]:
    return {
        (p.topic, p.partition): PartitionState(p.leader, tuple(p.replicas), tuple(p.isr))
        for p in snapshot.partitions
    }


def diff_partitions(previous: Baseline | None, snapshot: ClusterSnapshot) -> PartitionChanges | None:
    """Changes of `snapshot` against `previous`; None when the snapshot has no metadata.

    Partitions of topics whose metadata could not be read keep their previous state (an
    unreadable topic is not a deleted one).
    """
    if not snapshot.reachable:
        return None
    ts = utc(snapshot.taken_at)
    current = partition_states(snapshot)
    unreadable = unreadable_topics(snapshot)
    full = previous is None or utc(previous.ts).date() != ts.date()
    old = previous.states if previous is not None else {}
    if full:
        changed = sorted(current)
    else:
        changed = sorted(k for k, s in current.items() if k not in old or not old[k].same_as(s))
    removed = sorted(k for k in old if k not in current and k[0] not in unreadable)
    kept = {k: s for k, s in old.items() if k[0] in unreadable and k not in current}
    return PartitionChanges(changed, removed, full, Baseline(ts, {**kept, **current}))


# ---------------------------------------------------------------------------- Arrow tables
def _table(schema: pa.Schema, ts: datetime, columns: Mapping[str, list[object]]) -> pa.Table:
    """Columns as lists, plus `ts` repeated (converting 100k datetimes one by one costs ~1 s)."""
    n = len(next(iter(columns.values())))
    arrays = [
        pa.repeat(pa.scalar(utc(ts), type=f.type), n)
        if f.name == "ts"
        else pa.array(columns[f.name], type=f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def partition_state_table(ts: datetime, states: Mapping[Key, PartitionState], keys: list[Key]) -> pa.Table:
    return _table(
        PARTITION_STATE,
        ts,
        {
            "topic": [k[0] for k in keys],
            "partition": [k[1] for k in keys],
            "leader": [states[k].leader for k in keys],
            "replicas": [states[k].replicas for k in keys],
            "isr": [states[k].isr for k in keys],
        },
    )


def baseline_table(baseline: Baseline) -> pa.Table:
    return partition_state_table(baseline.ts, baseline.states, sorted(baseline.states))


def _tuples(column: pa.ChunkedArray) -> list[tuple[int, ...]]:
    """A list<int32> column as tuples, via its flat values (to_pylist per cell is ~10x slower)."""
    array = column.combine_chunks()
    values, offsets = array.values.to_pylist(), array.offsets.to_pylist()
    return [tuple(values[offsets[i] : offsets[i + 1]]) for i in range(len(array))]


def baseline_from_table(table: pa.Table) -> Baseline | None:
    if table.num_rows == 0:
        return None
    keys = zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True)
    rows = zip(
        table.column("leader").to_pylist(),
        _tuples(table.column("replicas")),
        _tuples(table.column("isr")),
        strict=True,
    )
    states = {key: PartitionState(*row) for key, row in zip(keys, rows, strict=True)}
    return Baseline(utc(pc.max(table.column("ts")).as_py()), states)


def removed_table(ts: datetime, keys: list[Key]) -> pa.Table:
    return _table(PARTITION_REMOVED, ts, {"topic": [k[0] for k in keys], "partition": [k[1] for k in keys]})


def broker_samples(snapshot: ClusterSnapshot) -> pa.Table:
    """Per broker: alive, used bytes summed over its log dirs (None when none was read), and
    total bytes only when every one of its log dirs reports it (as the Spark sample does)."""
    dirs: dict[int, list[tuple[int | None, int | None]]] = {}
    for d in snapshot.log_dirs:
        dirs.setdefault(d.broker_id, []).append((d.used_bytes, d.total_bytes))
    rows = []
    for b in sorted(snapshot.brokers, key=lambda b: b.id):
        mine = dirs.get(b.id, [])
        used = [u for u, _ in mine if u is not None]
        totals = [t for _, t in mine if t is not None]
        rows.append(
            (
                b.id,
                b.alive,
                sum(used) if used else None,
                sum(totals) if mine and len(totals) == len(mine) else None,
            )
        )
    return _table(
        BROKER_SAMPLES,
        snapshot.taken_at,
        {
            "broker": [r[0] for r in rows],
            "alive": [r[1] for r in rows],
            "used_bytes": [r[2] for r in rows],
            "total_bytes": [r[3] for r in rows],
        },
    )


def group_samples(snapshot: ClusterSnapshot) -> pa.Table:
    groups = sorted(snapshot.groups, key=lambda g: g.group_id)
    return _table(
        GROUP_SAMPLES,
        snapshot.taken_at,
        {
            "group_id": [g.group_id for g in groups],
            "state": [g.state for g in groups],
            "members": [g.members for g in groups],
            "member_hash": [member_hash(g.member_ids) for g in groups],
        },
    )


def group_offset_samples(snapshot: ClusterSnapshot) -> pa.Table:
    """Per group and partition: the committed offset beside the partition's start/end offsets."""
    ends = {(o.topic, o.partition): o for o in snapshot.offsets}
    rows = [
        (g.group_id, o.topic, o.partition, o.committed_offset, ends.get((o.topic, o.partition)))
        for g in sorted(snapshot.groups, key=lambda g: g.group_id)
        for o in g.offsets
    ]
    return _table(
        GROUP_OFFSET_SAMPLES,
        snapshot.taken_at,
        {
            "group_id": [r[0] for r in rows],
            "topic": [r[1] for r in rows],
            "partition": [r[2] for r in rows],
            "committed_offset": [r[3] for r in rows],
            "log_start_offset": [r[4].log_start_offset if r[4] else None for r in rows],
            "log_end_offset": [r[4].log_end_offset if r[4] else None for r in rows],
        },
    )


def replica_lag_samples(snapshot: ClusterSnapshot) -> pa.Table:
    """Per replica behind its leader: its lag in bytes."""
    lags = sorted(snapshot.replica_lags, key=lambda r: (r.topic, r.partition, r.broker))
    return _table(
        REPLICA_LAG_SAMPLES,
        snapshot.taken_at,
        {
            "topic": [r.topic for r in lags],
            "partition": [r.partition for r in lags],
            "broker": [r.broker for r in lags],
            "lag_bytes": [r.lag_bytes for r in lags],
        },
    )
