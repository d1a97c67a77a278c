"""History windows kept as rows in the driver JVM, for a policy whose plans are reused (`reuse`).

`windows.HistoryWindows` keeps each window as Spark frames, and a reused cycle then copied every
window into its slot (one Spark job each, five per cycle), and checkpointed the new partition
transitions (two more): at 100k partitions that was most of what a warm cycle spent outside
the checks. Here the rows stay in the JVM (`jvm/HistoryRows.java`): each sample table as one
chunk of rows per sample time, partition_state as its transitions and each partition's newest
record. A cycle appends the rows the history store wrote (decoded from Arrow: no job), drops what
fell out of the spans, and each window's slot is filled with the chunks of its bounds, shared,
not copied. So filling a window costs no job and generates no code, and the rows are held once,
not once in the windows and again in the slots.

Parquet stays the durable store and the source of truth, read as `HistoryWindows` reads it: at
the first cycle (and so after an operator restart), after history maintenance, and when new
thresholds change the spans. Slots are read by tasks in the driver's JVM, so this serves only
where `reuse.available`; `tests/spark/test_windows.py` proves these windows equal the windows
read from Parquet after many random cycles, as it does for `HistoryWindows`.
"""

from __future__ import annotations

import itertools
import logging
import threading
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from kafka_health_spark import tables
from kafka_health_spark.frames import (
    HISTORY_SCHEMAS,
    PRIOR_STATE_LOOKBACK,
    TRANSITIONS_SCHEMA,
    read_history,
    spans,
)
from kafka_health_spark.reuse import EPOCH, SLOT_SOURCE, jvm_rows
from kafka_health_spark.thresholds import Thresholds
from kafka_health_spark.windows import WINDOW_TABLES

log = logging.getLogger(__name__)


def micros(ts: datetime) -> int:
    """`ts` as Spark keeps a timestamp: microseconds since the epoch."""
    return (tables.utc(ts) - EPOCH) // timedelta(microseconds=1)


