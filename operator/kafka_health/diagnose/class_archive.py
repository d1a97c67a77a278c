"""Build the driver JVM's class archive (`kafka_health_spark.class_archive`) for this JDK and Spark.

    python -m kafka_health.diagnose.class_archive [--force]

One JVM diagnoses a small made-up cluster the ways the product does (the CLI's settings with and
without history, then the operator's: generated code, windows kept in memory) and writes the
classes it loaded to the archive when it exits. Later driver JVMs map them instead of loading
them. The file is written under a temporary name and renamed when the JVM has exited, so a JVM
starting meanwhile never maps half an archive. Exit codes: 0 built or already there (or no
archive wanted: `KAFKA_HEALTH_SPARK_CLASS_ARCHIVE=off`, no `java`), 1 the build failed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_health.diagnose.run import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.snapshot import (
    Broker,
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    LogDir,
    Partition,
    PartitionOffsets,
    Quorum,
    QuorumVoter,
    TopicConfig,
)
from kafka_health_spark import class_archive, reuse
from kafka_health_spark.session import SHORT_LIVED_CONF, get_session, stop_session
from kafka_health_spark.slot_windows import SlotWindows
from kafka_health_spark.windows import HistoryWindows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CLUSTER = "class-archive"
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
SAMPLES = 4
INTERVAL = timedelta(seconds=60)


def training_snapshot(k: int) -> ClusterSnapshot:
    """Sample k of a 3-broker cluster with something for most checks to find: broker 2 gone in
    the last sample, an RF-1 topic, a group whose lag grows, a lagging controller voter."""
    taken_at = T0 + k * INTERVAL
    last = k == SAMPLES - 1
    live = [0, 1] if last else [0, 1, 2]
    partitions = []
    for p in range(6):
        replicas = [(p + i) % 3 for i in range(3)]
        isr = [b for b in replicas if b in live]
        leader = replicas[(k + p) % 2] if replicas[(k + p) % 2] in live else isr[0]
        partitions.append(Partition(topic="orders", partition=p, leader=leader, replicas=replicas, isr=isr))
    partitions.append(
        Partition(
            topic="fragile",
            partition=0,
            leader=2 if not last else None,
            replicas=[2],
            isr=[] if last else [2],
        )
    )
    now_ms = int(taken_at.timestamp() * 1000)
    return ClusterSnapshot(
        cluster=CLUSTER,
        taken_at=taken_at,
        cluster_id="class-archive",
        brokers=[
            Broker(id=b, host="127.0.0.1", port=9092 + b, alive=b in live, fenced=b not in live)
            for b in range(3)
        ],
        quorum=Quorum(
            leader_id=0,
            leader_epoch=3,
            high_watermark=1000 + k,
            voters=[
                QuorumVoter(id=0, log_end_offset=1000 + k, lag=0, last_caught_up_ms=now_ms),
                QuorumVoter(id=1, log_end_offset=1000 + k, lag=0, last_caught_up_ms=now_ms),
                QuorumVoter(id=2, log_end_offset=900, lag=100 + k, last_caught_up_ms=now_ms - 600_000),
            ],
            observers=[],
        ),
        partitions=partitions,
        topic_configs=[
            TopicConfig(topic="orders", min_insync_replicas=2, unclean_leader_election_enable=False),
            TopicConfig(topic="fragile", min_insync_replicas=1, unclean_leader_election_enable=True),
        ],
        offsets=[
            PartitionOffsets(topic="orders", partition=p, log_start_offset=0, log_end_offset=10_000 * (k + 1))
            for p in range(6)
        ],
        groups=[
            ConsumerGroup(
                group_id="billing",
                state="Stable",
                members=1,
                member_ids=[f"billing-{k % 2}"],
                offsets=[GroupOffset(topic="orders", partition=p, committed_offset=100) for p in range(6)],
            )
        ],
        log_dirs=[
            LogDir(
                broker_id=b,
                path="/var/lib/kafka",
                used_bytes=(50 + 10 * k) * 2**30,
                total_bytes=100 * 2**30,
                usable_bytes=(50 - 10 * k) * 2**30,
            )
            for b in live
        ],
        missing=[],
    )


def train(spark: SparkSession, history: Path) -> None:
    """Diagnose the training cluster as the CLI does, then as the operator does."""
    store = HistoryStore(history)
    # As the operator's workers keep them (`cycle._plans_for`, `cycle._windows_for`).
    plans = reuse.ReusedPlans(spark) if reuse.available(spark) else None
    windows = (SlotWindows if plans is not None else HistoryWindows)(spark, str(history), CLUSTER)
    for k in range(SAMPLES):
        snapshot = training_snapshot(k)
        written = store.append(snapshot)
        if k == 0:
            run_diagnosis(snapshot, None, None, spark)  # `diagnose` without --history
        if k == SAMPLES - 2:
            run_diagnosis(snapshot, history, None, spark)  # `diagnose --history`
        if k == SAMPLES - 1:  # the operator's settings: generated code, windows in memory
            for key in SHORT_LIVED_CONF:
                spark.conf.unset(key)
            windows.record(written.tables, snapshot.taken_at)
            run_diagnosis(snapshot, history, None, spark, windows=windows, plans=plans)
    if plans is not None:
        plans.close()


def build(target: Path) -> None:
    """Write the archive to `target` (through a temporary file in the same directory)."""

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    try:
        spark = get_session(short_lived=True, record_classes_to=partial)
        with tempfile.TemporaryDirectory(prefix="kafka-health-class-archive-") as history:
            train(spark, Path(history))
        exit_code = stop_session(wait_for_jvm=True)
        if exit_code != 0:  # a JVM that failed may have left half an archive
            raise RuntimeError(f"the driver JVM exited with {exit_code} while writing {partial}")
        if not partial.is_file() or partial.stat().st_size == 0:
            raise RuntimeError(f"the JVM exited without writing {partial}")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:

    parser = argparse.ArgumentParser(
        prog="python -m kafka_health.diagnose.class_archive", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--force", action="store_true", help="build it again even if it exists")
    args = parser.parse_args(argv)
    target = class_archive.archive_path()
    if target is None:
        print(f"class archive: not wanted ({class_archive.ENV}=off, or no java found)", file=sys.stderr)
        return 0
    if target.is_file() and not args.force:
        print(f"class archive: {target}", file=sys.stderr)
        return 0
    try:
        build(target)
    except Exception as exc:  # the JVM's errors come as many types; the caller needs one line
        print(f"class archive: not built ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    print(f"class archive: built {target} ({target.stat().st_size // 2**20} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
