"""What adding one sample costs when a kept window is large (`HistoryWindows.record`).

    cd bench && ../.venv/bin/python window_fold_bench.py --rows 2000000 --cycles 8

Group samples are kept for the offsets-retention lookback (7 days by default): 100 groups
sampled every 30 s are 2M rows. The window is seeded with that many rows, then a new sample is
recorded each cycle, side by side in one run: `fold_every=1` (each cycle folds its rows into
the base: the whole window copied every cycle, as before 2026-11-24) and the default
`FOLD_EVERY` (a cycle's rows kept beside the base, folded in every few cycles). Prints the wall
time of each `record` and the median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from typing import Any

import synthetic
from diagnose_bench import seed_history


def run(spark: Any, fold_every: int, args: argparse.Namespace) -> list[float]:
    from pyspark.sql import functions as F

    from kafka_health_spark.frames import HISTORY_SCHEMAS
    from kafka_health_spark.thresholds import Thresholds
    from kafka_health_spark.windows import HistoryWindows

    seed = argparse.Namespace(interval=30, history_minutes=10, cycles=args.cycles + 1)
    shape, root, store, first, history = seed_history(10_000, seed, "kh-fold-bench-")
    windows = HistoryWindows(spark, str(root), synthetic.CLUSTER, fold_every=fold_every)
    k = first + history
    snap = synthetic.snapshot(shape, k)
    store.append(snap)
    windows.prepare(Thresholds(), snap.taken_at)
    schema = HISTORY_SCHEMAS["group_samples"]
    week = spark.range(args.rows).select(
        (
            F.lit(snap.taken_at).cast("timestamp")
            - F.make_dt_interval(secs=(F.col("id") / 100).cast("long") * 30)
        ).alias("ts"),
        F.concat(F.lit("g"), (F.col("id") % 100).cast("string")).alias("group_id"),
        F.lit("Stable").alias("state"),
        F.lit(3).alias("members"),
        F.lit(1).alias("member_hash"),
    )
    week = week.select(*[F.col(f.name).cast(f.dataType) for f in schema]).localCheckpoint(eager=True)
    windows._rows["group_samples"] = week  # the kept window after a week of samples
    times = []
    for i in range(1, args.cycles + 1):
        snap = synthetic.snapshot(shape, k + i)
        written = store.append(snap)
        t = time.perf_counter()
        windows.record(written.tables, snap.taken_at)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=2_000_000, help="rows in the kept group_samples window")
    p.add_argument("--cycles", type=int, default=8)
    args = p.parse_args()
    from kafka_health_spark.session import get_session
    from kafka_health_spark.windows import FOLD_EVERY

    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    spark = get_session(master="local[2]", driver_memory="1g")
    rows = []
    for fold_every in (1, FOLD_EVERY):
        times = run(spark, fold_every, args)
        rows.append((fold_every, times))
        print(f"fold_every={fold_every}: " + " ".join(f"{t:.2f}" for t in times), flush=True)
    print(f"\n{args.rows:,} rows kept; record() per cycle, cycles 2..{args.cycles} (the first warms up):")
    print(f"{'fold_every':>10}{'median s':>10}{'worst s':>9}")
    for fold_every, times in rows:
        print(f"{fold_every:>10}{statistics.median(times[1:]):>10.2f}{max(times[1:]):>9.2f}")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
