"""`hanging_transaction` on hand-built snapshots: only transactions their coordinator does not
list, each with the offsets it holds back (the real cluster and `kafka-transactions find-hanging`
are in tests/diagnose/test_hanging_transactions.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health.models.snapshot import OpenTransaction
from kafka_health_spark.checks import transactions
from tests.spark.builders import T0, check_findings, end_offsets, snapshot

pytestmark = pytest.mark.spark


def txn(
    partition: int, *, listed: bool = False, txn_id: str | None = None, start: int = 100
) -> OpenTransaction:
    return OpenTransaction(
        topic="orders",
        partition=partition,
        producer_id=4000 + partition,
        producer_epoch=1,
        coordinator_epoch=-1,
        start_offset=start,
        last_timestamp=T0 - timedelta(minutes=42, seconds=30),
        transactional_id=txn_id,
        coordinator_state="Ongoing" if txn_id else None,
        coordinator_lists_partition=listed,
    )


def test_only_what_no_coordinator_will_end_is_hanging(spark: SparkSession) -> None:
    s = snapshot(offsets=end_offsets({("orders", 0): 250, ("orders", 1): 900, ("orders", 2): 100}))
    s.open_transactions = [
        txn(0),  # no transactional id lists producer 4000
        txn(1, txn_id="app-1", start=600),  # its coordinator's transaction lacks orders-1
        txn(2, listed=True, txn_id="app-2"),  # listed: the coordinator ends it at its timeout
        txn(3),  # no offsets read for orders-3: the high watermark is unknown
    ]
    found = {f.subject.partition: f for f in check_findings(spark, transactions.hanging_transaction, s)}
    assert set(found) == {0, 1, 3}
    assert all(f.severity is Severity.CRITICAL for f in found.values())
    zero = found[0]
    assert zero.message == (
        "orders-0 holds a hanging transaction of producer 4000 (epoch 1) open since offset 100, last heard "
        "from 42 min ago, and no transactional id lists this producer: its last stable offset stays at "
        "100, so read_committed consumers stop there (150 record(s) behind the high watermark)."
    )
    assert zero.evidence["last_stable_offset"] == 100 and zero.evidence["high_watermark"] == 250
    assert zero.evidence["minutes_since_last_heard"] == 42 and zero.evidence["transactional_id"] is None
    assert "its coordinator's transaction app-1 (Ongoing) does not include this partition" in found[1].message
    assert found[3].evidence["high_watermark"] is None and "behind" not in found[3].message
    assert found[1].remediation == (
        "abort it: kafka-health abort-transaction -b <brokers> --topic orders --partition 1 --start-offset 600 "
        "--execute (it aborts only a hanging transaction; kafka-transactions abort takes the same arguments); "
        "check first that no live producer still writes with producer id 4001"
    )


def test_nothing_read_nothing_found(spark: SparkSession) -> None:
    assert check_findings(spark, transactions.hanging_transaction, snapshot()) == []
