"""The DataFrames every check reads: the snapshot's parts, and the history windows around it.

Snapshot → DataFrames goes through Arrow (`tables`) with explicit Spark schemas, so an empty
part is still a typed, empty DataFrame. History tables (the Parquet contract of
`kafka_health.history.schema`) are read with the partition columns `cluster` and `date` in the
filter, so Spark opens only that cluster's files of the dates the window touches, and the
current snapshot is appended as the newest sample: a check sees one continuous series whether
or not the history already holds this snapshot.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafka_health.history.schema import TABLES as HISTORY_TABLES
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark import tables
from kafka_health_spark.thresholds import Thresholds


def spark_type(arrow_type: pa.DataType) -> T.DataType:
    """The Spark type of each Arrow type the snapshot and history tables use."""
    if pa.types.is_int32(arrow_type):
        return T.IntegerType()
    if pa.types.is_int64(arrow_type):
        return T.LongType()
    if pa.types.is_string(arrow_type):
        return T.StringType()
    if pa.types.is_boolean(arrow_type):
        return T.BooleanType()
    if pa.types.is_timestamp(arrow_type):
        return T.TimestampType()
    if pa.types.is_list(arrow_type):
        return T.ArrayType(spark_type(arrow_type.value_type))
    raise TypeError(f"no Spark type mapped for Arrow type {arrow_type}")


def spark_schema(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in schema])


SNAPSHOT_SCHEMAS: dict[str, T.StructType] = {n: spark_schema(s) for n, s in tables.SCHEMAS.items()}
HISTORY_SCHEMAS: dict[str, T.StructType] = {n: spark_schema(s) for n, s in HISTORY_TABLES.items()}
# The Hive partition columns of the history layout; `date` stays a string (ISO dates sort as text).
# A changed partition's state before the window is its last record within this much before it
# (the history writes every partition on the first snapshot of each day).
PRIOR_STATE_LOOKBACK = timedelta(days=1)
PARTITION_COLUMNS = [T.StructField("cluster", T.StringType()), T.StructField("date", T.StringType())]


def history_read_schema(table: str) -> T.StructType:
    """A history table's columns plus its partition columns, as a new schema (the module's
    schemas are shared: StructType.add would change them for every later reader)."""
    return T.StructType([*HISTORY_SCHEMAS[table].fields, *PARTITION_COLUMNS])


# Rows per Spark partition of a frame built from Arrow (the session's Arrow batch size too).
ROWS_PER_PARTITION = 100_000


# Up to this many partitions a cluster is small: a join's small side is not broadcast
# (`Frames.small_side`) and a check's rows are capped as a top k (`findings.capped_rows`).
# Measured at 10k (a warm cycle 15-20 % less CPU with both); at 100k the runs that had the top k
# on were confounded by their order (docs/diagnostics.md, "late night"), so a larger cluster
# keeps the window and the broadcasts the engine always had until a run in both orders says.
SMALL_CLUSTER_PARTITIONS = 20_000


def is_small_cluster(partition_count: int) -> bool:
    """Whether a cluster of `partition_count` partitions is small (`SMALL_CLUSTER_PARTITIONS`)."""
    return partition_count <= SMALL_CLUSTER_PARTITIONS


@dataclass(frozen=True)
class Totals:
    """A snapshot's sizes, counted from its Arrow tables (no Spark job for the summary's totals)."""

    topic_count: int
    partition_count: int
    group_count: int

    @classmethod
    def of(cls, arrow: Mapping[str, pa.Table]) -> Totals:
        return cls(
            topic_count=int(pc.count_distinct(arrow["partitions"]["topic"]).as_py()),
            partition_count=arrow["partitions"].num_rows,
            group_count=arrow["groups"].num_rows,
        )


def partitions_for(rows: int) -> int:
    """Spark partitions for `rows`: one per `ROWS_PER_PARTITION`, at least one."""
    return max(1, -(-rows // ROWS_PER_PARTITION))


def to_frame(spark: SparkSession, table: pa.Table, schema: T.StructType) -> DataFrame:
    """`table` as a DataFrame of one partition per `ROWS_PER_PARTITION` rows. Spark spreads a
    small table over every core (empty partitions included), and every partition is one more
    task in every stage that reads it: at 10k partitions a cycle ran ~390 tasks, a third of
    them over empty or tiny slices."""
    return spark.createDataFrame(table, schema=schema).coalesce(partitions_for(table.num_rows))


def release_frame(frame: DataFrame) -> None:
    """Unpersist a checkpointed frame's blocks now instead of at the JVM's next GC (embedded
    and cluster sessions; Spark Connect frees them when the client frame is collected)."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:
        return
    with contextlib.suppress(Exception):  # best effort: the context cleaner frees them later
        jdf.queryExecution().analyzed().rdd().unpersist(False)


def empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """No rows, in a way Spark's optimizer can see: `limit(0)` becomes an empty local relation,
    and every plan built only on it is pruned without a job (an empty Python list alone becomes
    an RDD Spark must run to find empty)."""
    return spark.createDataFrame([], schema=schema).limit(0)


def read_history(
    spark: SparkSession,
    root: str,
    table: str,
    cluster: str,
    since: datetime,
    until: datetime,
) -> DataFrame:
    """Rows of one history table for `cluster` with `since <= ts < until` (empty when none).

    The filter on the partition columns prunes directories before any file is opened; the
    filter on `ts` is pushed into the Parquet reader, which skips row groups outside the window.
    """
    schema = HISTORY_SCHEMAS[table]
    since, until = tables.utc(since), tables.utc(until)
    full = history_read_schema(table)
    try:
        df = spark.read.schema(full).parquet(f"{root.rstrip('/')}/{table}")
        df.schema  # noqa: B018 - Spark Connect resolves lazily; a missing path must fail here
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" in str(exc) or "does not exist" in str(exc):
            return empty_frame(spark, schema)
        raise
    return df.where(
        (F.col("cluster") == cluster)
        & F.col("date").between(since.date().isoformat(), until.date().isoformat())
        & (F.col("ts") >= F.lit(since))
        & (F.col("ts") < F.lit(until))
    ).select(*schema.names)


# Rows of a history table with `since <= ts < until`: read from Parquet (`parquet_reader`) or from
# windows kept in memory between cycles (`kafka_health_spark.windows.HistoryWindows.past`).
PastRows = Callable[[str, datetime, datetime], DataFrame]


def parquet_reader(spark: SparkSession, root: str, cluster: str) -> PastRows:
    def read(table: str, since: datetime, until: datetime) -> DataFrame:
        return read_history(spark, root, table, cluster, since, until)

    return read


