"""How much of a warm operator cycle plan reuse could save at most: the same cycle done whole, and
split into building and planning its checks, then running the planned plans, side by side.

    .venv/bin/python bench/plan_reuse_bench.py --size 10k --cycles 10

An hour of history written as the operator writes it, then `--cycles` operator cycles (a new
snapshot appended and recorded into the kept windows). Each cycle is diagnosed twice over the same
frames (without the summary, which the split leaves out):
- `whole`: `run_diagnosis`, as the operator runs it (plans built through Py4J, analysed,
  optimized and planned, then run, four checks at a time);
- `frames`: preparing the windows and building the cycle's frames from the snapshot;
- `build and plan`: every check's capped plan built and planned to its physical plan (the jobs of
  frames that several checks share run here too), four at a time;
- `run planned`: those physical plans run (code generation included), four at a time.

`run planned` is what a cycle would still cost if every plan were built once and reused with
the cycle's data swapped in: the floor of that design, not a design. The first cycle (cold) is
left out; medians of the rest, with `uptime` before and after.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import synthetic
from diagnose_bench import SIZES, cpu_seconds, seed_history
from kafka_health.diagnose import run_diagnosis
from kafka_health_spark import findings, session
from kafka_health_spark.checks import Check, all_checks
from kafka_health_spark.frames import build_frames
from kafka_health_spark.runner import CONCURRENT_CHECKS
from kafka_health_spark.thresholds import Thresholds
from kafka_health_spark.windows import HistoryWindows

PARTS = ("whole", "frames", "build and plan", "run planned")


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    cpu, wall = cpu_seconds(), time.perf_counter()
    value = fn()
    return value, time.perf_counter() - wall, cpu_seconds() - cpu


def one_cycle(
    spark: Any, snap: Any, root: Any, windows: HistoryWindows, thresholds: Thresholds
) -> dict[str, Any]:
    """The cycle's parts: each (wall, CPU), plus what they found (to print)."""
    cap = thresholds.max_findings_per_check
    whole, *whole_t = timed(
        lambda: run_diagnosis(snap, root, thresholds, spark, with_summary=False, windows=windows)
    )

    def frames_of() -> Any:
        windows.prepare(thresholds, snap.taken_at)
        return build_frames(
            spark, snap, str(root), thresholds, past=windows.past, transitions=windows.transitions
        )

    frames, *frames_t = timed(frames_of)

    def plan(check: Check) -> Any:
        capped = findings.worst_first(check(frames, thresholds), cap + 1)
        return capped._jdf.queryExecution().executedPlan()

    def plan_all() -> list[Any]:
        with ThreadPoolExecutor(CONCURRENT_CHECKS) as pool:
            return list(pool.map(plan, all_checks()))

    def run(physical: Any) -> int:
        return len(physical.executeCollect())

    def run_all(plans: list[Any]) -> int:
        with ThreadPoolExecutor(CONCURRENT_CHECKS) as pool:
            return sum(pool.map(run, plans))

    plans, *plan_t = timed(plan_all)
    rows, *run_t = timed(lambda: run_all(plans))
    frames.release()
    return {
        "parts": dict(zip(PARTS, (whole_t, frames_t, plan_t, run_t), strict=True)),
        "findings": len(whole.findings),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="10k", choices=sorted(SIZES))
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--interval", type=int, default=30, help="seconds between samples")
    parser.add_argument("--history-minutes", type=int, default=60)
    args = parser.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip(), flush=True)
    shape, root, store, first, history = seed_history(SIZES[args.size], args, "kh-plan-reuse-")
    spark = session.get_session(master="local[2]", driver_memory="1g")
    windows = HistoryWindows(spark, str(root), synthetic.CLUSTER)
    thresholds = Thresholds()
    figures: dict[str, list[tuple[float, float]]] = {part: [] for part in PARTS}
    for cycle, sample in enumerate(range(first + history, shape.samples + 1)):
        snap = synthetic.snapshot(shape, sample)
        windows.record(store.append(snap).tables, snap.taken_at)
        done = one_cycle(spark, snap, root, windows, thresholds)
        print(
            f"cycle {cycle}: "
            + ", ".join(f"{p} {w:.2f} s / {c:.2f} CPU-s" for p, (w, c) in done["parts"].items()),
            f"({done['findings']} findings, {done['rows']} rows planned)",
            flush=True,
        )
        if cycle > 0:
            for part, (wall, cpu) in done["parts"].items():
                figures[part].append((wall, cpu))
    print(
        f"\n{args.size} partitions, {args.history_minutes} min of history, {len(figures['whole'])} warm cycles (median)"
    )
    print(f"{'part':16} {'wall':>8} {'CPU':>8}")
    for part, values in figures.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"{part:16} {wall:7.2f}s {cpu:7.2f}s")
    print(subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())


if __name__ == "__main__":
    main()
