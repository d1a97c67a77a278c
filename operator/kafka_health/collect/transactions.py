"""Open transactions older than the transaction timeout, read as `kafka-transactions.sh
find-hanging` reads them (KIP-664), with kafka-python's public admin calls:

1. DescribeProducers, asked of each partition's leader in batches of `BATCH` partitions: the
   producers with an open transaction (a current transaction start offset) that the leader last
   heard from longer ago than `older_than` are the candidates;
2. ListTransactions filtered by the candidates' producer ids (every broker): the transactional
   id each belongs to;
3. DescribeTransactions of those ids (their coordinators): the partitions each transaction
   includes.

A candidate is hanging when no transactional id lists its producer id, or when the coordinator's
transaction does not include its partition: the coordinator will never write its end marker, so
the partition's last stable offset stays at the transaction's start and `read_committed`
consumers stop there. The rule is the diagnosis's (`checks/transactions.py`); this module only
reads the facts (`OpenTransaction`).

DescribeProducers needs READ on the topic (Kafka checks READ, not DESCRIBE), ListTransactions and
DescribeTransactions DESCRIBE on the transactional id. ListTransactions leaves out the ids the
principal may not DESCRIBE without an error, exactly as for the tool: without DESCRIBE on
TRANSACTIONAL_ID `*`, an open transaction of another id reads as hanging (docs/policy.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kafka_health.collect.results import Partial, TopicPartitionKey
from kafka_health.models.snapshot import OpenTransaction

# Partitions per DescribeProducers request (the tool's own batch size).
BATCH = 500


Describe = Callable[[BaseException], str]
"""How a client error becomes a reason: the admin client's own, secret-free (`AdminApi.reason`)."""


def read_open_transactions(
    kp: Any,
    leaders: Mapping[TopicPartitionKey, int],
    older_than: timedelta,
    now: datetime,
    describe: Describe,
) -> Partial[str, list[OpenTransaction]]:
    """Per topic, its open transactions older than `older_than` at `now` (see the module
    docstring), or why its partitions' producers could not be read (`describe`d)."""
    producers = _candidates(kp, leaders, older_than, now, describe)
    out: Partial[str, list[OpenTransaction]] = Partial(errors=producers.errors)
    found = [row for rows in producers.values.values() for row in rows]
    ids = _transactional_ids(kp, {row["producer_id"] for row in found})
    described = _describe(kp, set(ids.values()))
    for topic in sorted(producers.values):
        out.values[topic] = [open_transaction(row, ids, described) for row in producers.values[topic]]
    return out


def open_transaction(
    row: Mapping[str, Any], ids: Mapping[int, str], described: Mapping[str, Any]
) -> OpenTransaction:
    """One candidate with what its coordinator says of it (pure: the rule's inputs)."""
    txn_id = ids.get(row["producer_id"])
    description = described.get(txn_id) if txn_id is not None else None
    listed = description is not None and any(
        tp.topic == row["topic"] and tp.partition == row["partition"] for tp in description.topic_partitions
    )
    return OpenTransaction(
        topic=row["topic"],
        partition=row["partition"],
        producer_id=row["producer_id"],
        producer_epoch=row["producer_epoch"],
        coordinator_epoch=row["coordinator_epoch"],
        start_offset=row["start_offset"],
        last_timestamp=datetime.fromtimestamp(row["last_timestamp"] / 1000, UTC),
        transactional_id=txn_id,
        coordinator_state=str(description.state.value) if description is not None else None,
        coordinator_lists_partition=listed,
    )


def _candidates(
    kp: Any,
    leaders: Mapping[TopicPartitionKey, int],
    older_than: timedelta,
    now: datetime,
    describe: Describe,
) -> Partial[str, list[dict[str, Any]]]:
    """Step 1: per topic, the producers whose open transaction the leader last heard of before
    `now - older_than`. A batch refused as a whole is asked again topic by topic, so one topic
    the principal may not READ does not hide the others."""
    by_leader: dict[int, list[TopicPartitionKey]] = defaultdict(list)
    for key, leader in sorted(leaders.items()):
        by_leader[leader].append(key)
    cutoff_ms = (now - older_than).timestamp() * 1000
    out: Partial[str, list[dict[str, Any]]] = Partial()
    for leader, keys in sorted(by_leader.items()):
        for start in range(0, len(keys), BATCH):
            batch = keys[start : start + BATCH]
            for topic, rows in _describe_producers(kp, leader, batch, out.errors, describe).items():
                out.values.setdefault(topic, []).extend(r for r in rows if r["last_timestamp"] < cutoff_ms)
    for topic in out.errors:
        out.values.pop(topic, None)
    return out


def _describe_producers(
    kp: Any, leader: int, batch: list[TopicPartitionKey], errors: dict[str, str], describe: Describe
) -> dict[str, list[dict[str, Any]]]:
    """The open transactions of `batch` on `leader`, per topic (each topic present); a topic
    whose read failed goes to `errors` instead."""
    try:
        return _rows(kp.describe_producers([_tp(k) for k in batch], broker_id=leader), batch)
    except Exception as exc:
        if len({t for t, _ in batch}) == 1:
            errors[batch[0][0]] = describe(exc)
            return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for topic in sorted({t for t, _ in batch}):
        out.update(_describe_producers(kp, leader, [k for k in batch if k[0] == topic], errors, describe))
    return out


def _rows(answer: Mapping[Any, Any], batch: list[TopicPartitionKey]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {t: [] for t, _ in batch}
    for tp, state in answer.items():
        for p in state.active_producers:
            if p.current_transaction_start_offset < 0:
                continue  # no transaction open (an idempotent producer, or between transactions)
            out[tp.topic].append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "producer_id": p.producer_id,
                    "producer_epoch": p.producer_epoch,
                    "coordinator_epoch": p.coordinator_epoch,
                    "start_offset": p.current_transaction_start_offset,
                    "last_timestamp": p.last_timestamp,
                }
            )
    return out


def _transactional_ids(kp: Any, producer_ids: Iterable[int]) -> dict[int, str]:
    """Step 2: producer id → transactional id, from every broker's ListTransactions."""
    wanted = sorted(set(producer_ids))
    if not wanted:
        return {}
    listed = kp.list_transactions(producer_id_filters=wanted)
    return {
        t.producer_id: t.transactional_id for ts in listed.values() for t in ts if t.producer_id in wanted
    }


def _describe(kp: Any, transactional_ids: set[str]) -> dict[str, Any]:
    """Step 3: each id's description; an id its coordinator no longer knows is left out (as the
    tool does: its open transactions are hanging). Asked together, then one by one when the
    whole request failed on one id."""
    from kafka.errors import TransactionalIdNotFoundError

    if not transactional_ids:
        return {}
    try:
        return dict(kp.describe_transactions(sorted(transactional_ids)))
    except TransactionalIdNotFoundError:
        pass
    out: dict[str, Any] = {}
    for txn_id in sorted(transactional_ids):
        try:
            out.update(kp.describe_transactions([txn_id]))
        except TransactionalIdNotFoundError:
            continue
    return out


def _tp(key: TopicPartitionKey) -> Any:
    from kafka.structs import TopicPartition

    return TopicPartition(key[0], key[1])