@dataclass(frozen=True)
class Frames:
    """Everything one diagnosis reads, as DataFrames (built lazily: no job runs until collect)."""

    cluster: str
    now: datetime
    brokers: DataFrame
    partitions: DataFrame
    topic_configs: DataFrame
    offsets: DataFrame
    groups: DataFrame
    group_offsets: DataFrame
    log_dirs: DataFrame
    quorum: DataFrame
    quorum_voters: DataFrame
    eligible_leaders: DataFrame  # KIP-966 ELR of the partitions out of sync or offline that have one
    reassignments: DataFrame  # partition reassignments in flight (adding / removing replicas)
    listener_certificates: DataFrame  # the chain each broker serves on a TLS listener
    open_transactions: DataFrame  # transactions open longer than the timeout (when read)
    replica_lags: DataFrame  # each replica behind its leader, and by how many bytes
    broker_throttles: DataFrame  # the brokers with a replication throttle rate set
    reconciling_members: DataFrame  # group members whose assignment differs from their target
    # History windows, each ending with the current snapshot as its newest sample.
    # partition_transitions: each partition_state record of the window beside the record before
    # it (see `transitions_of`); a partition's first record, with nothing before it, is left out.
    partition_transitions: DataFrame
    broker_samples: DataFrame
    group_samples: DataFrame
    group_offset_samples: DataFrame
    replica_lag_samples: DataFrame  # the replicas' lag over twice `replica_stuck_minutes`
    group_activity: DataFrame  # group_samples over the offsets-retention lookback
    # The snapshot's sizes, counted from its Arrow tables (no Spark job for the summary's totals).
    topic_count: int
    partition_count: int
    group_count: int
    # Set on the frames a policy's reused plans are built over (`kafka_health_spark.reuse`):
    # `now` read when a plan runs instead of inlined, materialized frames kept in slots, and
    # whether the plans run in one partition (joins hinted `shuffle_hash`: `hinted_join`).
    now_param: Column | None = field(default=None, repr=False, compare=False)
    one_partition: bool = field(default=False, repr=False, compare=False)
    materialize_with: Callable[[str, DataFrame], DataFrame] | None = field(
        default=None, repr=False, compare=False
    )
    _shared: dict[str, DataFrame] = field(default_factory=dict, repr=False, compare=False)
    _materialized: list[DataFrame] = field(default_factory=list, repr=False, compare=False)
    _building: dict[str, threading.Lock] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def now_col(self) -> Column:
        if self.now_param is not None:
            return self.now_param
        return F.lit(self.now).cast("timestamp")

    @property
    def small_cluster(self) -> bool:
        return is_small_cluster(self.partition_count)

    def small_side(self, df: DataFrame) -> DataFrame:
        """`df` as the small side of a join with the partitions: hinted to broadcast for a
        cluster above `SMALL_CLUSTER_PARTITIONS` (a plain join would shuffle and sort all its
        partitions), left to a plain join for a small one, where the broadcast is the costlier
        part (one more Spark job: a warm 10k cycle ran 4 % less CPU without the hints). In one
        partition the join hashes its smaller side instead (`join`): no broadcast."""
        return df if self.small_cluster or self.one_partition else F.broadcast(df)

    def join(self, left: DataFrame, right: DataFrame, on: str | list[str], how: str = "inner") -> DataFrame:
        """`left.join(right, on, how)`, as a shuffled hash join when these frames' plans run in
        one partition (`hinted_join`)."""
        return hinted_join(left, right, on, how, hashed=self.one_partition)

    def shared(
        self, name: str, build: Callable[[Frames], DataFrame], *, materialize: bool = False
    ) -> DataFrame:
        """A frame derived once and reused by several checks (built and analysed once, not per check).

        `materialize` computes it once, now, as a local checkpoint: for a frame whose rows cost a
        sort or a join and that several checks (or one check, twice) read, so its work runs once
        per cycle instead of once per reader. `release()` frees it when the cycle is over."""
        # Checks run in threads. Each name is built under its own lock, so a checkpoint being
        # computed for one frame keeps no check waiting that needs another.
        with self._lock:
            building = self._building.setdefault(name, threading.Lock())
        with building:
            if name not in self._shared:
                frame = build(self)
                kept = materialize and self.materialize_with is None
                if materialize and self.materialize_with is not None:
                    frame = self.materialize_with(name, frame)
                elif kept:
                    frame = frame.localCheckpoint(eager=True)
                with self._lock:
                    self._shared[name] = frame
                    if kept:
                        self._materialized.append(frame)
            return self._shared[name]

    def release(self) -> None:
        """Free the blocks of the frames `shared` materialized (the diagnosis has collected)."""
        with self._lock:
            while self._materialized:
                release_frame(self._materialized.pop())


def hinted_join(
    left: DataFrame, right: DataFrame, on: str | list[str], how: str = "inner", *, hashed: bool = False
) -> DataFrame:
    """`left.join(right, on, how)`; `hashed`: both sides hinted `shuffle_hash` (Spark's public
    join hints), for plans that run in one partition (`reuse`). Spark's planner then makes the
    join a shuffled hash join building the smaller side by the slots' statistics (or the side
    its type allows), never a sort-merge join, which in one partition sorts both sides whole
    before a row comes out; the exchanges it plans are coalesced away (`Plans.inOnePartition`)."""
    if hashed:
        left, right = left.hint("shuffle_hash"), right.hint("shuffle_hash")
    return left.join(right, on, how)


