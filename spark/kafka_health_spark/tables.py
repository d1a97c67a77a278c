"""`ClusterSnapshot` → Arrow tables, one per kind of row, with fixed schemas.

Arrow is the hand-over format: Spark (`frames`) builds DataFrames from these tables in one
transfer instead of pickling a million Python rows, and the bench's DuckDB queries the very
same tables. Nothing here knows about Spark.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from kafka_health.history.schema import member_hash
from kafka_health.models.snapshot import ClusterSnapshot

I32, I64, STR, BOOL = pa.int32(), pa.int64(), pa.string(), pa.bool_()

BROKERS = pa.schema([("broker", I32), ("host", STR), ("port", I32), ("rack", STR), ("alive", BOOL)])
PARTITIONS = pa.schema(
    [
        ("topic", STR),
        ("partition", I32),
        ("leader", I32),  # null: offline
        ("replicas", pa.list_(I32)),
        ("isr", pa.list_(I32)),
    ]
)
TOPIC_CONFIGS = pa.schema(
    [
        ("topic", STR),
        ("min_insync_replicas", I32),
        ("unclean_leader_election_enable", BOOL),
        ("retention_ms", I64),
        ("retention_bytes", I64),
        ("cleanup_policy", STR),
    ]
)
OFFSETS = pa.schema([("topic", STR), ("partition", I32), ("log_start_offset", I64), ("log_end_offset", I64)])
GROUPS = pa.schema([("group_id", STR), ("state", STR), ("members", I32), ("member_hash", STR)])
GROUP_OFFSETS = pa.schema([("group_id", STR), ("topic", STR), ("partition", I32), ("committed_offset", I64)])
LOG_DIRS = pa.schema(
    [
        ("broker", I32),
        ("path", STR),
        ("used_bytes", I64),
        ("total_bytes", I64),
        ("usable_bytes", I64),
        ("error", STR),
    ]
)
QUORUM = pa.schema([("leader_id", I32), ("leader_epoch", I64), ("high_watermark", I64)])
# The quorum's voters and its observers (brokers that only replicate the metadata log), one row each.
QUORUM_VOTERS = pa.schema(
    [("voter", I32), ("log_end_offset", I64), ("lag", I64), ("last_caught_up_ms", I64), ("observer", BOOL)]
)

SCHEMAS: dict[str, pa.Schema] = {
    "brokers": BROKERS,
    "partitions": PARTITIONS,
    "topic_configs": TOPIC_CONFIGS,
    "offsets": OFFSETS,
    "groups": GROUPS,
    "group_offsets": GROUP_OFFSETS,
    "log_dirs": LOG_DIRS,
    "quorum": QUORUM,
    "quorum_voters": QUORUM_VOTERS,
}


def utc(ts: datetime) -> datetime:
    """`ts` as an aware UTC datetime (a naive one is taken to be UTC already)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _table(schema: pa.Schema, columns: dict[str, list[object]]) -> pa.Table:
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)


def snapshot_tables(snapshot: ClusterSnapshot) -> dict[str, pa.Table]:
    """Every part of the snapshot as an Arrow table (empty, with its schema, when not read)."""
    s = snapshot
    parts = s.partitions
    voters = s.quorum.voters if s.quorum else []
    members = [*voters, *(s.quorum.observers if s.quorum else [])]
    group_offsets = [(g.group_id, o) for g in s.groups for o in g.offsets]
    return {
        "brokers": _table(
            BROKERS,
            {
                "broker": [b.id for b in s.brokers],
                "host": [b.host for b in s.brokers],
                "port": [b.port for b in s.brokers],
                "rack": [b.rack for b in s.brokers],
                "alive": [b.alive for b in s.brokers],
            },
        ),
        "partitions": _table(
            PARTITIONS,
            {
                "topic": [p.topic for p in parts],
                "partition": [p.partition for p in parts],
                # Some clients report an offline partition's leader as -1: one spelling, null.
                "leader": [p.leader if p.leader is not None and p.leader >= 0 else None for p in parts],
                "replicas": [p.replicas for p in parts],
                "isr": [p.isr for p in parts],
            },
        ),
        "topic_configs": _table(
            TOPIC_CONFIGS,
            {
                "topic": [c.topic for c in s.topic_configs],
                "min_insync_replicas": [c.min_insync_replicas for c in s.topic_configs],
                "unclean_leader_election_enable": [c.unclean_leader_election_enable for c in s.topic_configs],
                "retention_ms": [c.retention_ms for c in s.topic_configs],
                "retention_bytes": [c.retention_bytes for c in s.topic_configs],
                "cleanup_policy": [c.cleanup_policy for c in s.topic_configs],
            },
        ),
        "offsets": _table(
            OFFSETS,
            {
                "topic": [o.topic for o in s.offsets],
                "partition": [o.partition for o in s.offsets],
                "log_start_offset": [o.log_start_offset for o in s.offsets],
                "log_end_offset": [o.log_end_offset for o in s.offsets],
            },
        ),
        "groups": _table(
            GROUPS,
            {
                "group_id": [g.group_id for g in s.groups],
                "state": [g.state for g in s.groups],
                "members": [g.members for g in s.groups],
                "member_hash": [member_hash(g.member_ids) for g in s.groups],
            },
        ),
        "group_offsets": _table(
            GROUP_OFFSETS,
            {
                "group_id": [gid for gid, _ in group_offsets],
                "topic": [o.topic for _, o in group_offsets],
                "partition": [o.partition for _, o in group_offsets],
                "committed_offset": [o.committed_offset for _, o in group_offsets],
            },
        ),
        "log_dirs": _table(
            LOG_DIRS,
            {
                "broker": [d.broker_id for d in s.log_dirs],
                "path": [d.path for d in s.log_dirs],
                "used_bytes": [d.used_bytes for d in s.log_dirs],
                "total_bytes": [d.total_bytes for d in s.log_dirs],
                "usable_bytes": [d.usable_bytes for d in s.log_dirs],
                "error": [d.error for d in s.log_dirs],
            },
        ),
        "quorum": _table(
            QUORUM,
            {
                "leader_id": [s.quorum.leader_id] if s.quorum else [],
                "leader_epoch": [s.quorum.leader_epoch] if s.quorum else [],
                "high_watermark": [s.quorum.high_watermark] if s.quorum else [],
            },
        ),
        "quorum_voters": _table(
            QUORUM_VOTERS,
            {
                "voter": [v.id for v in members],
                "log_end_offset": [v.log_end_offset for v in members],
                "lag": [v.lag for v in members],
                "last_caught_up_ms": [v.last_caught_up_ms for v in members],
                "observer": [i >= len(voters) for i in range(len(members))],
            },
        ),
    }
