"""Diagnosis bench: Spark (embedded local[2]) beside DuckDB on the same synthetic clusters.

    .venv/bin/python bench/diagnose_bench.py                      # 10k, 100k and 1M partitions
    .venv/bin/python bench/diagnose_bench.py --sizes 10k,100k     # pick sizes
    .venv/bin/python bench/diagnose_bench.py --engines spark --warm-runs 5

For each size the bench writes a day of history once (cached under --data-dir), then runs each
engine in its own process, so cold start and peak memory are that engine's alone:
- cold start: engine start (Spark: JVM and session; DuckDB: connect) plus the first diagnosis;
- warm cycle: the median of the next --warm-runs diagnoses of the same snapshot (what the
  operator pays every cycle; frames are rebuilt each time, as in the operator);
- peak memory: the highest RSS of the process and its children (Spark's JVM), sampled every
  100 ms; "over base" subtracts the RSS before the engine started (the snapshot itself).
Both engines run every check over the same inputs; their finding counts per check must agree.
The summary for plots (`with_summary`) is left out on both sides.

    .venv/bin/python bench/diagnose_bench.py --mode operator --sizes 10k   # what the operator does

Operator mode does what a policy's worker does, cycle after cycle: a new snapshot each cycle
(the synthetic cluster drifts: a broker dies, another keeps leaving ISRs, leaders flap, lag
grows), appended to the history store (after --history-minutes of history written the same
way, once per shape under --data-dir, then copied for each engine), then diagnosed with the
summary, the driver at the operator's default memory (1g). Side by
side in one run (by default): `spark` (this engine as the operator runs it: windows kept in
memory as rows in the JVM, `slot_windows`, the policy's plans built once and reused,
`kafka_health_spark.reuse`), `spark-rebuilt` (its plans built every cycle, its windows Spark
frames, `windows`) and `duckdb` (the reference, reading Parquet);
`spark-one-partition` and `spark-partitioned` reuse plans run in one partition or partitioned
whatever the cluster's size (the operator chooses by size, `reuse.ONE_PARTITION_MAX_PARTITIONS`);
`--engines spark-before` adds the engine before issue 10 (windows read from Parquet every
cycle, Spark's default code-generation cache, AQE on, 4 shuffle partitions). Per engine: the first cycle, the median warm diagnosis and cycle (append +
diagnosis), CPU seconds per warm cycle (the process and its JVM), and peak RSS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

import synthetic

SIZES = {"10k": 10_000, "100k": 100_000, "1M": 1_000_000}


class PeakRss:
    """Highest RSS of this process plus its children, sampled in a background thread."""

    def __init__(self, interval: float = 0.1) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def now() -> int:
        me = psutil.Process()
        total = me.memory_info().rss
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                total += child.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.now())
            time.sleep(self._interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, self.now())


def spark_counts(findings: list[Any]) -> dict[str, int]:
    """Findings per check, counting the ones the cap left out (their summary finding says how many)."""
    counts: dict[str, int] = {}
    totals: dict[str, int] = {}
    for f in findings:
        if set(f.evidence) == {"total", "listed"}:
            totals[f.check] = int(f.evidence["total"])
        else:
            counts[f.check] = counts.get(f.check, 0) + 1
    counts.update(totals)
    return counts


def worker(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    shape = synthetic.Shape(size, args.interval)
    root = str(data_dir(args, size))
    snap = synthetic.snapshot(shape)
    base = PeakRss.now()
    peak = PeakRss()
    from kafka_health_spark.thresholds import Thresholds

    thresholds = Thresholds()
    t0 = time.perf_counter()
    if engine == "spark":
        from kafka_health.diagnose import run_diagnosis
        from kafka_health_spark.session import get_session

        spark = get_session(
            master="local[2]",
            shuffle_partitions=args.shuffle_partitions,
            driver_memory=args.driver_memory,
            conf=dict(kv.split("=", 1) for kv in args.spark_conf),
        )
        started = time.perf_counter()

        def run() -> dict[str, int]:
            return spark_counts(run_diagnosis(snap, root, thresholds, spark, with_summary=False).findings)

    else:
        import duckdb

        from duckdb_checks import diagnose

        con = duckdb.connect()
        started = time.perf_counter()

        def run() -> dict[str, int]:
            return diagnose(con, snap, root, thresholds)

    counts = run()
    first = time.perf_counter()
    warm = []
    for _ in range(args.warm_runs):
        w0 = time.perf_counter()
        again = run()
        warm.append(time.perf_counter() - w0)
        assert again == counts, "a warm run found something else than the first"
    peak_rss = peak.stop()
    return {
        "engine": engine,
        "size": size,
        "start_s": started - t0,
        "cold_s": first - t0,
        "warm_s": warm,
        "peak_mib": peak_rss / 2**20,
        "base_mib": base / 2**20,
        "counts": counts,
    }


BEFORE_CONF = {
    "spark.sql.codegen.cache.maxEntries": "100",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.shuffle.partitions": "4",
}


def cpu_seconds() -> float:
    """CPU time of this process and its children (Spark's JVM) so far."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += sum(child.cpu_times()[:2])
    return total


class SparkWork:
    """Work a Spark cycle does, counted rather than timed (the same on a busy machine as on a quiet
    one): Spark jobs run, classes compiled by code generation, and Py4J round trips (plan building)."""

    def __init__(self, spark: Any) -> None:
        from py4j.java_gateway import GatewayClient

        self._sc = spark.sparkContext
        self._codegen = self._sc._jvm.org.apache.spark.metrics.source.CodegenMetrics
        self.py4j_calls = 0
        send = GatewayClient.send_command

        def counted(client: Any, *a: Any, **kw: Any) -> Any:
            self.py4j_calls += 1
            return send(client, *a, **kw)

        GatewayClient.send_command = counted  # type: ignore[method-assign]

    def read(self) -> tuple[int, int, int]:
        """(last job id, compilations so far, Py4J calls so far), read without counting itself."""
        calls = self.py4j_calls
        jobs = max(self._sc.statusTracker().getJobIdsForGroup(None) or [0])
        compiles = self._codegen.METRIC_COMPILATION_TIME().getCount()
        self.py4j_calls = calls
        return jobs, compiles, calls


def seed_history(size: int, args: argparse.Namespace, prefix: str) -> tuple[Any, Path, Any, int, int]:
    """A fresh history store holding `args.history_minutes` of the synthetic cluster's samples,
    written as the operator writes them, ending right before the `args.cycles` to diagnose:
    (shape, root, store, first sample, history samples).

    The samples are written once per shape (under `--data-dir`, or /tmp/kafka-health-bench) and
    copied for each engine or policy: at 1M partitions writing them takes minutes per store."""
    import atexit
    import shutil
    import tempfile

    from kafka_health.history.store import HistoryStore

    shape = synthetic.Shape(size, args.interval)
    history = args.history_minutes * 60 // args.interval
    first = shape.samples - history - args.cycles + 1
    # Keyed by the code that writes the samples too: a changed generator or store seeds anew.
    import hashlib

    import kafka_health.history

    writers = [Path(synthetic.__file__), *sorted(Path(kafka_health.history.__file__).parent.glob("*.py"))]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in writers)).hexdigest()[:12]
    cache = Path(getattr(args, "data_dir", None) or "/tmp/kafka-health-bench") / (
        f"seeded-{size}-{args.interval}s-{args.history_minutes}min-{args.cycles}c-{digest}"
    )
    if not (cache / "ready").exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix="seeding-", dir=cache.parent))
        seeding = HistoryStore(building)
        for k in range(first, first + history):
            seeding.append(synthetic.snapshot(shape, k))
        (building / "ready").touch()
        shutil.rmtree(cache, ignore_errors=True)
        building.rename(cache)
    root = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    shutil.copytree(cache, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("ready"))
    return shape, root, HistoryStore(root), first, history


