"""Synthetic clusters for the diagnosis bench: a snapshot of N partitions and a day of history.

Deterministic for a given size, so the worker processes of the bench rebuild the very snapshot
whose history the orchestrator wrote. The history is written straight to the Parquet layout of
`kafka_health.history` (one file per table and date, row groups in time order, as `compact()`
leaves them) with numpy, because appending a day of 1M-partition snapshots one by one would take
longer than the bench itself. Faults are planted in every check family, so no check runs on
empty input: a dead broker, a flapping broker, flapping leaders, leaders off their preferred
broker, stalled / stopped / slow / rewound consumer groups (of every kind in turn: classic, consumer,
share, streams), a rebalancing group, a filling disk,
weak topic settings and a lagging controller voter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_health.history import layout
from kafka_health.history.schema import TABLES, member_hash
from kafka_health.models.snapshot import (
    GROUP_KINDS,
    Broker,
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    LogDir,
    Partition,
    PartitionOffsets,
    Quorum,
    QuorumVoter,
    ReplicaLag,
    StreamsTopology,
    TopicConfig,
)

CLUSTER = "bench"
DAY = datetime(2026, 3, 2, tzinfo=UTC)
PARTITIONS_PER_TOPIC = 50
TB = 1024**4
GB = 1024**3


@dataclass(frozen=True)
class Shape:
    """Everything derived from the partition count."""

    partitions: int
    interval_s: int

    @property
    def topics(self) -> int:
        return self.partitions // PARTITIONS_PER_TOPIC

    @property
    def brokers(self) -> int:
        return max(6, self.partitions // 4000)

    @property
    def groups(self) -> int:
        return max(5, self.partitions // 1000)  # group g consumes topic g: 5 % of the partitions

    @property
    def samples(self) -> int:
        """History samples over the day before the diagnosed snapshot."""
        return 86400 // self.interval_s - 1

    @property
    def now(self) -> datetime:
        return DAY + timedelta(seconds=self.samples * self.interval_s)

    @property
    def dead(self) -> int:
        return self.brokers - 1  # down for the last two hours

    def ts(self, k: np.ndarray | int) -> np.ndarray:
        """Sample k's time in µs since the epoch (k = samples: the diagnosed snapshot)."""
        return int(DAY.timestamp() * 1e6) + np.asarray(k, dtype=np.int64) * self.interval_s * 1_000_000


FLAPPING_BROKER = 1
IMBALANCED_BROKER = 2
STALLED, STOPPED, SLOW, REWOUND, REBALANCING = 0, 1, 2, 3, 4


def _assignment(shape: Shape) -> tuple[np.ndarray, np.ndarray]:
    """(topic, partition) → 3 replicas, preferred leaders round-robin over brokers."""
    idx = np.arange(shape.partitions)
    first = (idx * 7 + idx // PARTITIONS_PER_TOPIC) % shape.brokers
    replicas = np.stack([first, (first + 1) % shape.brokers, (first + 2) % shape.brokers], axis=1)
    rf1 = idx >= shape.partitions - 2 * PARTITIONS_PER_TOPIC  # the last two topics have RF 1
    return replicas.astype(np.int32), rf1


@dataclass(frozen=True)
class State:
    """Partition state as arrays: replicas (n, 3) with a validity mask (RF 1 uses one column), ISR mask."""

    leaders: np.ndarray  # -1: offline
    replicas: np.ndarray
    assigned: np.ndarray
    in_sync: np.ndarray

    def lists(self, mask: np.ndarray, idx: np.ndarray) -> pa.Array:
        """list<int32> of the replicas selected by `mask` for partitions `idx` (vectorized)."""
        sel = mask[idx]
        counts = sel.sum(axis=1)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(self.replicas[idx][sel].astype(np.int32)))

    def replica_lists(self, idx: np.ndarray) -> list[list[int]]:
        return self.lists(self.assigned, idx).to_pylist()

    def isr_lists(self, idx: np.ndarray) -> list[list[int]]:
        return self.lists(self.in_sync, idx).to_pylist()


