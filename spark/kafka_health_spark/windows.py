"""History windows kept in Spark between cycles: read from Parquet once, then advanced in memory.

The operator diagnoses the same cluster every interval, and each cycle adds one sample per
history table. Reading the windows back from Parquet every cycle re-lists and re-decodes files
for every check that reads them. Instead, a policy's worker keeps, per history table, the rows
of the longest span any check reads (`frames.spans`) as a checkpointed Spark frame: each cycle
folds in the rows the history store has just written and drops the rows that fell out of the
span. Parquet stays the durable store and the source of truth: it is read at the first cycle
(and so after an operator restart), after history maintenance (retention, compaction), and when
new thresholds change the spans. `tests/spark/test_windows.py` proves that the windows kept
this way equal the windows read from Parquet after many random cycles.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_health_spark import tables
from kafka_health_spark.frames import HISTORY_SCHEMAS, read_history, spans, to_frame
from kafka_health_spark.thresholds import Thresholds

log = logging.getLogger(__name__)

# The history tables the checks read (partition_removed is the writer's own bookkeeping).
WINDOW_TABLES = ("partition_state", "broker_samples", "group_samples", "group_offset_samples")


class HistoryWindows:
    """One cluster's history windows, owned by the worker that diagnoses it (one cycle at a time)."""

    def __init__(self, spark: SparkSession, root: str, cluster: str) -> None:
        self.spark = spark
        self.root = root
        self.cluster = cluster
        self._rows: dict[str, DataFrame] = {}
        self._spans: dict[str, timedelta] = {}
        self._newest: datetime | None = None  # the newest ts the kept rows cover
        self._lock = threading.Lock()
        self.loads = 0  # how often Parquet was read (the bench and the tests count them)

    def past(self, table: str, since: datetime, until: datetime) -> DataFrame:
        """Rows of `table` with `since <= ts < until` (the `frames.PastRows` interface)."""
        since, until = tables.utc(since), tables.utc(until)
        with self._lock:
            rows = self._rows.get(table)
        if rows is None:
            raise RuntimeError(f"history windows of {self.cluster} are not loaded; call prepare() first")
        return rows.where((F.col("ts") >= F.lit(since)) & (F.col("ts") < F.lit(until)))

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
                kept = self._rows[table].where(F.col("ts") >= F.lit(ts - self._spans[table]))
                new = written.get(table)
                if new is not None and new.num_rows:
                    frame = to_frame(
                        self.spark, new.select(HISTORY_SCHEMAS[table].names), HISTORY_SCHEMAS[table]
                    )
                    kept = kept.unionByName(frame)
                self._replace(table, kept)
            self._newest = ts

    def invalidate(self) -> None:
        """Forget the rows: the next cycle reads Parquet again (after maintenance changed it)."""
        with self._lock:
            for table in list(self._rows):
                self._release(self._rows.pop(table))
            self._spans = {}
            self._newest = None

    # ------------------------------------------------------------------ internals
    def _load(self, wanted: dict[str, timedelta], now: datetime) -> None:
        end = now + timedelta(microseconds=1)  # the snapshot at `now` may already be written
        for table in WINDOW_TABLES:
            self._replace(
                table, read_history(self.spark, self.root, table, self.cluster, now - wanted[table], end)
            )
        self._spans = wanted
        self._newest = now
        self.loads += 1
        log.debug("history windows of %s read from Parquet (load %d)", self.cluster, self.loads)

    def _replace(self, table: str, rows: DataFrame) -> None:
        """Materialize `rows` (a local checkpoint: computed once, lineage cut, so the plan of a
        window never grows with the number of cycles), then free the previous frame's blocks."""
        fresh = rows.localCheckpoint(eager=True)
        old = self._rows.get(table)
        self._rows[table] = fresh
        if old is not None:
            self._release(old)

    @staticmethod
    def _release(frame: DataFrame) -> None:
        """Unpersist a checkpointed frame's blocks now instead of at the JVM's next GC (embedded
        and cluster sessions; Spark Connect frees them when the client frame is collected)."""
        jdf = getattr(frame, "_jdf", None)
        if jdf is None:
            return
        with contextlib.suppress(Exception):  # best effort: the context cleaner frees them later
            jdf.queryExecution().analyzed().rdd().unpersist(False)
