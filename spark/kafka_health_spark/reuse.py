"""A policy's plans, built and planned once, then run again every cycle over the cycle's rows.

A warm operator cycle spent about two thirds of its time building the same plans through Py4J,
analysing, optimizing and planning them, for data that changed but plans that did not
(`bench/plan_reuse_bench.py`). Here each input of the checks (the snapshot's parts and the
history windows) is a *slot*: rows kept in the driver JVM under a name, read by a small data
source (`jvm/SlotSource.java`) when a plan runs, not when it is built; `now` is a parameter read
the same way (`kafka_health_param`). So a policy's check plans and its summary plan are built over
the slots once, planned to physical plans once, and each cycle only fills the slots with the
cycle's rows and runs each planned plan again. The snapshot's parts are decoded from Arrow in the
JVM (`jvm_rows`), the history windows come from the policy's `SlotWindows` (rows kept in the JVM),
each ending with the snapshot's own sample, computed by a plan over the snapshot's slots. Frames
that several checks read (`Frames.shared(..., materialize=True)`) become slots too, refilled from
their own planned plan each cycle, side by side; a plan waits only for the shared slots it reads.

A cluster of up to `ONE_PARTITION_MAX_PARTITIONS` partitions has its plans run in one partition
with no shuffle (`Plans.inOnePartition`), each prepared once into its RDD and computed again in
the calling thread, with no Spark job (`jvm/PreparedPlan.java`): a stage's fixed cost was most of
a check's. So a warm cycle of such a cluster runs no Spark job at all. A larger cluster's plans
keep their shuffles, and each run is a copy of the planned plan run as Spark jobs (a copy, because
a planned plan keeps its shuffles' outputs).

The plans are built again when what shaped them changes: the thresholds, the cluster's size class
(`Frames.small_cluster`, `ONE_PARTITION_MAX_PARTITIONS`), or the checks selected. Slots live in
the driver JVM, so this needs an embedded session with a local master (tasks in the driver's JVM)
and the plan jar on its classpath (`plan_jar`); `available()` says whether the session has both,
and `run_diagnosis` otherwise builds the plans every cycle, as before. The findings are the same either way:
`tests/spark/test_reuse.py` compares both paths cycle after cycle.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from py4j.java_gateway import JavaClass, JavaObject
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.serializers import ArrowStreamSerializer

from kafka_health.models.findings import DiagnosisSummary, Finding
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark import jobs, tables
from kafka_health_spark.checks import Check, all_checks
from kafka_health_spark.findings import (
    Collected,
    capped,
    choose_capped,
    findings_from,
    sort_findings,
    worst_first,
)
from kafka_health_spark.frames import (
    HISTORY_SCHEMAS,
    ROWS_PER_PARTITION,
    SAMPLE_WINDOWS,
    SNAPSHOT_SCHEMAS,
    TRANSITIONS_SCHEMA,
    Frames,
    Totals,
    current_samples,
    is_small_cluster,
    transition_bounds,
    window_bounds,
)
from kafka_health_spark.runner import CONCURRENT_CHECKS
from kafka_health_spark.session import is_connect
from kafka_health_spark.summary import summary_from, summary_rows
from kafka_health_spark.thresholds import Thresholds

if TYPE_CHECKING:
    from kafka_health_spark.slot_windows import SlotWindows

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SLOT_SOURCE = "io.kafkahealth.spark.SlotSource"
PARAM_FUNCTION = "kafka_health_param"
ONE_PARTITION = 2**31 - 1  # rows per partition of a slot read in one partition
# The largest cluster whose plans run in one partition, without jobs (`ReusedPlans`).
ONE_PARTITION_MAX_PARTITIONS = 1_000_000  # measured faster at 10k, 100k and 1M (docs/diagnostics.md)
# The largest cluster whose checks (and shared slots) run side by side, `CONCURRENT_CHECKS` at a
# time; a larger one's run one at a time, beside the summary. At 1M partitions the rows the
# checks hold at once kept a 2g heap collecting: one at a time was faster (6.4 s against 7.8 s
# with four; docs/diagnostics.md); at 100k side by side is.
SIDE_BY_SIDE_MAX_PARTITIONS = 100_000
# The frames every check reads, each a slot filled every cycle: the snapshot's parts, then the
# history windows (filled from the policy's `SlotWindows`).
SNAPSHOT_INPUTS = (
    "brokers",
    "partitions",
    "topic_configs",
    "offsets",
    "groups",
    "group_offsets",
    "log_dirs",
    "quorum",
    "quorum_voters",
    "eligible_leaders",
    "reassignments",
    "listener_certificates",
    "open_transactions",
    "replica_lags",
    "broker_throttles",
    "reconciling_members",
)
INPUTS = (*SNAPSHOT_INPUTS, "partition_transitions", *SAMPLE_WINDOWS)
INPUT_SCHEMAS: dict[str, T.StructType] = {
    **{name: SNAPSHOT_SCHEMAS[name] for name in SNAPSHOT_INPUTS},
    "partition_transitions": TRANSITIONS_SCHEMA,
    **{name: HISTORY_SCHEMAS[table] for name, (table, _, _) in window_bounds(Thresholds(), EPOCH).items()},
}
# The history tables whose window ends with the snapshot's own sample (`frames.current_samples`).
SAMPLED = ("broker_samples", "group_samples", "group_offset_samples", "replica_lag_samples")


def _to_jvm(spark: SparkSession, rows: pa.Table, schema: T.StructType) -> tuple[JavaObject, str]:
    """`rows`'s Arrow record batches sent to the driver JVM, as PySpark's `createDataFrame` sends
    an Arrow table (an iterator of them there), and the session's time zone."""
    sc = spark.sparkContext
    jvm = sc._jvm
    assert jvm is not None
    batches = rows.select(schema.names).to_batches()
    jiter = sc._serialize_to_jvm(
        batches,
        ArrowStreamSerializer(),
        lambda path: jvm.PythonSQLUtils.readArrowStreamFromFile(path),
        lambda: jvm.ArrowIteratorServer(),
    )
    return jiter, spark.conf.get("spark.sql.session.timeZone") or "UTC"


