"""Where a warm operator cycle's time goes: each check (and the summary) run alone, one after the
other, over the same frames the operator builds, with windows kept in memory as the operator keeps
them.

    .venv/bin/python bench/check_costs.py --size 10k --cycles 4
    .venv/bin/python bench/check_costs.py --size 10k --jfr /tmp/cycle.jfr   # plus a JFR of the JVM

Per check: the median wall time of its collect over the warm cycles (the first cycle is cold and
left out), the Spark jobs it ran and the classes it compiled. The checks run one at a time here
(the operator runs 4 at once), so the sum is the cycle's serial cost, not its wall time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from typing import Any

import synthetic
from diagnose_bench import SIZES, SparkWork, seed_history


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="10k")
    p.add_argument("--cycles", type=int, default=4, help="cycles run (the first is cold)")
    p.add_argument("--interval", type=int, default=120)
    p.add_argument("--history-minutes", type=int, default=60)
    p.add_argument("--driver-memory", default="1g")
    p.add_argument("--jfr", help="record a JFR profile of the driver JVM to this file")
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE Spark setting to try (repeatable)")
    args = p.parse_args()
    size = SIZES.get(args.size) or int(args.size)

    from kafka_health_spark.checks import all_checks
    from kafka_health_spark.findings import collect_findings
    from kafka_health_spark.frames import build_frames
    from kafka_health_spark.session import _log4j_config, get_session
    from kafka_health_spark.summary import summarize
    from kafka_health_spark.thresholds import Thresholds
    from kafka_health_spark.windows import HistoryWindows

    shape, root, store, first, history = seed_history(size, args, "kh-check-costs-")

    conf = dict(kv.split("=", 1) for kv in args.conf)
    if args.jfr:
        java = f"-Dlog4j2.configurationFile={_log4j_config().as_uri()} -XX:StartFlightRecording=filename={args.jfr},settings=profile"
        conf["spark.driver.extraJavaOptions"] = java
    spark = get_session(master="local[2]", driver_memory=args.driver_memory, conf=conf)
    windows = HistoryWindows(spark, str(root), synthetic.CLUSTER)
    thresholds = Thresholds()
    work = SparkWork(spark)
    checks = all_checks()
    costs: dict[str, list[tuple[float, int, int, int]]] = {}
    cycles: list[float] = []
    for k in range(first + history, first + history + args.cycles):
        snap = synthetic.snapshot(shape, k)
        written = store.append(snap)
        c0 = time.perf_counter()
        built: list[Any] = []

        def timed(name: str, run: Any) -> None:
            w0, t0 = work.read(), time.perf_counter()
            run()
            dt, w1 = time.perf_counter() - t0, work.read()
            jobs, compiles, calls = (a - b for a, b in zip(w1, w0, strict=True))
            costs.setdefault(name, []).append((dt, jobs, compiles, calls))

        def frames_of(snap: Any = snap, written: Any = written, built: list[Any] = built) -> None:
            windows.record(written.tables, snap.taken_at)
            windows.prepare(thresholds, snap.taken_at)
            built.append(
                build_frames(
                    spark, snap, str(root), thresholds, past=windows.past, transitions=windows.transitions
                )
            )

        timed("(windows + frames)", frames_of)
        frames = built[0]
        for check in checks:
            timed(
                check.__name__,
                lambda check=check, frames=frames: collect_findings(check(frames, thresholds), 100),
            )
        timed("(summary)", lambda frames=frames: summarize(frames))
        frames.release()
        cycles.append(time.perf_counter() - c0)

    warm = slice(1, None)
    rows = sorted(
        ((name, [c for c in values[warm]]) for name, values in costs.items()),
        key=lambda r: -statistics.median(c[0] for c in r[1]),
    )
    print(
        f"{size:,} partitions, {args.history_minutes} min of history every {args.interval} s; warm cycles: {len(cycles) - 1}"
    )
    print(f"{'check':<28}{'median s':>10}{'jobs':>6}{'compiled':>10}{'Py4J':>7}")
    for name, values in rows:
        print(
            f"{name:<28}{statistics.median(v[0] for v in values):>10.3f}"
            f"{statistics.median(v[1] for v in values):>6.0f}{statistics.median(v[2] for v in values):>10.0f}"
            f"{statistics.median(v[3] for v in values):>7.0f}"
        )
    total = sum(statistics.median(v[0] for v in values) for _, values in rows)
    print(f"{'sum (serial)':<28}{total:>10.3f}   warm cycle medians: {statistics.median(cycles[warm]):.3f} s")
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    spark.stop()


if __name__ == "__main__":
    main()
