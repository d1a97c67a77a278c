"""One-shot `kafka-health diagnose` on the 3-broker testbed: its wall time, and the floor under it.

    .venv/bin/kafka-health testbed up --state-dir /tmp/tb-oneshot --base-port 47092
    .venv/bin/python bench/oneshot_bench.py --state-dir /tmp/tb-oneshot --runs 5

The bench creates the README's demo shapes on the testbed (a group with lag, an RF-1 topic: a few
findings to report, 8 partitions in all besides Kafka's own), then times, each --runs times and
side by side in one run, every process the way a user starts it (a new Python, a new JVM):

- `python`: the interpreter importing the CLI (`kafka-health --help`);
- `spark start`: the CLI's Python plus a Spark session started (as `diagnose` starts it), one
  trivial job, and stopped: the floor of any command that runs Spark in its own JVM;
- `diagnose`: `kafka-health diagnose -b … -o json`, as a user runs it (its exit code is the
  cluster's health: 0, 1 or 4 all count; 3 fails the bench);
- `diagnose@base` (with `--baseline DIR`): the same command from another commit's checkout
  (`git worktree add DIR REV`), run alternately with this one so both meet the same load.

Medians and ranges in seconds, with `uptime` before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer

from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed

BIN = Path(sys.executable).parent
SPARK_START = (
    "from kafka_health.cli.main import app\n"
    "from kafka_health_spark.session import get_session, stop_session\n"
    "get_session(driver_memory='1g', short_lived=True).range(1).count()\n"
    "stop_session()\n"
)


def _timed(cmd: list[str], ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> float:
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    elapsed = time.monotonic() - started
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:3])} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def _shapes(bootstrap: str) -> None:
    """A lagging group on a 6-partition topic and an RF-1 topic of 2 partitions (once per testbed)."""
    if "oneshot-orders" in faults.admin(bootstrap).list_topics(timeout=10).topics:
        return
    faults.create_topic(bootstrap, "oneshot-orders", partitions=6, rf=3)
    faults.create_topic(bootstrap, "oneshot-fragile", partitions=2, rf=1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(600):
        producer.produce("oneshot-orders", value=b"x" * 100, partition=i % 6)
    producer.flush(30)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "oneshot-billing", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["oneshot-orders"])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 100 and time.monotonic() < deadline:
        if (msg := consumer.poll(1.0)) is not None and msg.error() is None:
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _row(name: str, figures: list[float]) -> str:
    return f"{name:<14} {statistics.median(figures):>7.2f} {min(figures):>7.2f} {max(figures):>7.2f}"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--state-dir", type=Path, required=True)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument(
        "--snapshot",
        type=Path,
        help="time `diagnose --snapshot FILE` (a saved ClusterSnapshot, e.g. a large synthetic one) "
        "instead of reading the testbed",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of another commit (git worktree add DIR REV): its diagnose is timed too, "
        "alternating with this one's",
    )
    args = p.parse_args()
    state = Testbed(args.state_dir).load()
    if state is None:
        raise SystemExit(f"no testbed in {args.state_dir}: run `kafka-health testbed up --state-dir …` first")
    bootstrap = state.bootstrap_servers
    _shapes(bootstrap)
    source = ["--snapshot", str(args.snapshot)] if args.snapshot else ["-b", bootstrap]
    print(_uptime(), flush=True)

    cli = str(BIN / "kafka-health")
    python = [_timed([cli, "--help"]) for _ in range(args.runs)]
    spark = [_timed([sys.executable, "-c", SPARK_START]) for _ in range(args.runs)]
    command = [cli, "diagnose", *source, "-o", "json"]
    diagnose: list[float] = []
    baseline: list[float] = []
    old_env = None
    if args.baseline is not None:
        code = f"{args.baseline.resolve() / 'operator'}:{args.baseline.resolve() / 'spark'}"
        old_env = {**os.environ, "PYTHONPATH": code}
    for _ in range(args.runs):
        if old_env is not None:
            baseline.append(_timed(command, ok=(0, 1, 4), env=old_env))
        diagnose.append(_timed(command, ok=(0, 1, 4)))
    report = subprocess.run(command, capture_output=True, text=True, check=False)
    findings = len(json.loads(report.stdout)["findings"]) if report.stdout else 0
    if old_env is not None:
        old = subprocess.run(command, capture_output=True, text=True, check=False, env=old_env)
        same = old.stdout and json.loads(old.stdout)["findings"] == json.loads(report.stdout)["findings"]
        print(f"findings of this commit and the baseline: {'the same' if same else 'DIFFERENT'}")

    what = f"snapshot {args.snapshot.name}" if args.snapshot else "3-broker testbed"
    print(f"{what}, {findings} findings; seconds over {args.runs} runs")
    print(f"{'process':<14} {'median':>7} {'min':>7} {'max':>7}")
    rows = [("python", python), ("spark start", spark), ("diagnose", diagnose)]
    if baseline:
        rows.append(("diagnose@base", baseline))
    for name, figures in rows:
        print(_row(name, figures))
    print(_uptime())


if __name__ == "__main__":
    main()
