"""`ClusterSnapshot` → Arrow tables, one per kind of row, with fixed schemas.

Arrow is the hand-over format: Spark (`frames`) builds DataFrames from these tables in one
transfer instead of pickling a million Python rows, and the bench's DuckDB queries the very
same tables. Nothing here knows about Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pyarrow as pa

from kafka_health.history.schema import member_hash
from kafka_health.models.snapshot import ClusterSnapshot

I32, I64, STR, BOOL = pa.int32(), pa.int64(), pa.string(), pa.bool_()
TS = pa.timestamp("us", tz="UTC")

BROKERS = pa.schema(
    [("broker", I32), ("host", STR), ("port", I32), ("rack", STR), ("alive", BOOL), ("fenced", BOOL)]
)
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
        ("leader_replication_throttled_replicas", STR),
        ("follower_replication_throttled_replicas", STR),
    ]
)
OFFSETS = pa.schema(
    [
        ("topic", STR),
        ("partition", I32),
        ("log_start_offset", I64),
        ("log_end_offset", I64),
        ("last_stable_offset", I64),
    ]
)
GROUPS = pa.schema([("group_id", STR), ("state", STR), ("kind", STR), ("members", I32), ("member_hash", STR)])
GROUP_OFFSETS = pa.schema(
    [
        ("group_id", STR),
        ("topic", STR),
        ("partition", I32),
        ("committed_offset", I64),
        ("committed_timestamp", TS),  # consumerLag.timeLag Exact: the record at the committed offset
    ]
)
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
# KIP-966: the partitions out of sync or offline that have eligible leader replicas, one row each
# (a few rows, not one per partition).
ELIGIBLE_LEADERS = pa.schema(
    [("topic", STR), ("partition", I32), ("elr", pa.list_(I32)), ("last_known_elr", pa.list_(I32))]
)
# The partition reassignments in flight, one row each (none on a quiet cluster).
REASSIGNMENTS = pa.schema(
    [
        ("topic", STR),
        ("partition", I32),
        ("replicas", pa.list_(I32)),
        ("adding", pa.list_(I32)),
        ("removing", pa.list_(I32)),
    ]
)
# The certificate chain each broker serves on a TLS listener (none on a plaintext connection).
LISTENER_CERTIFICATES = pa.schema(
    [
        ("broker", I32),
        ("address", STR),
        ("subject", STR),
        ("issuer", STR),
        ("fingerprint_sha256", STR),
        ("leaf_not_after", TS),
        ("not_after", TS),
        ("expiring", STR),
        ("chain_length", I32),
        ("verified", BOOL),
        ("verify_error", STR),
    ]
)
# Transactions open longer than the transaction timeout (the hangingTransactions check only).
OPEN_TRANSACTIONS = pa.schema(
    [
        ("topic", STR),
        ("partition", I32),
        ("producer_id", I64),
        ("producer_epoch", I32),
        ("coordinator_epoch", I32),
        ("start_offset", I64),
        ("last_timestamp", TS),
        ("transactional_id", STR),
        ("coordinator_state", STR),
        ("coordinator_lists_partition", BOOL),
    ]
)
# Each replica out of sync (or being added) and how far it trails its leader, in bytes (a few
# rows: only the replicas behind).
REPLICA_LAGS = pa.schema(
    [
        ("topic", STR),
        ("partition", I32),
        ("broker", I32),
        ("size_bytes", I64),
        ("leader_size_bytes", I64),
        ("lag_bytes", I64),
    ]
)
# The brokers with a replication throttle rate set (bytes/s; null: not set).
BROKER_THROTTLES = pa.schema([("broker", I32), ("leader_rate", I64), ("follower_rate", I64)])
# The consumer-protocol group members whose assignment differs from their target (KIP-848), one
# row each (a few rows: only the members reconciling), with the partitions "topic-partition" they
# still own but must revoke and those they are still to gain, and since when (null: not recorded
# in a history, so not known).
RECONCILING_MEMBERS = pa.schema(
    [
        ("group_id", STR),
        ("member_id", STR),
        ("client_id", STR),
        ("host", STR),
        ("to_revoke", pa.list_(STR)),
        ("to_gain", pa.list_(STR)),
        ("mismatch_since", TS),
    ]
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
    "eligible_leaders": ELIGIBLE_LEADERS,
    "reassignments": REASSIGNMENTS,
    "listener_certificates": LISTENER_CERTIFICATES,
    "open_transactions": OPEN_TRANSACTIONS,
    "replica_lags": REPLICA_LAGS,
    "broker_throttles": BROKER_THROTTLES,
    "reconciling_members": RECONCILING_MEMBERS,
}


def utc(ts: datetime) -> datetime:
    """`ts` as an aware UTC datetime (a naive one is taken to be UTC already)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _table(schema: pa.Schema, columns: dict[str, list[object]]) -> pa.Table:
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)


def _fields(schema: pa.Schema, rows: Sequence[object]) -> pa.Table:
    """A table of `rows` whose columns are the models' fields of the same names."""
    return _table(schema, {f.name: [getattr(r, f.name) for r in rows] for f in schema})


def snapshot_tables(snapshot: ClusterSnapshot) -> dict[str, pa.Table]:
    """Every part of the snapshot as an Arrow table (empty, with its schema, when not read)."""
    return {name: build(snapshot) for name, build in _BUILDERS.items()}


def _brokers(s: ClusterSnapshot) -> pa.Table:
    return _table(
        BROKERS,
        {
            "broker": [b.id for b in s.brokers],
            "host": [b.host for b in s.brokers],
            "port": [b.port for b in s.brokers],
            "rack": [b.rack for b in s.brokers],
            "alive": [b.alive for b in s.brokers],
            "fenced": [b.fenced for b in s.brokers],
        },
    )


