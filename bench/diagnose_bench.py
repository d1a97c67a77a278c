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
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes = [SIZES.get(s) or int(s) for s in args.sizes.split(",")]

    if args.worker:
        print(json.dumps(worker(args.worker, sizes[0], args)))
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
