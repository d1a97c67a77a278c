"""Where a warm operator cycle's CPU goes inside the driver JVM, per thread, for the long-lived
JVM settings of before and now, side by side in one run.

    .venv/bin/python bench/jvm_cpu_bench.py --size 10k --cycles 10
    .venv/bin/python bench/jvm_cpu_bench.py --size 10k --cycles 160 --settings status-defaults,now

Each setting runs in a fresh process: an hour of history written as the operator writes it, then
`--cycles` operator cycles (a new snapshot appended, recorded into the kept windows, diagnosed
with the summary; the first cycle is cold and left out). Per setting: the warm cycle's median
wall time and CPU (this process and the JVM), peak RSS, the heap still used after the cycles
(after a full collection), and the JVM's CPU per cycle by thread
group read from /proc (the JIT's compiler threads, G1's threads, Spark's task threads, ...).
Threads that end within the measured cycles (the Py4J threads that serve each cycle's check
threads: planning, optimizing and code generation) are counted in the JVM's total only.

`--settings` names the settings to compare: `before` (the long-lived JVM settings before
2026-11-24 evening), `now`, `status-defaults` (now, but with Spark's default retention of
finished jobs, stages and SQL executions in its status store) and `window-cap` (now, but each
check's rows capped through a window and the replication joins' small sides always broadcast,
as before the 2026-11-24 late-night session).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

import synthetic
from diagnose_bench import SIZES, PeakRss, cpu_seconds, seed_history

# The long-lived settings before 2026-11-24 evening (G1 sized for RSS only; C2 on; Spark's
# default page and broadcast block sizes and status-store retention; two-level aggregation map on).
BEFORE = {
    "java": "-XX:GCTimeRatio=4 -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30",
    "allocation": {},
    "retention": {},
    "conf": {"spark.sql.codegen.aggregate.map.twolevel.enabled": "true"},
}
# Now, but with Spark's status store keeping its defaults (1,000 jobs, stages and SQL executions).
STATUS_DEFAULTS = {"retention": {}}
# Now, but every check's rows capped through a window over them (a shuffle and a sort per check)
# and the replication checks' small join sides broadcast at any size: the engine before the
# 2026-11-24 late-night session.
WINDOW_CAP = {"window_cap": True}
SETTINGS: dict[str, dict[str, Any] | None] = {
    "before": BEFORE,
    "now": None,
    "status-defaults": STATUS_DEFAULTS,
    "window-cap": WINDOW_CAP,
}
GROUPS = [
    ("JIT compiler", r"^C\d CompilerThre"),
    ("GC (G1 concurrent)", r"^G1 (Conc|Refine|Main Marker|Service)"),
    ("GC (pauses)", r"^(GC Thread|VM Thread)"),
    ("Spark tasks", r"^Executor task"),
    ("Spark scheduler", r"^(dag-scheduler|spark-listener|dispatcher|task-result|broadcast)"),
]


def thread_cpu(pid: int) -> dict[tuple[str, str], float]:
    """CPU seconds of each live thread of `pid`, keyed by (thread id, name)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[tuple[str, str], float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[(tid, name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def group_of(name: str) -> str:
    for group, pattern in GROUPS:
        if re.match(pattern, name):
            return group
    return "other live threads"


def _cap_through_the_window() -> None:
    """The engine before the 2026-11-24 late-night session: every check's rows capped through `findings.capped` (a
    window over them), and the small side of each replication join broadcast at any size."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from kafka_health_spark import findings, frames

    def windowed(rows: DataFrame, cap: int, key: Any = None, *, top_k: bool = True) -> list[dict[str, Any]]:
        return [r.asDict() for r in findings.capped(rows, cap).collect()]

    findings.capped_rows = windowed  # type: ignore[assignment]
    frames.Frames.small_side = lambda self, df: F.broadcast(df)  # type: ignore[method-assign]


def worker(setting: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    from kafka_health.diagnose import run_diagnosis
    from kafka_health_spark import session
    from kafka_health_spark.thresholds import Thresholds
    from kafka_health_spark.windows import HistoryWindows

    override = SETTINGS[setting] or {}
    if "java" in override:
        session.LONG_LIVED_JAVA_OPTIONS = override["java"]  # type: ignore[misc]
    if "allocation" in override:
        session.ALLOCATION_CONF = override["allocation"]  # type: ignore[misc]
    if "retention" in override:
        session.STATUS_RETENTION_CONF = override["retention"]  # type: ignore[misc]
    if override.get("window_cap"):
        _cap_through_the_window()
    conf = override.get("conf")
    shape, root, store, first, history = seed_history(size, args, "kh-jvm-cpu-")
    spark = session.get_session(master="local[2]", driver_memory=args.driver_memory, conf=conf)
    jvm = next(c for c in psutil.Process().children(recursive=True) if "java" in c.name())
    windows = HistoryWindows(spark, str(root), synthetic.CLUSTER)
    thresholds = Thresholds()
    peak = PeakRss()
    walls, cpus = [], []
    start_threads: dict[tuple[str, str], float] = {}
    jvm0 = py0 = 0.0
    for i, k in enumerate(range(first + history, shape.samples + 1)):
        snap = synthetic.snapshot(shape, k)
        if i == 1:
            start_threads, jvm0 = thread_cpu(jvm.pid), sum(jvm.cpu_times()[:2])
            py0 = sum(psutil.Process().cpu_times()[:2])
        c0, w0 = cpu_seconds(), time.perf_counter()
        written = store.append(snap)
        windows.record(written.tables, snap.taken_at)
        run_diagnosis(snap, root, thresholds, spark, with_summary=True, windows=windows)
        walls.append(time.perf_counter() - w0)
        cpus.append(cpu_seconds() - c0)
    end_threads, jvm1 = thread_cpu(jvm.pid), sum(jvm.cpu_times()[:2])
    py1 = sum(psutil.Process().cpu_times()[:2])
    # What the heap still holds after the cycles: a full collection, then the used heap.
    jvm_lang = spark.sparkContext._jvm.java.lang  # type: ignore[union-attr]
    jvm_lang.System.gc()
    runtime = jvm_lang.Runtime.getRuntime()
    live_mib = (runtime.totalMemory() - runtime.freeMemory()) / 2**20
    n = len(walls) - 1
    groups: dict[str, float] = collections.Counter()
    for key, cpu in end_threads.items():
        groups[group_of(key[1])] += (cpu - start_threads.get(key, 0.0)) / n
    jvm_total = (jvm1 - jvm0) / n
    groups["threads ended within the cycles (Py4J: planning)"] = jvm_total - sum(groups.values())
    return {
        "setting": setting,
        "wall": statistics.median(walls[1:]),
        "cpu": statistics.median(cpus[1:]),
        "python": (py1 - py0) / n,
        "jvm": jvm_total,
        "groups": dict(groups),
        "peak_mib": peak.stop() / 2**20,
        "live_mib": live_mib,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--size", default="10k")
    p.add_argument("--cycles", type=int, default=10)
    p.add_argument("--interval", type=int, default=30)
    p.add_argument("--history-minutes", type=int, default=60)
    p.add_argument("--driver-memory", default="1g")
    p.add_argument("--settings", default="before,now")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    size = SIZES.get(args.size) or int(args.size)
    if args.worker:
        print(json.dumps(worker(args.worker, size, args)))
        return
    print(f"uptime before: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    results = []
    for setting in args.settings.split(","):
        cmd = [sys.executable, __file__, "--worker", setting, *sys.argv[1:]]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{setting}: FAILED\n{done.stderr[-2000:]}")
            continue
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"{size:,} partitions, {args.history_minutes} min of history every {args.interval} s; {args.cycles - 1} warm cycles"
    )
    names = [r["setting"] for r in results]
    print(f"{'per warm cycle (median)':<52}" + "".join(f"{n:>12}" for n in names))
    for label, key in (
        ("wall s", "wall"),
        ("CPU s (process + JVM)", "cpu"),
        ("  Python s", "python"),
        ("  JVM s", "jvm"),
    ):
        print(f"{label:<52}" + "".join(f"{r[key]:>12.2f}" for r in results))
    groups = sorted(
        {g for r in results for g in r["groups"]}, key=lambda g: -max(r["groups"].get(g, 0) for r in results)
    )
    for g in groups:
        print(f"{'    ' + g:<52}" + "".join(f"{r['groups'].get(g, 0.0):>12.2f}" for r in results))
    print(f"{'peak RSS MiB':<52}" + "".join(f"{r['peak_mib']:>12.0f}" for r in results))
    print(
        f"{'heap used after the cycles and a full GC, MiB':<52}"
        + "".join(f"{r['live_mib']:>12.0f}" for r in results)
    )
    print(f"uptime after: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
