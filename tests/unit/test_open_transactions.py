"""The open-transaction read (`collect.transactions`) on a stand-in for kafka-python's admin
client: which producers are candidates, what the coordinator's answers make of them, and how a
topic the principal may not READ is told apart from the others. The real cluster and
`kafka-transactions find-hanging` are in tests/diagnose/test_hanging_transactions.py."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from kafka.admin._transactions import (
    PartitionProducerState,
    ProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from kafka.errors import TopicAuthorizationFailedError, TransactionalIdNotFoundError
from kafka.structs import TopicPartition

from kafka_health.collect import security_errors
from kafka_health.collect.admin_api import describe_error
from kafka_health.collect.transactions import read_open_transactions

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def describe(exc: object) -> str:
    return describe_error(exc, ["s3cret"])


OLD = int((NOW - timedelta(minutes=30)).timestamp() * 1000)
FRESH = int((NOW - timedelta(minutes=1)).timestamp() * 1000)


def producer(pid: int, start: int, last: int) -> ProducerState:
    return ProducerState(
        producer_id=pid,
        producer_epoch=3,
        last_sequence=0,
        last_timestamp=last,
        coordinator_epoch=-1,
        current_transaction_start_offset=start,
    )


class Kp(NamedTuple):
    """What the brokers answer: producers per partition, transactional ids, descriptions."""

    producers: dict[TopicPartition, list[ProducerState]]
    ids: dict[int, str]
    described: dict[str, TransactionDescription]
    unreadable: frozenset[str] = frozenset()
    asked: list[tuple[str, Any]] = []

    def describe_producers(self, partitions: Iterable[TopicPartition], broker_id: int) -> dict[Any, Any]:
        parts = list(partitions)
        self.asked.append(("describe_producers", (broker_id, sorted(parts))))
        if any(tp.topic in self.unreadable for tp in parts):
            raise TopicAuthorizationFailedError("Topic authorization failed")
        return {tp: PartitionProducerState(active_producers=self.producers.get(tp, [])) for tp in parts}

    def list_transactions(self, producer_id_filters: list[int]) -> dict[int, list[TransactionListing]]:
        self.asked.append(("list_transactions", sorted(producer_id_filters)))
        listed = [
            TransactionListing(txn_id, pid, TransactionState.ONGOING)
            for pid, txn_id in self.ids.items()
            if pid in producer_id_filters
        ]
        return {0: listed[:1], 1: listed[1:]}

    def describe_transactions(self, ids: list[str]) -> dict[str, TransactionDescription]:
        self.asked.append(("describe_transactions", list(ids)))
        if any(i not in self.described for i in ids):
            raise TransactionalIdNotFoundError(ids[0])
        return {i: self.described[i] for i in ids}


def described(pid: int, *partitions: TopicPartition) -> TransactionDescription:
    return TransactionDescription(
        coordinator_id=0,
        state=TransactionState.ONGOING,
        producer_id=pid,
        producer_epoch=3,
        transaction_timeout_ms=60_000,
        transaction_start_time_ms=OLD,
        topic_partitions=set(partitions),
    )


def test_only_old_open_transactions_are_candidates_and_the_coordinator_decides_hanging() -> None:
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    kp = Kp(
        producers={
            a0: [producer(10, 5, OLD), producer(11, -1, OLD)],  # 11: idempotent, nothing open
            a1: [producer(12, 7, FRESH)],  # open, but heard from a minute ago
            b0: [producer(13, 9, OLD), producer(14, 2, OLD)],
        },
        ids={10: "t-10", 13: "t-13"},  # 14: no transactional id lists it
        described={"t-10": described(10, b0), "t-13": described(13, b0)},  # 10's txn lacks a-0
        asked=[],
    )
    leaders = {("a", 0): 0, ("a", 1): 1, ("b", 0): 0}
    out = read_open_transactions(kp, leaders, timedelta(minutes=15), NOW, describe)
    assert out.errors == {}
    rows = {(t.topic, t.partition, t.producer_id): t for ts in out.values.values() for t in ts}
    assert set(rows) == {("a", 0, 10), ("b", 0, 13), ("b", 0, 14)}
    assert not rows["a", 0, 10].coordinator_lists_partition and rows["a", 0, 10].transactional_id == "t-10"
    assert rows["b", 0, 13].coordinator_lists_partition and rows["b", 0, 13].coordinator_state == "Ongoing"
    assert rows["b", 0, 14].transactional_id is None and not rows["b", 0, 14].coordinator_lists_partition
    assert rows["a", 0, 10].start_offset == 5
    assert rows["a", 0, 10].last_timestamp == datetime.fromtimestamp(OLD / 1000, UTC)
    # Each leader asked once for its partitions; the coordinator only of the candidates.
    assert ("describe_producers", (0, [a0, b0])) in kp.asked and ("describe_producers", (1, [a1])) in kp.asked
    assert ("list_transactions", [10, 13, 14]) in kp.asked


def test_a_topic_the_principal_may_not_read_is_its_own_error_the_others_still_read() -> None:
    a0 = TopicPartition("a", 0)
    kp = Kp(
        producers={a0: [producer(10, 5, OLD)]}, ids={}, described={}, unreadable=frozenset({"b"}), asked=[]
    )
    out = read_open_transactions(kp, {("a", 0): 0, ("b", 0): 0}, timedelta(minutes=15), NOW, describe)
    assert set(out.errors) == {"b"} and "TopicAuthorizationFailedError" in out.errors["b"]
    assert [(t.topic, t.producer_id) for t in out.values["a"]] == [("a", 10)]
    assert "b" not in out.values
    denied = security_errors.authorization_denied("transactions:b", out.errors["b"])
    assert denied is not None and "lacks READ on TOPIC b" in denied and "--operation Read --topic b" in denied


def test_an_id_its_coordinator_no_longer_knows_is_described_alone_and_left_out() -> None:
    a0, a1 = TopicPartition("a", 0), TopicPartition("a", 1)
    kp = Kp(
        producers={a0: [producer(10, 5, OLD)], a1: [producer(11, 6, OLD)]},
        ids={10: "gone", 11: "t-11"},
        described={"t-11": described(11, a1)},
        asked=[],
    )
    out = read_open_transactions(kp, {("a", 0): 0, ("a", 1): 0}, timedelta(minutes=15), NOW, describe)
    rows = {t.producer_id: t for t in out.values["a"]}
    assert rows[10].transactional_id == "gone" and rows[10].coordinator_state is None
    assert not rows[10].coordinator_lists_partition
    assert rows[11].coordinator_lists_partition
    assert [a for a in kp.asked if a[0] == "describe_transactions"] == [
        ("describe_transactions", ["gone", "t-11"]),
        ("describe_transactions", ["gone"]),
        ("describe_transactions", ["t-11"]),
    ]


def test_nothing_open_asks_no_coordinator() -> None:
    kp = Kp(producers={TopicPartition("a", 0): [producer(10, -1, OLD)]}, ids={}, described={}, asked=[])
    out = read_open_transactions(kp, {("a", 0): 0}, timedelta(minutes=15), NOW, describe)
    assert out.values == {"a": []} and out.errors == {}
    assert [a[0] for a in kp.asked] == ["describe_producers"]