def current_samples(
    frames: Mapping[str, DataFrame], now: datetime | Column, *, hashed: bool = False
) -> dict[str, DataFrame]:
    """The snapshot as one row set per history table, stamped `now` (as the history store writes
    it): a time, or a column (a reused plan's `now` parameter). `hashed`: see `hinted_join`."""
    ts = (now if isinstance(now, Column) else F.lit(now).cast("timestamp")).alias("ts")
    dirs = (
        frames["log_dirs"]
        .groupBy("broker")
        .agg(
            F.sum("used_bytes").alias("used_bytes"),
            # A broker's volume size is known only when every one of its log dirs reports it.
            F.when(F.count("total_bytes") == F.count(F.lit(1)), F.sum("total_bytes")).alias("total_bytes"),
        )
    )
    brokers = frames["brokers"].select("broker", "alive")
    broker_samples = hinted_join(brokers, dirs, "broker", "left", hashed=hashed).select(
        ts,
        F.col("broker").cast("int").alias("broker"),
        F.coalesce(F.col("alive"), F.lit(False)).alias("alive"),
        "used_bytes",
        "total_bytes",
    )
    offsets = frames["offsets"]
    return {
        "partition_state": frames["partitions"].select(ts, "topic", "partition", "leader", "replicas", "isr"),
        "broker_samples": broker_samples,
        "group_samples": frames["groups"].select(ts, "group_id", "state", "members", "member_hash"),
        "group_offset_samples": hinted_join(
            frames["group_offsets"], offsets, ["topic", "partition"], "left", hashed=hashed
        ).select(
            ts, "group_id", "topic", "partition", "committed_offset", "log_start_offset", "log_end_offset"
        ),
        "replica_lag_samples": frames["replica_lags"].select(ts, "topic", "partition", "broker", "lag_bytes"),
    }


def _partition_changes(past: PastRows, since: datetime, now: datetime, current: DataFrame) -> DataFrame:
    """The partition states a flapping check needs: for each partition with records in the
    window, its state before `since`, its records in [since, now], and its current state.

    The history writes a partition only when it changed (and every partition in the first
    snapshot of a day), so a partition without records in the window did not change in it, and
    its state before `since` is its last record within the preceding day. Leaving the others out
    keeps the sort small: a 1M-partition cluster has only its changed partitions here. (When this
    snapshot is not recorded, a change exactly now of a partition with no other record in the
    window is not seen: one change, never a flap on its own.) A record at `now` both in the
    history and in `current` is the same state twice, which is no transition.
    """
    window = past("partition_state", since, now + timedelta(microseconds=1))
    changed = window.select("topic", "partition").distinct()
    before = past("partition_state", since - PRIOR_STATE_LOOKBACK, since)
    prior = (
        before.join(changed, ["topic", "partition"], "left_semi")
        .groupBy("topic", "partition")
        .agg(F.max_by(F.struct("ts", "leader", "replicas", "isr"), "ts").alias("s"))
        .select("s.ts", "topic", "partition", "s.leader", "s.replicas", "s.isr")
    )
    return prior.unionByName(window).unionByName(current.join(changed, ["topic", "partition"], "left_semi"))


# A partition transition: a partition_state record and the record before it.
TRANSITIONS_SCHEMA = T.StructType(
    [
        *HISTORY_SCHEMAS["partition_state"].fields,
        T.StructField("prev_ts", T.TimestampType()),
        T.StructField("prev_leader", T.IntegerType()),
        T.StructField("prev_isr", T.ArrayType(T.IntegerType())),
    ]
)
TRANSITION_COLUMNS = TRANSITIONS_SCHEMA.names


def transitions_of(records: DataFrame) -> DataFrame:
    """Each partition_state record beside the one before it of the same partition, in time
    order; a partition's first record (nothing before it) is left out."""
    w = Window.partitionBy("topic", "partition").orderBy("ts")
    return (
        records.withColumn("prev_ts", F.lag("ts").over(w))
        .withColumn("prev_leader", F.lag("leader").over(w))
        .withColumn("prev_isr", F.lag("isr").over(w))
        .where(F.col("prev_ts").isNotNull())
        .select(*TRANSITION_COLUMNS)
    )


# Rows of `partition_transitions` with `since <= ts < until` whose record before lies within
# PRIOR_STATE_LOOKBACK before `since`: kept in memory between cycles
# (`kafka_health_spark.windows.HistoryWindows.transitions`).
PastTransitions = Callable[[datetime, datetime], DataFrame]


def spans(thresholds: Thresholds) -> dict[str, timedelta]:
    """How far back each history table is read, at most (the longest window over it)."""
    recent = timedelta(minutes=thresholds.window_minutes)
    return {
        "partition_state": recent + PRIOR_STATE_LOOKBACK,
        "broker_samples": timedelta(hours=thresholds.disk_growth_window_hours),
        "group_samples": max(recent, timedelta(hours=thresholds.offsets_retention_hours)),
        "group_offset_samples": recent,
        "replica_lag_samples": timedelta(minutes=2 * thresholds.replica_stuck_minutes),
    }