def _state_at(shape: Shape, k: int) -> State:
    """Leader, replicas and ISR of every partition at sample k (k = shape.samples: now)."""
    replicas, rf1 = _assignment(shape)
    n = shape.partitions
    per_hour = 3600 // shape.interval_s
    dead = k >= shape.samples - 2 * per_hour
    flapping_out = k >= shape.samples - per_hour and k % 4 == 1  # broker 1 out of ISRs now and then
    assigned = np.ones((n, 3), dtype=bool)
    assigned[rf1, 1:] = False
    in_sync = assigned.copy()
    if dead:
        in_sync &= replicas != shape.dead
    if flapping_out:
        in_sync &= replicas != FLAPPING_BROKER
    leaders = replicas[:, 0].copy()
    off_pref = (replicas[:, 0] == IMBALANCED_BROKER) & (np.arange(n) % 3 == 0)
    leaders[off_pref] = replicas[off_pref, 1]
    if k >= shape.samples - per_hour // 2 and k % 2 == 1:
        flappers = np.arange(min(20, n))
        leaders[flappers] = replicas[flappers, 1]
    # A leader must be in sync: else the first in-sync replica leads; none in sync: offline.
    leader_ok = ((replicas == leaders[:, None]) & in_sync).any(axis=1)
    first_in_sync = np.where(in_sync.any(axis=1), replicas[np.arange(n), in_sync.argmax(axis=1)], -1)
    leaders = np.where(leader_ok, leaders, first_in_sync).astype(np.int32)
    return State(leaders, replicas, assigned, in_sync)