class SlotWindows:
    """One cluster's history windows as rows in the driver JVM, owned by the worker that
    diagnoses it (one cycle at a time). The same interface as `HistoryWindows` (`prepare`,
    `record`, `invalidate`, `past`, `transitions`), plus `fill` and `fill_transitions`, which
    put a window's rows in a slot of the policy's reused plans without a job."""

    def __init__(self, spark: SparkSession, root: str, cluster: str) -> None:
        self.spark = spark
        self.root = root
        self.cluster = cluster
        self._jvm = spark._jvm.io.kafkahealth.spark  # type: ignore[union-attr]
        self._rows: Any = self._jvm.HistoryRows()
        self._spans: dict[str, timedelta] = {}
        self._newest: datetime | None = None  # the newest ts the kept rows cover
        self._lock = threading.Lock()
        self._reads = itertools.count()  # `past` and `transitions` slots, named apart
        self.prefix = f"kafka-health/{uuid.uuid4().hex}/windows/"
        self.loads = 0  # how often Parquet was read (the bench and the tests count them)

    # ------------------------------------------------------------------ the cycle
    def prepare(self, thresholds: Thresholds, now: datetime) -> None:
        """Make sure the windows hold everything up to `now` for these thresholds (reads Parquet
        when nothing is held yet, or when the spans changed)."""
        wanted = spans(thresholds)
        with self._lock:
            if self._spans and wanted == self._spans:
                return
            self._load(wanted, tables.utc(now))

    def record(self, written: Mapping[str, pa.Table], ts: datetime) -> None:
        """Add the rows the history store wrote for the snapshot taken at `ts`, and drop the rows
        older than each table's span. Rows the last Parquet read already covered are skipped."""
        ts = tables.utc(ts)
        with self._lock:
            self._drop_reads()
            if not self._spans or (self._newest is not None and ts <= self._newest):
                return
            for table in WINDOW_TABLES:
                new = written.get(table)
                if new is not None and new.num_rows:
                    self._rows.append(
                        table, self._jvm_rows(table, new), HISTORY_SCHEMAS[table].names.index("ts")
                    )
                self._rows.trim(table, micros(ts - self._spans[table]))
            span = self._spans["partition_state"]
            new = written.get("partition_state")
            if new is not None and new.num_rows:
                self._rows.recordPartitionState(self._jvm_rows("partition_state", new))
            self._rows.trimPartitionState(micros(ts - (span - PRIOR_STATE_LOOKBACK)), micros(ts - span))
            self._newest = ts

    def invalidate(self) -> None:
        """Forget the rows: the next cycle reads Parquet again (after maintenance changed it)."""
        with self._lock:
            self._drop_reads()
            self._rows.clear()
            self._spans = {}
            self._newest = None

    def close(self) -> None:
        """Forget the rows and free the slots `past` and `transitions` filled."""
        self.invalidate()

    def fill(self, slot: str, table: str, since: datetime, until: datetime, current: str | None) -> int:
        """Put `table`'s rows with `since <= ts < until` in `slot`, then those of the slot
        `current` (the snapshot's own sample) when given; returns how many."""
        with self._lock:
            since = self._since(table, tables.utc(since), self._spans.get(table))
            return int(self._rows.fill(slot, table, micros(since), micros(until), current))

    def fill_transitions(self, slot: str, since: datetime, until: datetime) -> int:
        """Put the partition_state records with `since <= ts < until`, beside the record before
        them when that lies within `PRIOR_STATE_LOOKBACK` before `since`, in `slot`."""
        since = tables.utc(since)
        with self._lock:
            span = self._spans.get("partition_state")
            kept = self._since(
                "partition_state", since, None if span is None else span - PRIOR_STATE_LOOKBACK
            )
            prior = micros(since - PRIOR_STATE_LOOKBACK)
            return int(self._rows.fillTransitions(slot, micros(kept), micros(until), prior))

    def past(self, table: str, since: datetime, until: datetime) -> DataFrame:
        """Rows of `table` with `since <= ts < until` (the `frames.PastRows` interface), read from
        a slot of their own until the next `record` or `invalidate`."""
        if table not in WINDOW_TABLES:
            raise ValueError(
                f"{table} is not kept as rows (kept: {', '.join(WINDOW_TABLES)}; partition_state: transitions())"
            )
        slot = f"{self.prefix}read/{next(self._reads)}"
        self.fill(slot, table, since, until, None)
        return self._read(slot, HISTORY_SCHEMAS[table])

    def transitions(self, since: datetime, until: datetime) -> DataFrame:
        """The `frames.PastTransitions` interface (see `fill_transitions`), read from a slot of
        their own until the next `record` or `invalidate`."""
        slot = f"{self.prefix}read/{next(self._reads)}"
        self.fill_transitions(slot, since, until)
        return self._read(slot, TRANSITIONS_SCHEMA)

    def held_rows(self) -> int:
        """How many rows the windows hold (the tests and the bench read it)."""
        return int(self._rows.heldRows())

    # ------------------------------------------------------------------ internals
    def _jvm_rows(self, table: str, rows: pa.Table) -> Any:
        """Rows as written, decoded in the JVM (no Spark job, no plan over them)."""
        return jvm_rows(self.spark, rows, HISTORY_SCHEMAS[table])

    def _read(self, slot: str, schema: Any) -> DataFrame:
        return self.spark.read.format(SLOT_SOURCE).schema(schema).option("slot", slot).load()

    def _since(self, table: str, since: datetime, span: timedelta | None) -> datetime:
        """Under the lock: `since`, or the span back from the newest sample when that is later."""
        if span is None or self._newest is None:
            raise RuntimeError(f"history windows of {self.cluster} are not loaded; call prepare() first")
        return max(since, self._newest - span)

    def _drop_reads(self) -> None:
        self._jvm.Slots.drop(f"{self.prefix}read/")

    def _load(self, wanted: dict[str, timedelta], now: datetime) -> None:
        end = now + timedelta(microseconds=1)  # the snapshot at `now` may already be written
        self._rows.clear()
        for table in WINDOW_TABLES:
            rows = read_history(self.spark, self.root, table, self.cluster, now - wanted[table], end)
            self._rows.load(table, rows._jdf)
        span = wanted["partition_state"]
        records = read_history(self.spark, self.root, "partition_state", self.cluster, now - span, end)
        self._rows.loadPartitionState(records._jdf, micros(now - (span - PRIOR_STATE_LOOKBACK)))
        self._spans = wanted
        self._newest = now
        self.loads += 1
        log.debug("history windows of %s read from Parquet into the JVM (load %d)", self.cluster, self.loads)