def operator_worker(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    from kafka_health_spark.thresholds import Thresholds

    shape, root, store, first, history = seed_history(size, args, "kh-operator-bench-")
    thresholds = Thresholds()
    base = PeakRss.now()
    peak = PeakRss()
    t0 = time.perf_counter()
    if engine.startswith("spark"):
        from kafka_health.diagnose import run_diagnosis
        from kafka_health_spark.session import get_session
        from kafka_health_spark.slot_windows import SlotWindows
        from kafka_health_spark.windows import HistoryWindows

        before = engine == "spark-before"
        spark = get_session(
            master="local[2]", driver_memory=args.driver_memory_operator, conf=BEFORE_CONF if before else None
        )
        # `spark` reuses the policy's plans as the operator does; `spark-rebuilt` builds them every cycle.
        from kafka_health_spark import reuse

        # `spark-one-partition` / `spark-partitioned`: plans reused, run in one partition (without
        # jobs) or partitioned (as jobs) whatever the cluster's size (`ReusedPlans.one_partition`).
        one_partition = {"spark-one-partition": True, "spark-partitioned": False}.get(engine)
        reusing = engine in ("spark", "spark-one-partition", "spark-partitioned")
        plans = (
            reuse.ReusedPlans(spark, one_partition=one_partition)
            if reusing and reuse.available(spark)
            else None
        )
        if reusing and plans is None:
            raise SystemExit("spark: this session cannot reuse plans (no plan jar?); see hack/setup.sh")
        # Kept windows as the operator keeps them (`cycle._windows_for`): rows in the JVM beside
        # reused plans, Spark frames otherwise; none before (the history read every cycle).
        windows = (
            None
            if before
            else (SlotWindows if plans is not None else HistoryWindows)(spark, str(root), synthetic.CLUSTER)
        )
        work: SparkWork | None = SparkWork(spark)

        def diagnose(snap: Any, written: Any) -> dict[str, int]:
            if windows is not None:
                windows.record(written.tables, snap.taken_at)
            d = run_diagnosis(snap, root, thresholds, spark, with_summary=True, windows=windows, plans=plans)
            assert d.summary is not None and d.summary.partitions == size
            return spark_counts(d.findings)

    else:
        import duckdb

        from duckdb_checks import diagnose as duck

        con = duckdb.connect()
        work = None

        def diagnose(snap: Any, written: Any) -> dict[str, int]:
            return duck(con, snap, str(root), thresholds)

    started = time.perf_counter()
    rows = []
    for k in range(first + history, shape.samples + 1):
        snap = synthetic.snapshot(shape, k)  # what collect would return: not timed
        before_work = work.read() if work else (0, 0, 0)
        c0, w0 = cpu_seconds(), time.perf_counter()
        written = store.append(snap)
        w1 = time.perf_counter()
        counts = diagnose(snap, written)
        w2 = time.perf_counter()
        cpu = cpu_seconds() - c0
        after_work = work.read() if work else (0, 0, 0)
        jobs, compiles, calls = (a - b for a, b in zip(after_work, before_work, strict=True))
        rows.append(
            {
                "append_s": w1 - w0,
                "diagnose_s": w2 - w1,
                "cpu_s": cpu,
                "counts": counts,
                "work": (jobs, compiles, calls),
            }
        )
    peak_rss = peak.stop()
    warm = rows[1:]
    return {
        "engine": engine,
        "size": size,
        "start_s": started - t0,
        "first_s": rows[0]["append_s"] + rows[0]["diagnose_s"],
        "diagnose_s": [r["diagnose_s"] for r in warm],
        "cycle_s": [r["append_s"] + r["diagnose_s"] for r in warm],
        "cpu_s": [r["cpu_s"] for r in warm],
        "jobs": [r["work"][0] for r in warm],
        "compiles": [r["work"][1] for r in warm],
        "py4j_calls": [r["work"][2] for r in warm],
        "peak_mib": peak_rss / 2**20,
        "base_mib": base / 2**20,
        "counts": rows[-1]["counts"],
    }


def run_operator_mode(args: argparse.Namespace, sizes: list[int]) -> None:
    print(
        f"operator mode: {args.cycles} cycles every {args.interval} s after {args.history_minutes} min of history; "
        f"driver {args.driver_memory_operator}; load before: {os.getloadavg()[0]:.2f}"
    )
    results = []
    for size in sizes:
        by_engine = {}
        for engine in args.engines.split(","):
            r = run_worker(f"operator:{engine}", size, args)
            if "failed" in r:
                print(f"  {size:>9,} {engine:<12} FAILED: {r['failed']}", flush=True)
                continue
            by_engine[engine] = r
            results.append(r)
            print(
                f"  {size:>9,} {engine:<12} (load {os.getloadavg()[0]:4.1f}) first {r['first_s']:6.2f} s  "
                f"diagnose {statistics.median(r['diagnose_s']):6.2f} s  cycle {statistics.median(r['cycle_s']):6.2f} s  "
                f"cpu {statistics.median(r['cpu_s']):5.2f} s  peak {r['peak_mib']:6.0f} MiB",
                flush=True,
            )
        duck = by_engine.get("duckdb")
        for name, spark in by_engine.items():
            if not name.startswith("spark") or duck is None:
                continue
            ratio = statistics.median(spark["diagnose_s"]) / statistics.median(duck["diagnose_s"])
            same = spark["counts"] == duck["counts"]
            print(f"  {size:>9,} {name} / duckdb warm diagnosis: {ratio:.1f}x; engines agree: {same}")
            if not same:
                diff = {
                    k: (spark["counts"].get(k), duck["counts"].get(k))
                    for k in set(spark["counts"]) | set(duck["counts"])
                    if spark["counts"].get(k) != duck["counts"].get(k)
                }
                print(f"  !! {name} and duckdb disagree on {size}: {diff}")
    print()
    print(
        f"{'partitions':>10}  {'engine':<13}{'first':>8}{'diagnose':>10}{'cycle':>9}{'cpu/cycle':>11}{'peak RSS':>11}"
    )
    for r in results:
        print(
            f"{r['size']:>10,}  {r['engine']:<13}{r['first_s']:>6.2f} s{statistics.median(r['diagnose_s']):>8.2f} s"
            f"{statistics.median(r['cycle_s']):>7.2f} s{statistics.median(r['cpu_s']):>9.2f} s{r['peak_mib']:>7.0f} MiB"
        )
    spark_rows = [r for r in results if r["engine"].startswith("spark")]  # (a warm cycle may run no job)
    if spark_rows:
        print()
        print("work per warm cycle (median; counted, so it does not depend on the machine's load)")
        print(f"{'partitions':>10}  {'engine':<13}{'Spark jobs':>11}{'compiled':>10}{'Py4J calls':>12}")
        for r in spark_rows:
            print(
                f"{r['size']:>10,}  {r['engine']:<13}{statistics.median(r['jobs']):>11.0f}"
                f"{statistics.median(r['compiles']):>10.0f}{statistics.median(r['py4j_calls']):>12.0f}"
            )
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


def data_dir(args: argparse.Namespace, size: int) -> Path:
    return Path(args.data_dir) / f"{size}-{args.interval}s"


def ensure_data(args: argparse.Namespace, size: int) -> None:
    root = data_dir(args, size)
    done = root / "ready.json"
    if done.exists():
        return
    t0 = time.perf_counter()
    rows = synthetic.write_history(synthetic.Shape(size, args.interval), root)
    mib = sum(f.stat().st_size for f in root.rglob("*.parquet")) / 2**20
    done.write_text(json.dumps({"rows": rows, "mib": mib}))
    print(
        f"  history for {size:,} partitions: {sum(rows.values()):,} rows, {mib:.0f} MiB in {time.perf_counter() - t0:.0f} s"
    )


def driver_memory(requested: str, size: int) -> str:
    """ "auto": 6g up to 100k partitions, 12g beyond (at 1M, 6g ends in Spark's "not enough memory
    to build and broadcast the table")."""
    if requested != "auto":
        return requested
    return "12g" if size > 100_000 else "6g"


def run_worker(engine: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        engine,
        "--sizes",
        str(size),
        "--interval",
        str(args.interval),
        "--data-dir",
        args.data_dir,
        "--warm-runs",
        str(args.warm_runs),
        "--driver-memory",
        driver_memory(args.driver_memory, size),
        "--shuffle-partitions",
        str(args.shuffle_partitions),
        "--cycles",
        str(args.cycles),
        "--history-minutes",
        str(args.history_minutes),
        "--driver-memory-operator",
        args.driver_memory_operator,
        *[f"--spark-conf={kv}" for kv in args.spark_conf],
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        # One engine failing at one size is a result too: say why and go on with the others.
        reason = next(
            (
                line.strip()
                for line in reversed(proc.stderr.splitlines())
                if "Exception:" in line or "Error:" in line
            ),
            proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}",
        )
        return {"failed": reason[:300]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10k,100k,1M", help="comma-separated: 10k, 100k, 1M (or a number)")
    p.add_argument("--engines", default="spark,duckdb")
    p.add_argument("--warm-runs", type=int, default=3)
    p.add_argument(
        "--interval", type=int, default=120, help="seconds between history samples (a day of them)"
    )
    p.add_argument("--data-dir", default="/tmp/kafka-health-bench")
    p.add_argument(
        "--driver-memory", default="auto", help="Spark driver memory (auto: 6g to 100k, 12g beyond)"
    )
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable)",
    )
    p.add_argument("--mode", choices=["engines", "operator"], default="engines")
    p.add_argument("--cycles", type=int, default=8, help="operator mode: cycles run (the first is cold)")
    p.add_argument("--history-minutes", type=int, default=60, help="operator mode: history before the cycles")
    p.add_argument(
        "--driver-memory-operator", default="1g", help="operator mode: driver memory (the operator's default)"
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes = [SIZES.get(s) or int(s) for s in args.sizes.split(",")]

    if args.worker:
        if args.worker.startswith("operator:"):
            result = operator_worker(args.worker.split(":", 1)[1], sizes[0], args)
        else:
            result = worker(args.worker, sizes[0], args)
        print(json.dumps(result))
        return
    if args.mode == "operator":
        if args.engines == "spark,duckdb":
            args.engines = "spark,spark-rebuilt,duckdb"
        run_operator_mode(args, sizes)
        return

    print(
        f"machine: {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
        f"history: one day, a sample every {args.interval} s"
    )
    results = []
    for size in sizes:
        ensure_data(args, size)
        by_engine = {}
        for engine in args.engines.split(","):
            r = run_worker(engine, size, args)
            load = psutil.getloadavg()[0]
            if "failed" in r:
                print(f"  {size:>9,} {engine:<6} (load {load:4.1f}) FAILED: {r['failed']}", flush=True)
                continue
            by_engine[engine] = r
            results.append(r)
            print(
                f"  {size:>9,} {engine:<6} (load {load:4.1f}) start {r['start_s']:6.1f} s  cold {r['cold_s']:6.1f} s  "
                f"warm {statistics.median(r['warm_s']):6.2f} s  peak {r['peak_mib']:7.0f} MiB "
                f"(+{r['peak_mib'] - r['base_mib']:.0f} over base)",
                flush=True,
            )
        if len(by_engine) == 2:
            a, b = by_engine.values()
            if a["counts"] != b["counts"]:
                diff = {
                    k: (a["counts"].get(k), b["counts"].get(k))
                    for k in set(a["counts"]) | set(b["counts"])
                    if a["counts"].get(k) != b["counts"].get(k)
                }
                print(f"  !! engines disagree on {size}: {diff}")
            else:
                print(
                    f"  engines agree: {sum(a['counts'].values()):,} findings over {len(a['counts'])} checks"
                )

    print()
    print(
        f"{'partitions':>10}  {'engine':<7}{'cold start':>11}{'warm cycle':>12}{'peak RSS':>11}{'over base':>11}"
    )
    for r in results:
        print(
            f"{r['size']:>10,}  {r['engine']:<7}{r['cold_s']:>9.1f} s{statistics.median(r['warm_s']):>10.2f} s"
            f"{r['peak_mib']:>7.0f} MiB{r['peak_mib'] - r['base_mib']:>7.0f} MiB"
        )


if __name__ == "__main__":
    main()