def _partitions(s: ClusterSnapshot) -> pa.Table:
    parts = s.partitions
    return _table(
        PARTITIONS,
        {
            "topic": [p.topic for p in parts],
            "partition": [p.partition for p in parts],
            # Some clients report an offline partition's leader as -1: one spelling, null.
            "leader": [p.leader if p.leader is not None and p.leader >= 0 else None for p in parts],
            "replicas": [p.replicas for p in parts],
            "isr": [p.isr for p in parts],
        },
    )


def _topic_configs(s: ClusterSnapshot) -> pa.Table:
    return _fields(TOPIC_CONFIGS, s.topic_configs)


def _offsets(s: ClusterSnapshot) -> pa.Table:
    return _table(
        OFFSETS,
        {
            "topic": [o.topic for o in s.offsets],
            "partition": [o.partition for o in s.offsets],
            "log_start_offset": [o.log_start_offset for o in s.offsets],
            "log_end_offset": [o.log_end_offset for o in s.offsets],
            "last_stable_offset": [o.last_stable_offset for o in s.offsets],
        },
    )


def _groups(s: ClusterSnapshot) -> pa.Table:
    return _table(
        GROUPS,
        {
            "group_id": [g.group_id for g in s.groups],
            "state": [g.state for g in s.groups],
            "kind": [g.kind for g in s.groups],
            "members": [g.members for g in s.groups],
            "member_hash": [member_hash(g.member_ids) for g in s.groups],
        },
    )


def _group_offsets(s: ClusterSnapshot) -> pa.Table:
    group_offsets = [(g.group_id, o) for g in s.groups for o in g.offsets]
    return _table(
        GROUP_OFFSETS,
        {
            "group_id": [gid for gid, _ in group_offsets],
            "topic": [o.topic for _, o in group_offsets],
            "partition": [o.partition for _, o in group_offsets],
            "committed_offset": [o.committed_offset for _, o in group_offsets],
            "committed_timestamp": [o.committed_timestamp for _, o in group_offsets],
        },
    )


def _log_dirs(s: ClusterSnapshot) -> pa.Table:
    return _table(
        LOG_DIRS,
        {
            "broker": [d.broker_id for d in s.log_dirs],
            "path": [d.path for d in s.log_dirs],
            "used_bytes": [d.used_bytes for d in s.log_dirs],
            "total_bytes": [d.total_bytes for d in s.log_dirs],
            "usable_bytes": [d.usable_bytes for d in s.log_dirs],
            "error": [d.error for d in s.log_dirs],
        },
    )


def _quorum(s: ClusterSnapshot) -> pa.Table:
    q = s.quorum
    return _table(
        QUORUM,
        {
            "leader_id": [q.leader_id] if q else [],
            "leader_epoch": [q.leader_epoch] if q else [],
            "high_watermark": [q.high_watermark] if q else [],
        },
    )


def _quorum_voters(s: ClusterSnapshot) -> pa.Table:
    voters = s.quorum.voters if s.quorum else []
    members = [*voters, *(s.quorum.observers if s.quorum else [])]
    return _table(
        QUORUM_VOTERS,
        {
            "voter": [v.id for v in members],
            "log_end_offset": [v.log_end_offset for v in members],
            "lag": [v.lag for v in members],
            "last_caught_up_ms": [v.last_caught_up_ms for v in members],
            "observer": [i >= len(voters) for i in range(len(members))],
        },
    )


def _eligible_leaders(s: ClusterSnapshot) -> pa.Table:
    return _fields(ELIGIBLE_LEADERS, s.eligible_leaders)


def _reassignments(s: ClusterSnapshot) -> pa.Table:
    return _fields(REASSIGNMENTS, s.reassignments)


def _listener_certificates(s: ClusterSnapshot) -> pa.Table:
    return _fields(LISTENER_CERTIFICATES, s.listener_certificates)


def _open_transactions(s: ClusterSnapshot) -> pa.Table:
    return _fields(OPEN_TRANSACTIONS, s.open_transactions)


def _reconciling_members(s: ClusterSnapshot) -> pa.Table:
    def names(keys: set[tuple[str, int]]) -> list[str]:
        return [f"{t}-{p}" for t, p in sorted(keys)]

    rows = [(g.group_id, m) for g in s.groups for m in g.member_details if m.reconciling]
    return _table(
        RECONCILING_MEMBERS,
        {
            "group_id": [g for g, _ in rows],
            "member_id": [m.member_id for _, m in rows],
            "client_id": [m.client_id for _, m in rows],
            "host": [m.host for _, m in rows],
            "to_revoke": [names(set(m.assignment) - set(m.target or [])) for _, m in rows],
            "to_gain": [names(set(m.target or []) - set(m.assignment)) for _, m in rows],
            "mismatch_since": [m.mismatch_since for _, m in rows],
        },
    )


# One builder per table, in the order the tables have always had.
_BUILDERS: dict[str, Callable[[ClusterSnapshot], pa.Table]] = {
    "brokers": _brokers,
    "partitions": _partitions,
    "topic_configs": _topic_configs,
    "offsets": _offsets,
    "groups": _groups,
    "group_offsets": _group_offsets,
    "log_dirs": _log_dirs,
    "quorum": _quorum,
    "quorum_voters": _quorum_voters,
    "eligible_leaders": _eligible_leaders,
    "reassignments": _reassignments,
    "listener_certificates": _listener_certificates,
    "open_transactions": _open_transactions,
    "replica_lags": lambda s: _fields(REPLICA_LAGS, s.replica_lags),
    "broker_throttles": lambda s: _fields(BROKER_THROTTLES, s.broker_throttles),
    "reconciling_members": _reconciling_members,
}
