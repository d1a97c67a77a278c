"""History windows kept in Spark between cycles: read from Parquet once, then advanced in memory.

Kept as Spark frames, for a session whose plans are not reused (a Spark cluster, Spark Connect);
where they are (an embedded local master, `reuse.available`), the operator keeps the windows as
rows in the driver JVM instead (`slot_windows.SlotWindows`), which the reused plans read directly.

The operator diagnoses the same cluster every interval, and each cycle adds one sample per
history table. Reading the windows back from Parquet every cycle re-lists and re-decodes files
for every check that reads them. Instead, a policy's worker keeps, per sample table, the rows
of the longest span any check reads (`frames.spans`): a checkpointed Spark frame (the base)
plus the rows each cycle since has written, each cycle's rows a frame of their own, so adding a
sample copies nothing. Every `FOLD_EVERY` cycles those frames are folded into a new base and the
rows that fell out of the span are dropped (until then reads leave them out). partition_state
is kept as what the flapping checks derive from it: its transitions over the window (each record
beside the record before it, kept the same way), and each partition's newest record, which the
next cycle's records are paired with; so no cycle sorts a day of records again. Parquet stays
the durable store and the source of truth: it is read at the first cycle (and so after an
operator restart), after history maintenance (retention, compaction), and when new thresholds
change the spans. `tests/spark/test_windows.py` proves that the windows kept this way equal the
windows read from Parquet after many random cycles.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_health_spark import tables
from kafka_health_spark.frames import (
    HISTORY_SCHEMAS,
    PRIOR_STATE_LOOKBACK,
    TRANSITION_COLUMNS,
    read_history,
    release_frame,
    spans,
    to_frame,
    transitions_of,
)
from kafka_health_spark.thresholds import Thresholds

log = logging.getLogger(__name__)


def _parallelism(spark: SparkSession) -> int:
    """The cores a job can use: local[N]'s N, a cluster's executor cores (2 through Spark
    Connect, where the client cannot ask)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext on the client
        return 2


# The sample tables the checks read, kept as rows of their span.
WINDOW_TABLES = ("broker_samples", "group_samples", "group_offset_samples", "replica_lag_samples")
# partition_state is kept as what the checks derive from it, each cycle's records folded in:
# the transitions of the window (a record beside the record before it), and the newest record
# of each partition, which the next cycle's records are paired with.
TRANSITIONS = "partition_transitions"
LATEST = "partition_latest"
_KEY = ["topic", "partition"]
# Cycles whose new rows are kept beside a window's base before they are folded into it. Each
# cycle's rows are a frame of their own until then, so a cycle does not copy the whole window
# (a week of group samples, for the offsets-retention lookback) to add one sample.
FOLD_EVERY = 8