def jvm_rows(spark: SparkSession, rows: pa.Table, schema: T.StructType) -> JavaObject:
    """`rows` as Spark keeps rows, in the driver JVM (`Slots.fromArrow`): decoded without a
    Dataset, so no plan over the rows is analysed (at 100k partitions that analysis cost more
    than the checks read)."""
    jiter, time_zone = _to_jvm(spark, rows, schema)
    return spark._jvm.io.kafkahealth.spark.Slots.fromArrow(jiter, schema.json(), time_zone)  # type: ignore[union-attr]


def put_columns(spark: SparkSession, slot: str, rows: pa.Table, schema: T.StructType) -> int:
    """Keep `rows` under `slot` as Arrow columns, as they came (`Slots.putColumns`): no row is
    decoded, and the columns live off the JVM's heap. Read by a scan with `columns` set."""
    jiter, time_zone = _to_jvm(spark, rows, schema)
    return int(spark._jvm.io.kafkahealth.spark.Slots.putColumns(slot, jiter, schema.json(), time_zone))  # type: ignore[union-attr]


def available(spark: SparkSession) -> bool:
    """Whether plans can be reused in `spark`: embedded, a local master, the plan jar loaded."""
    if is_connect(spark):
        return False
    try:
        if not str(spark.sparkContext.master).startswith("local"):
            return False
        return isinstance(spark._jvm.io.kafkahealth.spark.Slots, JavaClass)  # type: ignore[union-attr]
    except Exception:
        return False


@dataclass
class _CheckPlans:
    """One check's frame over the slots, and its two planned plans (built when first run)."""

    check: Check
    frame: DataFrame | None = None
    top: Any = None  # the physical plan of its worst `cap + 1` rows
    exact: Any = None  # the physical plan of its rows through `capped`
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class _Shape:
    """What a policy's plans are built for: a change rebuilds them."""

    cluster: str
    thresholds: Thresholds
    small_cluster: bool
    one_partition: bool
    checks: tuple[str, ...]


class CycleInterrupted(RuntimeError):
    """The cycle was interrupted (`ReusedPlans.interrupt`) before this step."""


