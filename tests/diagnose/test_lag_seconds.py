"""Lag in seconds on the real cluster, against the true age of the committed record.

A producer writes at a steady rate; a consumer reads and commits as it goes while the history
takes a snapshot every INTERVAL seconds, then pauses (still a member) while the snapshots go on.
The diagnosis's `lag_seconds` for the partition must be within 10% (or one sampling interval) of
the true lag: the time since the record at the committed offset was written, read by the test
from that record's own timestamp. The lag in records is the one `kafka-consumer-groups
--describe` prints, read after the diagnosis's snapshot (the producer is stopped first)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import SparkSession

from kafka_health.diagnose import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import SubjectKind
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.faults import create_topic
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import group_lag, snapshot_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

RATE = 50  # records per second
INTERVAL = 2.0  # seconds between snapshots


def steady_producer(bootstrap: str, topic: str, stop: threading.Event) -> threading.Thread:
    def run() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        next_at = time.monotonic()
        while not stop.is_set():
            producer.produce(topic, value=b"x", partition=0)
            producer.poll(0)
            next_at += 1 / RATE
            time.sleep(max(0.0, next_at - time.monotonic()))
        producer.flush(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def written_at(bootstrap: str, topic: str, offset: int) -> datetime:
    """The timestamp (CreateTime, set by the producer) of the record at `offset`."""
    reader = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
    )
    try:
        reader.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = reader.poll(1.0)
            if msg is not None and msg.error() is None:
                assert msg.offset() == offset
                return datetime.fromtimestamp(msg.timestamp()[1] / 1000, UTC)
        raise AssertionError(f"no record at offset {offset}")
    finally:
        reader.close()


def test_lag_in_seconds_is_the_age_of_the_committed_record(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = group = unique_name
    create_topic(bootstrap, topic, partitions=1)
    stop = threading.Event()
    producing = steady_producer(bootstrap, topic, stop)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    store = HistoryStore(tmp_path)
    try:
        consumer.subscribe([topic])
        for _ in range(4):  # keeping up: read and commit for one interval, then a snapshot
            until = time.monotonic() + INTERVAL
            while time.monotonic() < until:
                consumer.poll(0.1)
            consumer.commit(asynchronous=False)
            store.append(snapshot_of(bootstrap))
        consumer.pause(consumer.assignment())
        for _ in range(5):  # paused, still a member: the log end runs away from the committed offset
            consumer.poll(INTERVAL)
            store.append(snapshot_of(bootstrap))
        now = snapshot_of(bootstrap)
        exact = snapshot_of(bootstrap, exact_lag=True)  # consumerLag.timeLag: Exact
        stop.set()
        producing.join(30)
        d = run_diagnosis(now, tmp_path, Thresholds(lag_window_samples=4), spark)
        d_exact = run_diagnosis(exact, tmp_path, Thresholds(lag_window_samples=4), spark)
        tool = group_lag(kafka, group)
    finally:
        stop.set()
        consumer.close()

    (offsets,) = [g for g in now.groups if g.group_id == group]
    (committed,) = [o.committed_offset for o in offsets.offsets]
    assert committed is not None
    true_age = (now.taken_at - written_at(bootstrap, topic, committed)).total_seconds()
    (part,) = [
        f
        for f in d.findings
        if f.check == "consumer_lag" and f.subject.kind is SubjectKind.PARTITION and f.subject.group == group
    ]
    reported = float(part.evidence["lag_seconds"])  # type: ignore[arg-type]
    print(
        f"lag_seconds reported {reported:.2f} s, true age {true_age:.2f} s, lag {part.evidence['lag']} records"
    )
    assert part.evidence["status"] == "STALL" and part.evidence["lag_seconds_lower_bound"] == 0
    assert abs(reported - true_age) <= max(0.1 * true_age, INTERVAL)
    assert 8 <= true_age <= 20  # the pause lasted five intervals
    assert part.evidence["committed_offset"] == committed
    assert tool[(topic, 0)] is not None and tool[(topic, 0)] >= part.evidence["lag"]  # type: ignore[operator]

    # Exact: the record at the committed offset fetched; its lag in seconds is its age, to the ms.
    (offset,) = [o for g in exact.groups if g.group_id == group for o in g.offsets]
    assert offset.committed_offset == committed
    assert offset.committed_timestamp == written_at(bootstrap, topic, committed)
    (part_exact,) = [
        f
        for f in d_exact.findings
        if f.check == "consumer_lag" and f.subject.kind is SubjectKind.PARTITION and f.subject.group == group
    ]
    exact_age = (exact.taken_at - written_at(bootstrap, topic, committed)).total_seconds()
    reported_exact = float(part_exact.evidence["lag_seconds"])  # type: ignore[arg-type]
    print(f"| interpolated | {reported:.2f} s | true {true_age:.2f} s |")
    print(f"| exact        | {reported_exact:.2f} s | true {exact_age:.2f} s |")
    assert abs(reported_exact - exact_age) <= 0.1 and part_exact.evidence["lag_seconds_lower_bound"] == 0