# The history windows of a diagnosis, each a frame of `Frames` that ends with the snapshot's own
# sample (`current_samples`): the history table it reads, and how far back (`window_bounds`).
SAMPLE_WINDOWS = (
    "broker_samples",
    "group_samples",
    "group_offset_samples",
    "replica_lag_samples",
    "group_activity",
)


def window_bounds(thresholds: Thresholds, now: datetime) -> dict[str, tuple[str, datetime, datetime]]:
    """Per sample window of `Frames`: the history table it reads and its rows' bounds
    `[since, until)` (the snapshot's own sample is added to them)."""
    recent = timedelta(minutes=thresholds.window_minutes)
    return {
        "broker_samples": ("broker_samples", now - timedelta(hours=thresholds.disk_growth_window_hours), now),
        "group_samples": ("group_samples", now - recent, now),
        "group_offset_samples": ("group_offset_samples", now - recent, now),
        "replica_lag_samples": (
            "replica_lag_samples",
            now - timedelta(minutes=2 * thresholds.replica_stuck_minutes),
            now,
        ),
        "group_activity": ("group_samples", now - timedelta(hours=thresholds.offsets_retention_hours), now),
    }


def transition_bounds(thresholds: Thresholds, now: datetime) -> tuple[datetime, datetime]:
    """The bounds `[since, until)` of `Frames.partition_transitions`: the window, `now` included
    (the history already holds the snapshot's changed partitions)."""
    return now - timedelta(minutes=thresholds.window_minutes), now + timedelta(microseconds=1)


def build_frames(
    spark: SparkSession,
    snapshot: ClusterSnapshot,
    history_root: str | None,
    thresholds: Thresholds,
    *,
    past: PastRows | None = None,
    transitions: PastTransitions | None = None,
) -> Frames:
    """The snapshot and its history windows as DataFrames. The windows come from `past` and
    `transitions` (rows kept in memory, which already hold this snapshot), else from the Parquet
    history under `history_root`; with neither, the snapshot alone."""
    now = tables.utc(snapshot.taken_at)
    arrow = tables.snapshot_tables(snapshot)
    totals = Totals.of(arrow)
    snap = {name: to_frame(spark, arrow[name], SNAPSHOT_SCHEMAS[name]) for name in arrow}
    current = current_samples(snap, now)
    if past is None and history_root is not None:
        past = parquet_reader(spark, history_root, snapshot.cluster)

    bounds = window_bounds(thresholds, now)

    def window(name: str) -> DataFrame:
        table, since, until = bounds[name]
        sample = current[table]
        return sample if past is None else past(table, since, until).unionByName(sample)

    recent, _ = transition_bounds(thresholds, now)
    if transitions is not None:
        partition_transitions = transitions(*transition_bounds(thresholds, now))
    elif past is not None:
        partition_transitions = transitions_of(
            _partition_changes(past, recent, now, current["partition_state"])
        )
    else:
        partition_transitions = empty_frame(spark, TRANSITIONS_SCHEMA)
    return Frames(
        cluster=snapshot.cluster,
        now=now,
        brokers=snap["brokers"],
        partitions=snap["partitions"],
        topic_configs=snap["topic_configs"],
        offsets=snap["offsets"],
        groups=snap["groups"],
        group_offsets=snap["group_offsets"],
        log_dirs=snap["log_dirs"],
        quorum=snap["quorum"],
        quorum_voters=snap["quorum_voters"],
        eligible_leaders=snap["eligible_leaders"],
        reassignments=snap["reassignments"],
        listener_certificates=snap["listener_certificates"],
        open_transactions=snap["open_transactions"],
        replica_lags=snap["replica_lags"],
        broker_throttles=snap["broker_throttles"],
        reconciling_members=snap["reconciling_members"],
        partition_transitions=partition_transitions,
        broker_samples=window("broker_samples"),
        group_samples=window("group_samples"),
        group_offset_samples=window("group_offset_samples"),
        replica_lag_samples=window("replica_lag_samples"),
        group_activity=window("group_activity"),
        topic_count=totals.topic_count,
        partition_count=totals.partition_count,
        group_count=totals.group_count,
    )