def _offsets(shape: Shape, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(end, committed, start) offsets of every consumed partition at samples k: shape (len(k), GP)."""
    gp = shape.groups * PARTITIONS_PER_TOPIC
    group = np.arange(gp) // PARTITIONS_PER_TOPIC
    rate = 10 + (np.arange(gp) % 17)  # messages per second per partition
    t = (k[:, None] * shape.interval_s).astype(np.int64)
    end = 1_000_000 + rate[None, :] * t
    lag = (np.arange(gp)[None, :] + k[:, None]) % 50  # small, often zero
    committed = end - lag
    last = shape.samples
    frozen = end[:, :1] * 0 + (1_000_000 + rate[None, :] * (last - 30) * shape.interval_s)
    stuck = (group == STALLED) | (group == STOPPED)
    committed = np.where(stuck[None, :] & (k[:, None] >= last - 30), frozen, committed)
    committed = np.where((group == SLOW)[None, :], end - 100 - k[:, None] * 37, committed)
    rewound = (group == REWOUND)[None, :] & (k[:, None] >= last - 3)
    committed = np.where(rewound, committed - 500_000, committed)
    start = np.maximum(end - 5_000_000, 0)
    return end, committed, start


def snapshot(shape: Shape, k: int | None = None) -> ClusterSnapshot:
    """The snapshot at sample k (default: the one being diagnosed, `shape.samples`), built with
    model_construct: validation is not what we time. Successive k drift as the history does:
    a broker dies two hours before the end, another keeps leaving ISRs, leaders flap, lag grows."""
    k = shape.samples if k is None else k
    taken_at = DAY + timedelta(seconds=k * shape.interval_s)
    dead_now = k >= shape.samples - 2 * (3600 // shape.interval_s)
    state = _state_at(shape, k)
    n = shape.partitions
    leaders, reps, isrs = state.leaders, state.replica_lists(np.arange(n)), state.isr_lists(np.arange(n))
    topic_names = [f"topic-{t:06d}" for t in range(shape.topics)]
    partitions = [
        Partition.model_construct(
            topic=topic_names[i // PARTITIONS_PER_TOPIC],
            partition=i % PARTITIONS_PER_TOPIC,
            leader=int(leaders[i]) if leaders[i] >= 0 else None,
            replicas=reps[i],
            isr=isrs[i],
        )
        for i in range(n)
    ]
    end, committed, start = _offsets(shape, np.array([k]))
    consumed = shape.groups * PARTITIONS_PER_TOPIC
    offsets = [
        PartitionOffsets.model_construct(
            topic=topic_names[i // PARTITIONS_PER_TOPIC],
            partition=i % PARTITIONS_PER_TOPIC,
            log_start_offset=int(start[0, i]) if i < consumed else 0,
            log_end_offset=int(end[0, i]) if i < consumed else 1000,
            last_stable_offset=int(end[0, i]) if i < consumed else 1000,  # no open transaction
        )
        for i in range(n)
    ]
    groups = []
    for g in range(shape.groups):
        members = [] if g == STOPPED else [f"consumer-{g}-{m}" for m in range(2)]
        kind = GROUP_KINDS[g % len(GROUP_KINDS)]  # every kind of group, in turn
        groups.append(
            ConsumerGroup.model_construct(
                group_id=f"group-{g:05d}",
                state="Empty" if g == STOPPED else "Stable",
                kind=kind,
                members=len(members),
                member_ids=members,
                member_details=[],
                streams=(
                    StreamsTopology.model_construct(
                        topology_epoch=0, source_topics={"0": [topic_names[g]]}, missing_source_topics=[]
                    )
                    if kind == "streams"
                    else None
                ),
                offsets=[
                    GroupOffset.model_construct(
                        topic=topic_names[g],
                        partition=p,
                        committed_offset=int(committed[0, g * PARTITIONS_PER_TOPIC + p]),
                    )
                    for p in range(PARTITIONS_PER_TOPIC)
                ],
            )
        )
    brokers = [
        Broker.model_construct(
            id=b,
            host=f"broker-{b}",
            port=9092,
            rack=None,
            alive=not (dead_now and b == shape.dead),
            fenced=dead_now and b == shape.dead,
        )
        for b in range(shape.brokers)
    ]
    used = _disk_used(shape, np.array([k]))[0]
    log_dirs = [
        LogDir.model_construct(
            broker_id=b,
            path="/var/lib/kafka",
            used_bytes=int(used[b]),
            total_bytes=TB,
            usable_bytes=TB - int(used[b]),
            error=None,
        )
        for b in range(shape.brokers)
        if not (dead_now and b == shape.dead)
    ]
    # The replicas behind their live leader (the broker that keeps leaving ISRs), catching up.
    replica_lags = [
        ReplicaLag.model_construct(
            topic=topic_names[i // PARTITIONS_PER_TOPIC],
            partition=i % PARTITIONS_PER_TOPIC,
            broker=b,
            size_bytes=GB - 1_000_000 + (k % 100) * 1000,
            leader_size_bytes=GB,
        )
        for i in range(n)
        if leaders[i] >= 0 and len(isrs[i]) < len(reps[i])
        for b in reps[i]
        if b not in isrs[i] and not (dead_now and b == shape.dead)
    ]
    configs = [
        TopicConfig.model_construct(
            topic=name,
            min_insync_replicas=2,
            unclean_leader_election_enable=t % 500 == 7,
            retention_ms=604_800_000,
            retention_bytes=None,
            cleanup_policy="delete",
        )
        for t, name in enumerate(topic_names)
    ]
    last_ms = int(taken_at.timestamp() * 1000)
    quorum = Quorum.model_construct(
        leader_id=0,
        leader_epoch=7,
        high_watermark=500_000,
        voters=[
            QuorumVoter.model_construct(id=0, log_end_offset=500_000, lag=0, last_caught_up_ms=last_ms),
            QuorumVoter.model_construct(id=1, log_end_offset=500_000, lag=0, last_caught_up_ms=last_ms),
            QuorumVoter.model_construct(
                id=2, log_end_offset=480_000, lag=20_000, last_caught_up_ms=last_ms - 600_000
            ),
        ],
        observers=[],
    )
    return ClusterSnapshot.model_construct(
        cluster=CLUSTER,
        taken_at=taken_at,
        cluster_id="bench",
        brokers=brokers,
        quorum=quorum,
        partitions=partitions,
        topic_configs=configs,
        offsets=offsets,
        groups=groups,
        log_dirs=log_dirs,
        replica_lags=replica_lags,
        missing=[],
    )


def _disk_used(shape: Shape, k: np.ndarray) -> np.ndarray:
    """Kafka's bytes per broker at samples k: broker 0 grows towards full in about half a day."""
    base = np.full((len(k), shape.brokers), 0.3 * TB)
    growth = np.zeros(shape.brokers)
    growth[0] = 0.6 * TB / 86400  # bytes per second
    return (base + growth[None, :] * (k[:, None] * shape.interval_s)).astype(np.int64)


def _ts_array(micros: np.ndarray) -> pa.Array:
    return pa.array(micros, type=pa.timestamp("us", tz="UTC"))


def _strings(codes: np.ndarray, names: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names)).cast(pa.string())


def _int_lists(lists: list[list[int]]) -> pa.Array:
    return pa.array(lists, type=pa.list_(pa.int32()))


def _write(root: Path, table: str, batches: list[pa.Table]) -> int:
    schema = TABLES[table]
    path = layout.date_dir(root, table, CLUSTER, DAY.date()) / "part-bench.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for b in batches:
            writer.write_table(b.cast(schema), row_group_size=1_000_000)
            rows += b.num_rows
    return rows


