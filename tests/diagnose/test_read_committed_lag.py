"""read_committed lag on the real cluster: a group held by an open transaction is BLOCKED, not slow.

Partition 0 of a topic gets 10 records, then a transaction left open (one record), then 5 plain
records; partition 1 gets 15 plain records. A read_committed consumer (librdkafka's default)
reads and commits all it may: 10 on partition 0, where the open transaction holds the last
stable offset, and everything on partition 1. Over a short history the group's committed offset
on partition 0 stays at the last stable offset while the log end is beyond it, so the diagnosis
says BLOCKED, with the last stable offset the broker answers (ListOffsets read_committed) and
`kafka-transactions describe-producers` names as the transaction's start, and the lag
`kafka-consumer-groups --describe` prints. Once the transaction is aborted, the consumer moves
on and the finding is gone."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from pyspark.sql import SparkSession

from kafka_health.diagnose import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Diagnosis, Finding, SubjectKind
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.faults import create_topic
from kafka_health.testbed.transactions import left_open
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import group_lag, produce, snapshot_of, stable_and_end, transaction_starts

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def consume(consumer: Consumer, records: int, timeout: float = 60.0) -> None:
    """Read `records` records (every one a read_committed consumer may see) and commit them."""
    got, deadline = 0, time.monotonic() + timeout
    while got < records and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            got += 1
    assert got == records, f"read {got} of {records} records"
    consumer.commit(asynchronous=False)


def history_and_diagnosis(consumer: Consumer, bootstrap: str, root: Path, spark: SparkSession) -> Diagnosis:
    """Three snapshots a second apart, the consumer polling (a member) between them; then a diagnosis."""
    store = HistoryStore(root)
    for _ in range(3):
        consumer.poll(0.5)
        store.append(snapshot_of(bootstrap))
        time.sleep(1)
    consumer.poll(0.5)
    return run_diagnosis(snapshot_of(bootstrap), root, Thresholds(), spark)


def lag_findings(d: Diagnosis, group: str) -> dict[int | None, Finding]:
    """The group's consumer_lag findings: by partition, the group's own under None."""
    return {
        f.subject.partition: f for f in d.findings if f.check == "consumer_lag" and f.subject.group == group
    }


def test_a_group_held_by_an_open_transaction_is_blocked_until_it_ends(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = group = unique_name
    create_topic(bootstrap, topic, partitions=2)
    produce(bootstrap, topic, {0: 10, 1: 10})
    txn = left_open(bootstrap, topic, 0, f"{topic}-txn")
    produce(bootstrap, topic, {0: 5, 1: 5})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.subscribe([topic])
        consume(consumer, 10 + 15)
        d = history_and_diagnosis(consumer, bootstrap, tmp_path / "open", spark)
        stable, end = stable_and_end(bootstrap, topic, 0)
        starts = transaction_starts(kafka, topic, 0)
        tool = group_lag(kafka, group)

        assert (stable, end, starts) == (10, 16, {10})  # the oracles agree on the picture
        found = lag_findings(d, group)
        assert set(found) == {0, None}  # partition 1 read to its end: OK
        part = found[0]
        assert part.subject.kind is SubjectKind.PARTITION and part.subject.topic == topic
        assert part.evidence["status"] == "BLOCKED"
        assert part.evidence["last_stable_offset"] == stable
        assert part.evidence["committed_offset"] == stable
        assert (part.evidence["lag"], part.evidence["log_end_offset"]) == (tool[(topic, 0)], end)
        assert part.evidence["stable_lag"] == 0
        assert found[None].evidence["status"] == "BLOCKED"

        txn.abort_transaction(30)
        consume(consumer, 5)  # the records behind the aborted one, now stable
        consumer.poll(1.0)  # fetches the abort marker: the position moves past it
        consumer.commit(offsets=consumer.position(consumer.assignment()), asynchronous=False)
        d = history_and_diagnosis(consumer, bootstrap, tmp_path / "ended", spark)
        stable, end = stable_and_end(bootstrap, topic, 0)
        assert stable == end and transaction_starts(kafka, topic, 0) == set()
        assert group_lag(kafka, group)[(topic, 0)] == 0
        assert lag_findings(d, group) == {}
    finally:
        consumer.close()
