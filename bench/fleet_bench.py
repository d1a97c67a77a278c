"""Fleet bench: N policies diagnosed by one operator process, each every --interval seconds.

    .venv/bin/python bench/fleet_bench.py --size 10k --policies 1,2,3,4 --interval 30 --cycles 5

For each N, a fresh process (one JVM, the operator's default driver memory) does what N policy
workers do at once: each policy has its own cluster's history (--history-minutes of it, written
as the operator writes it), its own windows kept in memory and its own plans built once and
reused (where the session can, as the operator's), and runs a cycle (history append +
diagnosis with the summary) every --interval seconds of wall time, in its own thread, as the
operator's daemons do: a cycle that overran its interval is followed by the next one a second
later. The snapshots are the synthetic cluster's next samples (the same for every policy),
made before the clock starts: collecting them is Kafka's work, not the diagnosis's.

Per N: the first (cold) cycles, then over the warm cycles the median and worst cycle, how many
overran their interval, the worst start delay (backlog), CPU seconds per cycle per policy (the
process and its JVM over the warm period, divided by the warm cycles run) and peak RSS. "Holds"
means every warm cycle finished within its interval and started on time. The last line names the
largest N held. Findings per policy are checked against one another (same data, same findings).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any

import synthetic
from diagnose_bench import SIZES, PeakRss, cpu_seconds, seed_history, spark_counts

LATE = 1.0  # a start later than this after its due time counts as backlog


def worker(n: int, args: argparse.Namespace) -> dict[str, Any]:
    from kafka_health.diagnose import run_diagnosis
    from kafka_health_spark import reuse
    from kafka_health_spark.session import get_session
    from kafka_health_spark.slot_windows import SlotWindows
    from kafka_health_spark.thresholds import Thresholds
    from kafka_health_spark.windows import HistoryWindows

    size = SIZES.get(args.size) or int(args.size)
    seed_args = SimpleNamespace(
        interval=args.sample_interval, history_minutes=args.history_minutes, cycles=args.cycles
    )
    stores = [seed_history(size, seed_args, f"kh-fleet-{i}-") for i in range(n)]
    shape, _, _, first, history = stores[0]
    snaps = [synthetic.snapshot(shape, k) for k in range(first + history, first + history + args.cycles)]
    thresholds = Thresholds()
    base = PeakRss.now()
    peak = PeakRss()
    spark = get_session(master="local[2]", driver_memory=args.driver_memory)
    # Each policy's plans built once and reused, and its windows kept, as the operator's workers
    # do (`cycle._plans_for`, `cycle._windows_for`).
    plans = [reuse.ReusedPlans(spark) if reuse.available(spark) else None for _ in stores]
    windows = [
        (SlotWindows if p is not None else HistoryWindows)(spark, str(root), synthetic.CLUSTER)
        for p, (_, root, _, _, _) in zip(plans, stores, strict=True)
    ]
    cycles: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    counts: list[dict[str, int]] = [{} for _ in range(n)]
    warm_started = threading.Barrier(n + 1)  # every policy's cold cycle done: the warm clock starts

    errors: list[BaseException] = []

    def policy(i: int) -> None:
        try:
            cycle_loop(i)
        except BaseException as exc:  # the main thread reports it instead of waiting forever
            errors.append(exc)
            warm_started.abort()

    def cycle_loop(i: int) -> None:
        _, root, store, _, _ = stores[i]
        due = planned = time.monotonic()
        for c, snap in enumerate(snaps):
            if c == 1:
                warm_started.wait()
                due = planned = time.monotonic() + i * args.interval / n  # daemons drift apart
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            start = time.monotonic()
            written = store.append(snap)
            windows[i].record(written.tables, snap.taken_at)
            d = run_diagnosis(
                snap, root, thresholds, spark, with_summary=True, windows=windows[i], plans=plans[i]
            )
            end = time.monotonic()
            counts[i] = spark_counts(d.findings)
            # Late: behind the start every `interval` would give (an overrun's backlog adds up).
            cycles[i].append({"late_s": max(0.0, start - planned), "wall_s": end - start})
            due = max(start + args.interval, end + 1.0)
            planned += args.interval

    threads = [threading.Thread(target=policy, args=(i,), daemon=True) for i in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    try:
        warm_started.wait()
    except threading.BrokenBarrierError:
        raise errors[0] from None
    cold_s = time.perf_counter() - t0
    c0, w0 = cpu_seconds(), time.perf_counter()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    cpu, wall = cpu_seconds() - c0, time.perf_counter() - w0
    peak_rss = peak.stop()
    warm = [c for per in cycles for c in per[1:]]
    return {
        "policies": n,
        "size": size,
        "cold_s": cold_s,
        "cold_cycle_s": [per[0]["wall_s"] for per in cycles],
        "warm_wall_s": [c["wall_s"] for c in warm],
        "warm_late_s": [c["late_s"] for c in warm],
        "warm_period_s": wall,
        "cpu_per_cycle_s": cpu / len(warm),
        "peak_mib": peak_rss / 2**20,
        "base_mib": base / 2**20,
        "agree": all(c == counts[0] for c in counts),
    }


def run(n: int, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", str(n), *sys.argv[1:]]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        errors = [ln.strip() for ln in done.stderr.splitlines() if "Error" in ln or "Exception" in ln]
        return {"policies": n, "failed": (errors or done.stderr.strip().splitlines() or ["no output"])[-1]}
    return dict(json.loads(lines[-1]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="10k", help="partitions per policy's cluster: 10k, 100k, 1M or a number")
    p.add_argument("--policies", default="1,2,3,4", help="comma-separated fleet sizes to run")
    p.add_argument("--interval", type=float, default=30, help="seconds between a policy's cycles")
    p.add_argument("--cycles", type=int, default=5, help="cycles per policy (the first is cold)")
    p.add_argument("--history-minutes", type=int, default=60)
    p.add_argument("--sample-interval", type=int, default=120, help="seconds between history samples")
    p.add_argument("--driver-memory", default="1g", help="the operator's default")
    p.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.cycles < 2:
        p.error("--cycles must be at least 2 (the first is cold)")
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"fleet: {args.size} partitions per policy, a cycle every {args.interval:g} s, {args.cycles} cycles each"
    )
    print(f"uptime before: {uptime}")
    header = (
        f"{'policies':>8} {'cold':>7} {'warm median':>12} {'worst':>7} {'overran':>8} "
        f"{'worst late':>11} {'CPU/cycle/policy':>17} {'peak RSS (over base)':>21}  holds"
    )
    print(header)
    held = 0
    for n in (int(x) for x in args.policies.split(",")):
        r = run(n, args)
        if "failed" in r:
            print(f"{n:>8} FAILED: {r['failed']}", flush=True)
            continue
        walls, late = r["warm_wall_s"], r["warm_late_s"]
        overran = sum(w > args.interval for w in walls)
        holds = overran == 0 and max(late) <= LATE
        held = max(held, n) if holds else held
        print(
            f"{n:>8} {max(r['cold_cycle_s']):>6.1f}s {statistics.median(walls):>11.2f}s {max(walls):>6.2f}s "
            f"{overran:>4}/{len(walls):<3} {max(late):>10.2f}s {r['cpu_per_cycle_s']:>16.2f}s "
            f"{r['peak_mib']:>6.0f} MiB (+{r['peak_mib'] - r['base_mib']:.0f})  {'yes' if holds else 'no'}{'' if r['agree'] else ' (policies disagree!)'}",
            flush=True,
        )
    print(f"largest fleet held: {held} policies of {args.size} partitions at a {args.interval:g} s interval")
    print(f"uptime after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
