"""Small, readable ClusterSnapshots for the check tests: 3 live brokers, RF 3 / min ISR 2 by default."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pyspark.sql import SparkSession

from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Finding
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
from kafka_health_spark.checks import Check
from kafka_health_spark.frames import build_frames
from kafka_health_spark.runner import run_checks
from kafka_health_spark.thresholds import Thresholds

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
CLUSTER = "test-cluster"


def brokers(*ids: int, dead: tuple[int, ...] = ()) -> list[Broker]:
    return [
        Broker(id=i, host="127.0.0.1", port=9092 + i, alive=i not in dead, fenced=i in dead)
        for i in sorted({*ids, *dead})
    ]


def part(
    topic: str, p: int, leader: int | None, replicas: list[int], isr: list[int] | None = None
) -> Partition:
    return Partition(
        topic=topic, partition=p, leader=leader, replicas=replicas, isr=replicas if isr is None else isr
    )


def balanced_topic(topic: str, partitions: int = 6, n_brokers: int = 3) -> list[Partition]:
    """RF-3 partitions, preferred leaders round-robin, each led by its preferred replica."""
    out = []
    for p in range(partitions):
        replicas = [(p + k) % n_brokers for k in range(3)]
        out.append(part(topic, p, replicas[0], replicas))
    return out


def config(topic: str, min_isr: int = 2, unclean: bool = False) -> TopicConfig:
    return TopicConfig(topic=topic, min_insync_replicas=min_isr, unclean_leader_election_enable=unclean)


def quorum(
    leader: int | None = 0,
    lags: dict[int, int] | None = None,
    caught_up_ago_s: float = 0,
    observers: dict[int, int] | None = None,
) -> Quorum:
    """Voters (and observers) by id → lag; a lagging one last caught up `caught_up_ago_s` ago."""
    lags = lags if lags is not None else {0: 0, 1: 0, 2: 0}
    now_ms = int(T0.timestamp() * 1000)

    def members(by_lag: dict[int, int]) -> list[QuorumVoter]:
        return [
            QuorumVoter(
                id=v,
                log_end_offset=1000 - lag,
                lag=lag,
                last_caught_up_ms=now_ms - int((caught_up_ago_s if lag else 0) * 1000),
            )
            for v, lag in by_lag.items()
        ]

    return Quorum(
        leader_id=leader,
        leader_epoch=5,
        high_watermark=1000,
        voters=members(lags),
        observers=members(observers or {}),
    )


def snapshot(
    *,
    partitions: list[Partition] | None = None,
    configs: list[TopicConfig] | None = None,
    broker_list: list[Broker] | None = None,
    offsets: list[PartitionOffsets] | None = None,
    groups: list[ConsumerGroup] | None = None,
    log_dirs: list[LogDir] | None = None,
    quorum_state: Quorum | None = None,
    taken_at: datetime = T0,
) -> ClusterSnapshot:
    """A snapshot; configs default to min ISR 2 for every topic of `partitions`."""
    partitions = partitions or []
    topics = sorted({p.topic for p in partitions})
    return ClusterSnapshot(
        cluster=CLUSTER,
        taken_at=taken_at,
        cluster_id="abc",
        brokers=broker_list if broker_list is not None else brokers(0, 1, 2),
        quorum=quorum_state if quorum_state is not None else quorum(),
        partitions=partitions,
        topic_configs=configs if configs is not None else [config(t) for t in topics],
        offsets=offsets or [],
        groups=groups or [],
        log_dirs=log_dirs or [],
    )


def group(
    group_id: str, committed: dict[tuple[str, int], int | None], state: str = "Stable", members: int = 1
) -> ConsumerGroup:
    return ConsumerGroup(
        group_id=group_id,
        state=state,
        members=members if state != "Empty" else 0,
        member_ids=[f"m{i}" for i in range(members)] if state != "Empty" else [],
        offsets=[GroupOffset(topic=t, partition=p, committed_offset=o) for (t, p), o in committed.items()],
    )


def end_offsets(
    ends: dict[tuple[str, int], int], start: int = 0, stable: dict[tuple[str, int], int] | None = None
) -> list[PartitionOffsets]:
    """Log start `start` and end `ends`; the last stable offset from `stable` (unread without)."""
    return [
        PartitionOffsets(
            topic=t,
            partition=p,
            log_start_offset=start,
            log_end_offset=e,
            last_stable_offset=(stable or {}).get((t, p)),
        )
        for (t, p), e in ends.items()
    ]


def record(root: Path, snapshots: list[ClusterSnapshot]) -> None:
    """Write `snapshots` to a history with the real store, in time order."""
    store = HistoryStore(root)
    for s in sorted(snapshots, key=lambda s: s.taken_at):
        result = store.append(s)
        assert result.skipped is None, result.skipped


def at(minutes: float) -> datetime:
    """T0 shifted by `minutes` (negative: before the snapshot being diagnosed)."""
    return T0 + timedelta(minutes=minutes)


def check_findings(
    spark: SparkSession,
    check: Check,
    snap: ClusterSnapshot,
    history: Path | None = None,
    **thresholds: object,
) -> list[Finding]:
    """Run one check (as a diagnosis would) over `snap` and the history under `history`."""
    t = Thresholds().with_overrides(thresholds)
    frames = build_frames(spark, snap, str(history) if history is not None else None, t)
    return run_checks(frames, t, [check])


def by_check(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def partitions_of(findings: list[Finding], check: str) -> set[tuple[str, int]]:
    return {
        (f.subject.topic, f.subject.partition)
        for f in findings
        if f.check == check and f.subject.topic is not None and f.subject.partition is not None
    }