def write_history(shape: Shape, root: Path) -> dict[str, int]:
    """A day of history before `shape.now`, in the history store's layout. Rows per table."""
    topic_names = [f"topic-{t:06d}" for t in range(shape.topics)]
    n, s = shape.partitions, shape.samples
    rows: dict[str, int] = {}

    # partition_state: the day's full state at sample 0, then only partitions that changed.
    def state_table(k: int, state: State, keep: np.ndarray | None) -> pa.Table:
        idx = np.arange(n) if keep is None else np.flatnonzero(keep)
        leaders = state.leaders[idx]
        return pa.table(
            {
                "ts": _ts_array(np.full(len(idx), shape.ts(k))),
                "topic": _strings(idx // PARTITIONS_PER_TOPIC, topic_names),
                "partition": pa.array((idx % PARTITIONS_PER_TOPIC).astype(np.int32)),
                "leader": pa.array(np.where(leaders >= 0, leaders, 0).astype(np.int32), mask=leaders < 0),
                "replicas": state.lists(state.assigned, idx),
                "isr": state.lists(state.in_sync, idx),
            }
        )

    prev = _state_at(shape, 0)
    batches = [state_table(0, prev, None)]
    per_hour = 3600 // shape.interval_s
    for k in range(max(1, s - 3 * per_hour), s):  # nothing changes before the last three hours
        state = _state_at(shape, k)
        changed = (state.leaders != prev.leaders) | (state.in_sync != prev.in_sync).any(axis=1)
        if changed.any():
            batches.append(state_table(k, state, changed))
        prev = state
    rows["partition_state"] = _write(root, "partition_state", batches)

    ks = np.arange(s)
    used = _disk_used(shape, ks)
    b = np.arange(shape.brokers)
    alive = ~((b[None, :] == shape.dead) & (ks[:, None] >= s - 2 * per_hour))
    rows["broker_samples"] = _write(
        root,
        "broker_samples",
        [
            pa.table(
                {
                    "ts": _ts_array(np.repeat(shape.ts(ks), shape.brokers)),
                    "broker": pa.array(np.tile(b, s).astype(np.int32)),
                    "alive": pa.array(alive.ravel()),
                    "used_bytes": pa.array(used.ravel()),
                    "total_bytes": pa.array(np.full(s * shape.brokers, TB, dtype=np.int64)),
                }
            )
        ],
    )

    g = np.arange(shape.groups)
    names = [f"group-{i:05d}" for i in g]
    stable_hash = {i: member_hash([f"consumer-{i}-{m}" for m in range(2)]) for i in g}
    hashes = []
    states = []
    for k in ks:
        for i in g:
            if i == STOPPED and k >= s - 30:
                states.append("Empty")
                hashes.append(member_hash([]))
            elif i == REBALANCING and k >= s - 12:
                states.append("PreparingRebalance" if k % 2 else "Stable")
                hashes.append(member_hash([f"consumer-{i}-{k % 3}"]))
            else:
                states.append("Stable")
                hashes.append(stable_hash[i])
    rows["group_samples"] = _write(
        root,
        "group_samples",
        [
            pa.table(
                {
                    "ts": _ts_array(np.repeat(shape.ts(ks), shape.groups)),
                    "group_id": _strings(np.tile(g, s), names),
                    "state": pa.array(states),
                    "members": pa.array(
                        np.array([0 if st == "Empty" else 2 for st in states], dtype=np.int32)
                    ),
                    "member_hash": pa.array(hashes),
                }
            )
        ],
    )

    gp = shape.groups * PARTITIONS_PER_TOPIC
    chunk = max(1, 2_000_000 // gp)
    batches = []
    for lo in range(0, s, chunk):
        kk = np.arange(lo, min(s, lo + chunk))
        end, committed, start = _offsets(shape, kk)
        m = len(kk)
        batches.append(
            pa.table(
                {
                    "ts": _ts_array(np.repeat(shape.ts(kk), gp)),
                    "group_id": _strings(np.tile(np.arange(gp) // PARTITIONS_PER_TOPIC, m), names),
                    "topic": _strings(np.tile(np.arange(gp) // PARTITIONS_PER_TOPIC, m), topic_names),
                    "partition": pa.array(np.tile(np.arange(gp) % PARTITIONS_PER_TOPIC, m).astype(np.int32)),
                    "committed_offset": pa.array(committed.ravel()),
                    "log_start_offset": pa.array(start.ravel()),
                    "log_end_offset": pa.array(end.ravel()),
                }
            )
        )
    rows["group_offset_samples"] = _write(root, "group_offset_samples", batches)
    return rows