class ReusedPlans:
    """One policy's planned plans and slots, owned by the worker that diagnoses it (one cycle at
    a time). `close()` frees the slots' rows in the JVM."""

    def __init__(self, spark: SparkSession, *, one_partition: bool | None = None) -> None:
        """`one_partition`: whether plans run in one partition (`Plans.inOnePartition`) and as
        prepared RDDs (`PreparedPlan`); None, the default: for a cluster of up to
        `ONE_PARTITION_MAX_PARTITIONS` partitions, whose rows cost less than a stage does."""
        self.spark = spark
        self.one_partition = one_partition
        self.prefix = f"kafka-health/{uuid.uuid4().hex}/"
        self._jvm = spark._jvm.io.kafkahealth.spark  # type: ignore[union-attr]
        self._shape: _Shape | None = None
        self._frames: Frames | None = None
        self._checks: list[_CheckPlans] = []
        self._summary: Any = None
        self._materialized: list[tuple[str, Any]] = []  # (slot, planned plan), in build order
        self._samples: list[tuple[str, Any]] = []  # (slot, planned plan) of the current samples
        self._filling: dict[str, Future[None]] = {}  # this cycle's refills of the shared slots
        self._lock = threading.Lock()
        self._summary_lock = threading.Lock()
        # Whether the plans built run in one partition, with no shuffle and no job (`_Shape`):
        # a check is then one pass over its rows, and checks run side by side instead.
        self._single = False
        self._interrupted: str | None = None  # `interrupt`'s reason
        self.builds = 0  # how often the plans were built (the tests and the bench count them)

    # ------------------------------------------------------------------ the cycle
    def diagnose(
        self,
        snapshot: ClusterSnapshot,
        thresholds: Thresholds,
        windows: SlotWindows,
        *,
        with_summary: bool = True,
        checks: Sequence[Check] | None = None,
    ) -> tuple[list[Finding], DiagnosisSummary | None]:
        """The findings (each check capped, worst first) and summary of `snapshot`, with the
        history windows of `windows` (the policy's, prepared for `thresholds`)."""
        selected = list(checks) if checks is not None else all_checks()
        now = tables.utc(snapshot.taken_at)
        arrow = tables.snapshot_tables(snapshot)
        totals = Totals.of(arrow)
        one_partition = (
            totals.partition_count <= ONE_PARTITION_MAX_PARTITIONS
            if self.one_partition is None
            else self.one_partition
        )
        shape = _Shape(
            snapshot.cluster,
            thresholds,
            is_small_cluster(totals.partition_count),
            one_partition,
            tuple(c.__name__ for c in selected),
        )
        rebuilt = shape != self._shape
        if rebuilt:
            self._build(shape, now, totals, selected)
        self._fill_inputs(arrow, now, windows, thresholds)
        cap = thresholds.max_findings_per_check
        side_by_side = CONCURRENT_CHECKS if totals.partition_count <= SIDE_BY_SIDE_MAX_PARTITIONS else 1
        with (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="summary") as side,
            ThreadPoolExecutor(max_workers=side_by_side, thread_name_prefix="check") as pool,
        ):
            # The shared slots are filled again first, side by side, each after the shared
            # slots it reads; a plan runs once the shared slots it reads are filled. (A new
            # build fills them as the checks build them.) Submitted before any check, so a
            # check waiting for one never holds the thread it needs.
            self._filling = {} if rebuilt else self._refill_shared(pool)
            pending = side.submit(jobs.carry(self.spark, self._run_summary), totals) if with_summary else None
            run = jobs.carry(self.spark, lambda plans: self._run_check(plans, cap, shape))
            found = list(pool.map(run, self._checks))
            summary = pending.result() if pending is not None else None
        return sort_findings(f for fs in found for f in fs), summary

    def interrupt(self, reason: str) -> None:
        """Stop the cycle (past its deadline): the plans running now raise at their next rows (they
        run without Spark jobs, so cancelling the cycle's jobs does not reach them), and whatever
        the cycle would run next raises before it starts. These plans are not run again."""
        self._interrupted = reason
        prepared = [plan for _, plan in list(self._materialized) + list(self._samples)]
        prepared += [p for c in list(self._checks) for p in (c.top, c.exact) if p is not None]
        prepared += [self._summary] if self._summary is not None else []
        for plan in prepared:
            with contextlib.suppress(Exception):  # (the JVM is gone: nothing runs)
                plan.interrupt(reason)

    def close(self) -> None:
        """Free the slots' rows and forget the plans."""
        self._shape = None
        self._checks = []
        self._materialized = []
        self._samples = []
        self._summary = None
        self._frames = None
        with contextlib.suppress(Exception):  # the JVM is gone: so are the slots
            self._jvm.Slots.drop(self.prefix)

    # ------------------------------------------------------------------ internals
    def _slot(self, name: str) -> str:
        return self.prefix + name

    def _fill_inputs(
        self, arrow: dict[str, pa.Table], now: datetime, windows: SlotWindows, thresholds: Thresholds
    ) -> None:
        """Fill every input slot with the cycle's rows, and set `now`, without a Spark job: the
        snapshot's parts decoded from Arrow in the JVM (`jvm_rows`: no plan over them); each
        history window its rows as `windows` keeps them, then the snapshot's own sample,
        computed by a plan over the snapshot's slots (in one partition: no job)."""
        for name in SNAPSHOT_INPUTS:
            self._go_on()
            if self._single:
                put_columns(self.spark, self._slot(name), arrow[name], SNAPSHOT_SCHEMAS[name])
            else:
                self._jvm.Slots.put(
                    self._slot(name), jvm_rows(self.spark, arrow[name], SNAPSHOT_SCHEMAS[name])
                )
        micros = (now - EPOCH) // timedelta(microseconds=1)
        self._jvm.Slots.setParam(self._slot("now"), micros)
        for slot, plan in self._samples:
            self._go_on()
            self._jvm.Slots.fillFrom(self.spark._jsparkSession, slot, plan)
        for name, (table, since, until) in window_bounds(thresholds, now).items():
            windows.fill(self._slot(name), table, since, until, self._slot(f"current/{table}"))
        windows.fill_transitions(self._slot("partition_transitions"), *transition_bounds(thresholds, now))

    def _read(self, name: str, schema: T.StructType) -> DataFrame:
        """A slot as a frame."""
        return (
            self.spark.read.format(SLOT_SOURCE)
            .schema(schema)
            .option("slot", self._slot(name))
            .option("rowsPerPartition", str(ONE_PARTITION if self._single else ROWS_PER_PARTITION))
            # (sized when planned, so a hash join in one partition builds its smaller side)
            .option("statistics", str(self._single).lower())
            # (in one partition the snapshot's parts are kept as Arrow columns: `_fill_inputs`)
            .option("columns", str(self._single and name in SNAPSHOT_INPUTS).lower())
            .load()
        )

    def _build(self, shape: _Shape, now: datetime, totals: Totals, selected: list[Check]) -> None:
        """Build the frames over the slots, the plans of the snapshot's own samples, and the
        checks' frames; the checks' plans are planned when first run (in the check threads)."""
        self.close()
        self._single = shape.one_partition
        self._jvm.Plans.register(self.spark._jsparkSession)
        now_param = F.timestamp_micros(F.call_function(PARAM_FUNCTION, F.lit(self._slot("now"))))
        slot = {name: self._read(name, schema) for name, schema in INPUT_SCHEMAS.items()}
        self._frames = Frames(
            cluster=shape.cluster,
            now=now,
            brokers=slot["brokers"],
            partitions=slot["partitions"],
            topic_configs=slot["topic_configs"],
            offsets=slot["offsets"],
            groups=slot["groups"],
            group_offsets=slot["group_offsets"],
            log_dirs=slot["log_dirs"],
            quorum=slot["quorum"],
            quorum_voters=slot["quorum_voters"],
            eligible_leaders=slot["eligible_leaders"],
            reassignments=slot["reassignments"],
            listener_certificates=slot["listener_certificates"],
            open_transactions=slot["open_transactions"],
            replica_lags=slot["replica_lags"],
            broker_throttles=slot["broker_throttles"],
            reconciling_members=slot["reconciling_members"],
            partition_transitions=slot["partition_transitions"],
            broker_samples=slot["broker_samples"],
            group_samples=slot["group_samples"],
            group_offset_samples=slot["group_offset_samples"],
            replica_lag_samples=slot["replica_lag_samples"],
            group_activity=slot["group_activity"],
            topic_count=totals.topic_count,
            partition_count=totals.partition_count,
            group_count=totals.group_count,
            now_param=now_param,
            materialize_with=self._materialize,
            one_partition=shape.one_partition,
        )
        samples = current_samples(slot, now_param, hashed=shape.one_partition)
        self._samples = [(self._slot(f"current/{t}"), self._prepare(samples[t])) for t in SAMPLED]
        self._checks = [_CheckPlans(check) for check in selected]
        self._shape = shape
        self.builds += 1

    def _materialize(self, name: str, frame: DataFrame) -> DataFrame:
        """A shared frame as a slot: filled now from its planned plan, and again every cycle. An
        input slot read as is (`flapping.transitions`) is already rows kept: it stays as it is."""
        if self._frames is not None and any(frame is getattr(self._frames, name) for name in INPUTS):
            return frame
        plan = self._prepare(frame)
        slot = self._slot(f"shared/{name}")
        self._go_on()
        self._jvm.Slots.fillFrom(self.spark._jsparkSession, slot, plan)
        with self._lock:
            self._materialized.append((slot, plan))
        return self._read(f"shared/{name}", frame.schema)

    def _prepare(self, frame: DataFrame) -> Any:
        """`frame` planned, and prepared to run again (`jvm/PreparedPlan.java`)."""
        plan = self._jvm.Plans.plan(frame._jdf, self._single)
        return self._jvm.PreparedPlan.of(self.spark._jsparkSession, plan, self._single)

    def _refill_shared(self, pool: ThreadPoolExecutor) -> dict[str, Future[None]]:
        """Fill each shared slot from its plan in `pool`, each once the shared slots it reads are."""
        filling: dict[str, Future[None]] = {}

        def fill(slot: str, plan: Any, after: list[Future[None]]) -> None:
            for future in after:
                future.result()
            self._go_on()
            self._jvm.Slots.fillFrom(self.spark._jsparkSession, slot, plan)

        for slot, plan in list(self._materialized):  # (in build order: what a slot reads comes first)
            after = [filling[s] for s in plan.slots() if s in filling]
            filling[slot] = pool.submit(jobs.carry(self.spark, fill), slot, plan, after)
        return filling

    def _wait_for_slots(self, plan: Any) -> None:
        """Wait until the shared slots `plan` reads are filled for this cycle."""
        for slot in plan.slots():
            future = self._filling.get(slot)
            if future is not None:
                future.result()

    def _go_on(self) -> None:
        """Raise if the cycle was interrupted (before each step: a step that started runs on)."""
        if self._interrupted is not None:
            raise CycleInterrupted(self._interrupted)

    def _collect(self, plan: Any) -> Collected:
        self._wait_for_slots(plan)
        self._go_on()
        jdf = plan.run(self.spark._jsparkSession)
        return [r.asDict() for r in DataFrame(jdf, self.spark).collect()]

    def _run_check(self, plans: _CheckPlans, cap: int, shape: _Shape) -> list[Finding]:
        self._go_on()
        frames = self._frames
        assert frames is not None

        def planned(which: str, build: Callable[[DataFrame], DataFrame]) -> Any:
            with plans.lock:
                if plans.frame is None:
                    plans.frame = plans.check(frames, shape.thresholds)
                if getattr(plans, which) is None:
                    setattr(plans, which, self._prepare(build(plans.frame)))
                return getattr(plans, which)

        collected = choose_capped(
            lambda: self._collect(planned("top", lambda df: worst_first(df, cap + 1))),
            lambda: self._collect(planned("exact", lambda df: capped(df, cap))),
            cap,
            key=(shape.cluster, plans.check.__name__),
            top_k=shape.small_cluster,
        )
        return findings_from(collected, cap)

    def _run_summary(self, totals: Totals) -> DiagnosisSummary:
        with self._summary_lock:  # (building it may materialize a shared frame: `_lock`)
            if self._summary is None:
                assert self._frames is not None
                self._summary = self._prepare(summary_rows(self._frames))
            plan = self._summary
        self._wait_for_slots(plan)
        self._go_on()
        jdf = plan.run(self.spark._jsparkSession)
        return summary_from(totals, DataFrame(jdf, self.spark).collect())
