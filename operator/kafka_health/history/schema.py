"""The Parquet tables of the history store: the contract between `history` (writes, pyarrow)
and `kafka_health_spark` (reads, Spark).

Layout: `<root>/<table>/cluster=<name>/date=<YYYY-MM-DD>/<part>.parquet` (Hive partitioning,
so Spark and DuckDB prune by cluster and date). Only changes and samples are appended each
cycle, never the whole state again, so a 100k-partition cluster sampled every 30 s does not
mean rescanning gigabytes: the full state of the newest snapshot is kept once per cluster in
`<root>/latest/cluster=<name>/snapshot.json` (overwritten).

Every table has `ts` (timestamp[us, UTC], the snapshot's taken_at); `cluster` and `date` are
the partition columns (not stored in the files). `date` is the UTC date of `ts` (YYYY-MM-DD);
`cluster` values are escaped in the path the way Hive/Spark escape partition values (`:` →
`%3A`, ...), and Spark/pyarrow decode them back. Files whose names start with `.` or `_` are
in-flight temporaries (Spark and pyarrow skip them).

Besides `snapshot.json`, `<root>/latest/cluster=<name>/partition_state.parquet` holds the
partition state (PARTITION_STATE schema) of the newest snapshot that could read metadata: the
baseline the next cycle's changes are computed against. A snapshot that could not read the
metadata (or one topic's partitions) changes nothing in it and writes no partition rows. And
`<root>/latest/cluster=<name>/reconciling.json` holds the consumer-group members whose assignment
differed from their target in the newest snapshot, with since when (`history.reconciliation`).

Writers: `kafka_health.history.store.HistoryStore`; each cycle adds one small file per table
and date, and `compact()` merges a date's files into one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")

# Leader / ISR / replica-set of a partition, written when it differs from the previous snapshot
# (and for every partition in the first snapshot of a day, so each date is self-contained).
PARTITION_STATE = pa.schema(
    [
        ("ts", TS),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("leader", pa.int32()),  # null: offline
        ("replicas", pa.list_(pa.int32())),
        ("isr", pa.list_(pa.int32())),
    ]
)

# Per broker per snapshot: registration and disk usage (summed over its log dirs).
BROKER_SAMPLES = pa.schema(
    [
        ("ts", TS),
        ("broker", pa.int32()),
        ("alive", pa.bool_()),
        ("used_bytes", pa.int64()),
        ("total_bytes", pa.int64()),  # null when the broker does not report volume size
    ]
)

# Per group per snapshot: state and membership (a changing member set means a rebalance).
GROUP_SAMPLES = pa.schema(
    [
        ("ts", TS),
        ("group_id", pa.string()),
        ("state", pa.string()),
        ("members", pa.int32()),
        ("member_hash", pa.string()),  # stable hash of the sorted member ids: `member_hash()`
    ]
)


def member_hash(member_ids: Iterable[str]) -> str:
    """GROUP_SAMPLES.member_hash: sha256 of the sorted member ids joined by newlines, 16 hex digits.

    Writers of samples (history, and Spark's current sample) must agree on it, or every
    comparison with history would look like a membership change.
    """
    return hashlib.sha256("\n".join(sorted(member_ids)).encode()).hexdigest()[:16]


# Per group per partition per snapshot: committed offset beside the partition's end offsets.
GROUP_OFFSET_SAMPLES = pa.schema(
    [
        ("ts", TS),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),  # null: nothing committed
        ("log_start_offset", pa.int64()),
        ("log_end_offset", pa.int64()),
    ]
)

# Per replica out of sync (or being added by a reassignment) per snapshot: how far it trails its
# leader in bytes (`ClusterSnapshot.replica_lags`). Its trend tells catching up from stuck, and
# gives a reassignment its rate and ETA. Only the replicas behind: none on a healthy cluster.
REPLICA_LAG_SAMPLES = pa.schema(
    [
        ("ts", TS),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("broker", pa.int32()),
        ("lag_bytes", pa.int64()),
    ]
)

# Added by the history writer: a partition that was in the previous snapshot's metadata and is
# no longer (its topic was deleted). Without it, "the state at time t" would keep showing the
# partition until the next day's full state.
PARTITION_REMOVED = pa.schema(
    [
        ("ts", TS),
        ("topic", pa.string()),
        ("partition", pa.int32()),
    ]
)

TABLES: dict[str, pa.Schema] = {
    "partition_state": PARTITION_STATE,
    "broker_samples": BROKER_SAMPLES,
    "group_samples": GROUP_SAMPLES,
    "group_offset_samples": GROUP_OFFSET_SAMPLES,
    "replica_lag_samples": REPLICA_LAG_SAMPLES,
    "partition_removed": PARTITION_REMOVED,
}
