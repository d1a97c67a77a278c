"""The report's summary (per-broker table, totals, lag and disk series) against the same numbers
counted in plain Python from the snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.snapshot import ClusterSnapshot, LogDir
from kafka_health_spark.frames import build_frames
from kafka_health_spark.summary import TOP_GROUPS, summarize
from kafka_health_spark.thresholds import Thresholds
from tests.spark.builders import at, balanced_topic, brokers, end_offsets, group, part, record, snapshot

pytestmark = pytest.mark.spark


def _cycle(i: int) -> ClusterSnapshot:
    """Minute i (-30..0): broker 3 dead, one partition led by a non-preferred replica, one
    leaderless; ten groups whose lag grows by group and by minute; disk growing on 0 and 1."""
    partitions = [
        *balanced_topic("orders", 6),
        part("audit", 0, 1, [0, 1, 2]),
        part("audit", 1, None, [3], []),
    ]
    ends = {(p.topic, p.partition): 1000 + 10 * i for p in partitions}
    groups = [group(f"g{g}", {("orders", p): 1000 - 7 * g - 3 * i for p in range(6)}) for g in range(10)]
    dirs = [
        LogDir(broker_id=0, path="/d0", used_bytes=100 + 5 * i, total_bytes=1000),
        LogDir(broker_id=1, path="/d1", used_bytes=200 + 9 * i, total_bytes=None),
    ]
    return snapshot(
        partitions=partitions,
        broker_list=brokers(0, 1, 2, dead=(3,)),
        offsets=end_offsets(ends),
        groups=groups,
        log_dirs=dirs,
        taken_at=at(-30 + i * 10),
    )


def test_summary_counts_what_the_snapshots_hold(spark: SparkSession, tmp_path: Path) -> None:
    snaps = [_cycle(i) for i in range(4)]
    record(tmp_path, snaps)
    now = snaps[-1]
    t = Thresholds()
    s = summarize(build_frames(spark, now, str(tmp_path), t))

    assert (s.topics, s.partitions, s.groups) == (2, 8, 10)
    expected = {}
    for b in (0, 1, 2, 3):
        expected[b] = (
            next(x.alive for x in now.brokers if x.id == b),
            sum(b in p.replicas for p in now.partitions),
            sum(p.leader == b for p in now.partitions),
            sum(p.replicas[0] == b for p in now.partitions),
        )
    got = {b.broker: (b.alive, b.partitions, b.leaders, b.preferred_leaders) for b in s.brokers}
    assert got == expected
    assert [b.broker for b in s.brokers] == [0, 1, 2, 3]
    disk = {b.broker: (b.used_bytes, b.total_bytes) for b in s.brokers}
    # A broker's volume figures appear only when its size is known (disk_now); broker 1's is not.
    assert disk[0] == (115, 1000) and disk[1] == (None, None) and disk[2] == (None, None)

    def lag(snap: ClusterSnapshot, gid: str) -> float:
        ends = {(o.topic, o.partition): o.log_end_offset for o in snap.offsets}
        g = next(g for g in snap.groups if g.group_id == gid)
        return float(sum(max(ends[(o.topic, o.partition)] - o.committed_offset, 0) for o in g.offsets))

    top = sorted((g.group_id for g in now.groups), key=lambda gid: (-lag(now, gid), gid))[:TOP_GROUPS]
    assert sorted({p.key for p in s.lag}) == sorted(top) and len(top) == TOP_GROUPS
    assert [(p.key, p.ts, p.value) for p in s.lag] == sorted(
        (gid, snap.taken_at, lag(snap, gid)) for gid in top for snap in snaps
    )
    assert [(p.key, p.ts, p.value) for p in s.disk_used_bytes] == sorted(
        (str(d.broker_id), snap.taken_at, float(d.used_bytes)) for snap in snaps for d in snap.log_dirs
    )


KINDS = {"crossed": "consumer", "caught_up": "classic", "older": "unknown", "two": "consumer"}


def test_lag_seconds_now_is_each_groups_worst_partition_per_topic(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Log ends 1000, 1100, 1200, 1300 at -30, -20, -10, 0 min on orders-0 and orders-1."""
    committed_now = {
        "crossed": {("orders", 0): 1150},  # the log end passed 1150 at -15 min: 900 s
        "caught_up": {("orders", 0): 1300},  # 0 s
        "older": {("orders", 0): 900},  # before the oldest sample: at least 1800 s
        "two": {("orders", 0): 1250, ("orders", 1): 1050},  # 300 s and 1500 s: 1500 s
    }
    snaps = [
        snapshot(
            partitions=balanced_topic("orders", 2),
            offsets=end_offsets({("orders", 0): 1000 + 100 * i, ("orders", 1): 1000 + 100 * i}),
            groups=[group(g, c).model_copy(update={"kind": KINDS[g]}) for g, c in committed_now.items()],
            taken_at=at(-30 + 10 * i),
        )
        for i in range(4)
    ]
    record(tmp_path, snaps[:-1])
    s = summarize(build_frames(spark, snaps[-1], str(tmp_path), Thresholds()))
    assert [(g.group, g.topic, g.kind, g.seconds, g.lower_bound) for g in s.lag_seconds] == [
        ("caught_up", "orders", "classic", 0.0, False),
        ("crossed", "orders", "consumer", 900.0, False),
        ("older", "orders", "unknown", 1800.0, True),
        ("two", "orders", "consumer", 1500.0, False),
    ]
