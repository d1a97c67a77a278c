"""How far each replica out of sync trails its leader, from the log dirs the collector reads anyway.

Kafka tells a client nothing of a follower's log end offset: the only per-replica figure it
answers is each replica's log size, in every broker's DescribeLogDirs answer (which the
snapshot reads for disk usage and the visibility check). So a replica's lag is read as the
leader's size minus its own, in bytes, for the replicas that matter: out of the ISR, or being
added by a reassignment, of a partition with a live leader. A replica whose broker, or whose
leader's broker, did not answer has no figure (its `log_dirs:<broker>` part is missing).

Bytes, not records, and not exact: each replica deletes old segments at its own pace, so two
replicas in sync can differ by a segment. For a replica that is behind, the difference is what
it still has to copy, and its trend over the history (shrinking, or not) is what the
diagnosis needs (`catching_up`, `stuck`, the reassignment's progress and ETA).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_health.models.snapshot import LogDir, Partition, Reassignment, ReplicaLag


def replica_sizes(log_dirs: Iterable[LogDir]) -> dict[tuple[str, int, int], int]:
    """(topic, partition, broker) -> the current replica's size (the larger, in the rare moment
    a replica is listed in two directories)."""
    out: dict[tuple[str, int, int], int] = {}
    for d in log_dirs:
        for topic, sizes in d.sizes.items():
            for partition, size in sizes.items():
                key = (topic, partition, d.broker_id)
                out[key] = max(size, out.get(key, 0))
    return out


def behind(p: Partition, adding: Iterable[int]) -> list[int]:
    """The replicas of `p` that trail its leader: out of the ISR, or being added (in the ISR
    only once caught up, but named by the reassignment until it completes)."""
    return sorted((set(p.replicas) - set(p.isr) | set(adding)) - {p.leader})


def replica_lags(
    partitions: Iterable[Partition], reassignments: Iterable[Reassignment], log_dirs: Iterable[LogDir]
) -> list[ReplicaLag]:
    """Each replica `behind` its live leader whose size and leader's size were both read."""
    adding = {(r.topic, r.partition): r.adding for r in reassignments}
    sizes = replica_sizes(log_dirs)
    out: list[ReplicaLag] = []
    for p in partitions:
        if p.leader is None:
            continue
        late = behind(p, adding.get((p.topic, p.partition), []))
        lead = sizes.get((p.topic, p.partition, p.leader)) if late else None
        if lead is None:
            continue
        for broker in late:
            size = sizes.get((p.topic, p.partition, broker))
            if size is not None:
                out.append(
                    ReplicaLag(
                        topic=p.topic,
                        partition=p.partition,
                        broker=broker,
                        size_bytes=size,
                        leader_size_bytes=lead,
                    )
                )
    return out