class HistoryWindows:
    """One cluster's history windows, owned by the worker that diagnoses it (one cycle at a time)."""

    def __init__(self, spark: SparkSession, root: str, cluster: str, *, fold_every: int = FOLD_EVERY) -> None:
        self.spark = spark
        self.root = root
        self.cluster = cluster
        self._rows: dict[str, DataFrame] = {}  # each window's base: materialized, lineage cut
        self._recent: dict[str, list[DataFrame]] = {}  # each window's rows since its base was folded
        self._spans: dict[str, timedelta] = {}
        self._newest: datetime | None = None  # the newest ts the kept rows cover
        self._lock = threading.Lock()
        self.loads = 0  # how often Parquet was read (the bench and the tests count them)
        self.folds = 0  # how often a window's cycles were folded into its base (the tests count them)
        self.fold_every = fold_every
        self.partitions = _parallelism(spark)

    def past(self, table: str, since: datetime, until: datetime) -> DataFrame:
        """Rows of `table` with `since <= ts < until` (the `frames.PastRows` interface), for the
        sample tables (`WINDOW_TABLES`); partition_state is served as `transitions`."""
        if table not in WINDOW_TABLES:
            raise ValueError(
                f"{table} is not kept as rows (kept: {', '.join(WINDOW_TABLES)}; partition_state: transitions())"
            )
        since, until = tables.utc(since), tables.utc(until)
        with self._lock:
            rows, since = self._window(table, since, self._spans.get(table))
        return rows.where((F.col("ts") >= F.lit(since)) & (F.col("ts") < F.lit(until)))

    def transitions(self, since: datetime, until: datetime) -> DataFrame:
        """partition_state records with `since <= ts < until` beside the record before them, when
        that record lies within `PRIOR_STATE_LOOKBACK` before `since` (the
        `frames.PastTransitions` interface: what `transitions_of` gives over the records read
        from Parquet)."""
        since, until = tables.utc(since), tables.utc(until)
        with self._lock:
            span = self._spans.get("partition_state")
            recent = None if span is None else span - PRIOR_STATE_LOOKBACK
            rows, since_kept = self._window(TRANSITIONS, since, recent)
        return rows.where(
            (F.col("ts") >= F.lit(since_kept))
            & (F.col("ts") < F.lit(until))
            & (F.col("prev_ts") >= F.lit(since - PRIOR_STATE_LOOKBACK))
        )

    def prepare(self, thresholds: Thresholds, now: datetime) -> None:
        """Make sure the windows hold everything up to `now` for these thresholds (reads Parquet
        when nothing is held yet, or when the spans changed)."""
        wanted = spans(thresholds)
        with self._lock:
            if self._rows and wanted == self._spans:
                return
            self._load(wanted, tables.utc(now))

    def record(self, written: Mapping[str, pa.Table], ts: datetime) -> None:
        """Fold in the rows the history store wrote for the snapshot taken at `ts`, and drop the
        rows older than each table's span. Rows the last Parquet read already covered are skipped."""
        ts = tables.utc(ts)
        with self._lock:
            if not self._rows or (self._newest is not None and ts <= self._newest):
                return
            for table in WINDOW_TABLES:
                new = written.get(table)
                if new is not None and new.num_rows:
                    # The rows as written (Arrow in the JVM): nothing to compute, so no job.
                    self._recent[table].append(self._frame(table, new))
                self._fold_if_due(table, ts - self._spans[table])
            self._record_partition_state(written.get("partition_state"), ts)
            self._newest = ts

    def invalidate(self) -> None:
        """Forget the rows: the next cycle reads Parquet again (after maintenance changed it)."""
        with self._lock:
            for table in list(self._rows):
                release_frame(self._rows.pop(table))
                for frame in self._recent.pop(table, []):
                    release_frame(frame)
            self._spans = {}
            self._newest = None

    # ------------------------------------------------------------------ internals
    def _frame(self, table: str, rows: pa.Table) -> DataFrame:
        return to_frame(self.spark, rows.select(HISTORY_SCHEMAS[table].names), HISTORY_SCHEMAS[table])

    def _record_partition_state(self, new: pa.Table | None, ts: datetime) -> None:
        """Pair the partitions' new records with their newest record so far (a transition each),
        drop the transitions that left the window, and make the new records the newest.

        A newest record older than the longest span can never be a record before one in the
        window (`transitions` asks for one within `PRIOR_STATE_LOOKBACK` before the window), so
        it is dropped too; a partition's next record then starts it again, as it would in the
        records read from Parquet."""
        recent = self._spans["partition_state"] - PRIOR_STATE_LOOKBACK
        latest = self._rows[LATEST]
        if new is not None and new.num_rows:
            records = self._frame("partition_state", new)
            before = latest.select(
                *_KEY,
                F.col("ts").alias("prev_ts"),
                F.col("leader").alias("prev_leader"),
                F.col("isr").alias("prev_isr"),
            )
            # Materialized before LATEST is replaced: the pairing reads the newest records so far.
            paired = records.join(before, _KEY).select(*TRANSITION_COLUMNS)
            self._recent[TRANSITIONS].append(self._materialize(paired))
            latest = latest.join(records.select(*_KEY), _KEY, "left_anti").unionByName(records)
        self._fold_if_due(TRANSITIONS, ts - recent)
        self._replace(LATEST, latest.where(F.col("ts") >= F.lit(ts - self._spans["partition_state"])))

    def _load(self, wanted: dict[str, timedelta], now: datetime) -> None:
        end = now + timedelta(microseconds=1)  # the snapshot at `now` may already be written
        for frames in self._recent.values():
            for frame in frames:
                release_frame(frame)
        self._recent = {table: [] for table in (*WINDOW_TABLES, TRANSITIONS)}
        for table in WINDOW_TABLES:
            self._replace(
                table, read_history(self.spark, self.root, table, self.cluster, now - wanted[table], end)
            )
        span = wanted["partition_state"]
        records = read_history(self.spark, self.root, "partition_state", self.cluster, now - span, end)
        since = now - (span - PRIOR_STATE_LOOKBACK)
        self._replace(TRANSITIONS, transitions_of(records).where(F.col("ts") >= F.lit(since)))
        newest = (
            records.groupBy(*_KEY)
            .agg(F.max_by(F.struct("ts", "leader", "replicas", "isr"), "ts").alias("s"))
            .select("s.ts", *_KEY, "s.leader", "s.replicas", "s.isr")
        )
        self._replace(LATEST, newest)
        self._spans = wanted
        self._newest = now
        self.loads += 1
        log.debug("history windows of %s read from Parquet (load %d)", self.cluster, self.loads)

    def _window(self, table: str, since: datetime, span: timedelta | None) -> tuple[DataFrame, datetime]:
        """Under the lock: `table`'s kept rows (its base and the cycles since), and the bound the
        rows read must not start before: `since`, or the span back from the newest sample when
        that is later (rows a fold has not dropped yet are not served)."""
        if self._rows.get(table) is None or span is None or self._newest is None:
            raise RuntimeError(f"history windows of {self.cluster} are not loaded; call prepare() first")
        rows = self._kept(table)
        if self._recent[table]:
            rows = rows.coalesce(self.partitions)  # as many tasks as cores, however many frames
        return rows, max(since, self._newest - span)

    def _kept(self, table: str) -> DataFrame:
        """Under the lock: `table`'s base and the frames of the cycles since, as one frame."""
        rows = self._rows[table]
        for frame in self._recent[table]:
            rows = rows.unionByName(frame)
        return rows

    def _fold_if_due(self, table: str, oldest: datetime) -> None:
        """Every `fold_every` cycles: fold the cycles kept beside `table`'s base into it, dropping
        the rows older than `oldest` (out of the span)."""
        recent = self._recent[table]
        if len(recent) < self.fold_every:
            return
        self._replace(table, self._kept(table).where(F.col("ts") >= F.lit(oldest)))
        for frame in recent:
            release_frame(frame)
        self._recent[table] = []
        self.folds += 1

    def _materialize(self, rows: DataFrame) -> DataFrame:
        """A local checkpoint of `rows`: computed once, lineage cut, so the plan of a window never
        grows with the number of cycles. Coalesced to the session's parallelism first: each
        union adds its frames' partitions, so without it a window read by every check would be
        a day's worth of partitions (tasks) after a day of cycles."""
        return rows.coalesce(self.partitions).localCheckpoint(eager=True)

    def _replace(self, table: str, rows: DataFrame) -> None:
        """Materialize `rows` as `table`'s base, then free the previous base's blocks."""
        fresh = self._materialize(rows)
        old = self._rows.get(table)
        self._rows[table] = fresh
        if old is not None:
            release_frame(old)
