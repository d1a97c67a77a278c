"""Transactions for the tests: one left hanging, and one merely open.

A hanging transaction is one its coordinator does not know: the producer wrote transactional
records to a partition it never added to its transaction (AddPartitionsToTxn). Kafka 3.6+
refuses such a write while `transaction.partition.verification.enable` is on (KIP-890), which is
the default; with it off (a dynamic broker config, `kafka-configs --entity-default`) the write is
accepted, as it was before 3.6 when a late retry or a coordinator failover did the same. No Kafka
client makes that write on purpose, so `hang` sends the two requests itself with kafka-python's
protocol classes: InitProducerId at the coordinator, then a transactional Produce at the leader.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer

VERIFICATION = "transaction.partition.verification.enable"


@dataclass(frozen=True)
class Hanging:
    """What `hang` left: the producer and the offset of its one record (the transaction's start)."""

    producer_id: int
    producer_epoch: int
    start_offset: int


# InitProducerId's answers while the coordinator is elected or loads its state: ask again.
_NOT_YET = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR"}


class _NotYet(Exception):
    pass


def hang(bootstrap: str, topic: str, partition: int, transactional_id: str, timeout: float = 60.0) -> Hanging:
    """Write one transactional record to `topic`-`partition` that no transaction includes (the
    brokers must have `VERIFICATION` off). Raises RuntimeError when a broker refuses a step."""
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout
    while True:
        admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap)  # a fresh coordinator cache each try
        try:
            coordinator = _coordinator(admin, transactional_id)
            hung: Hanging = admin._manager.run(_hang, admin, coordinator, topic, partition, transactional_id)
            return hung
        except _NotYet:
            if time.monotonic() > deadline:
                raise RuntimeError("the transaction coordinator did not become ready") from None
            time.sleep(1)
        finally:
            admin.close()


async def _hang(admin: Any, coordinator: int, topic: str, partition: int, transactional_id: str) -> Hanging:
    from kafka.protocol.producer.produce import ProduceRequest
    from kafka.protocol.producer.transaction import InitProducerIdRequest
    from kafka.record.memory_records import MemoryRecordsBuilder
    from kafka.structs import TopicPartition

    init = await admin._manager.send(
        InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60_000),
        node_id=coordinator,
    )
    if init.error_code in _NOT_YET:
        raise _NotYet(_NOT_YET[init.error_code])
    if init.error_code:
        raise RuntimeError(f"InitProducerId: error {init.error_code}")
    records = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=16384)
    records.set_producer_state(init.producer_id, init.producer_epoch, 0, True)
    records.append(int(time.time() * 1000), b"hanging", b"never committed", [])
    records.close()
    leader = next(iter(await admin._async_get_leader_for_partitions([TopicPartition(topic, partition)])))
    data = ProduceRequest.TopicProduceData
    produced = await admin._manager.send(
        ProduceRequest(
            transactional_id=transactional_id,
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                data(
                    name=topic,
                    partition_data=[data.PartitionProduceData(index=partition, records=records.buffer())],
                )
            ],
            min_version=3,
            max_version=9,
        ),
        node_id=leader,
    )
    answer = produced.responses[0].partition_responses[0]
    if answer.error_code:
        raise RuntimeError(f"Produce: error {answer.error_code} ({answer.error_message})")
    return Hanging(init.producer_id, init.producer_epoch, answer.base_offset)


def _coordinator(admin: Any, transactional_id: str, timeout: float = 60.0) -> int:
    """The transaction coordinator of `transactional_id`; the first transactional request of a
    cluster creates `__transaction_state`, whose partitions have no leader for a few seconds."""
    from kafka.errors import CoordinatorNotAvailableError
    from kafka.protocol.metadata import CoordinatorType

    deadline = time.monotonic() + timeout
    while True:
        try:
            node: int = admin._manager.run(
                admin._find_coordinator_id, transactional_id, CoordinatorType.TRANSACTION
            )
            return node
        except CoordinatorNotAvailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def left_open(
    bootstrap: str, topic: str, partition: int, transactional_id: str, timeout_ms: int = 60_000
) -> Producer:
    """A transactional producer with one record sent to `topic`-`partition` in a transaction it
    neither commits nor aborts: open, but listed by its coordinator (not hanging). The caller
    aborts it (`abort_transaction`) or lets the coordinator do so after its 60 s timeout."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=partition)
    if producer.flush(30) != 0:
        raise RuntimeError("the open transaction's record was not delivered")
    return producer
