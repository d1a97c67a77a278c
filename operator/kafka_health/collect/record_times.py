"""The timestamp of the record at given offsets, read by fetching it: what `consumerLag.timeLag:
Exact` turns into lag in seconds (now minus the time of the first record a group has not
consumed), where the interpolation over the history's samples only bounds it within a cycle.

One consumer of confluent-kafka, assigned the partitions at the wanted offsets (no group joined,
nothing committed: it needs READ on each TOPIC and nothing on any group), fetches the first
record of each; the record's timestamp is its producer's CreateTime, or the broker's
LogAppendTime on topics configured so. A partition whose first record at the offset is gone
(retention) answers from the next one. Bounded: at most `MAX_PARTITIONS` partitions a read (the
most lagging first) and `timeout` seconds; what is not read is that partition's error, and the
diagnosis then falls back to the interpolation."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_health.collect.results import Partial, TopicPartitionKey

MAX_PARTITIONS = 2_000
_CONSUMER = {
    "group.id": "kafka-health-record-times",  # required by the client; never joined
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "latest",
    # A record per partition is enough: keep each fetch small.
    "fetch.max.bytes": 1_048_576,
    "max.partition.fetch.bytes": 65_536,
}
READ_ACL = "READ on TOPIC {topic} (consumerLag.timeLag: Exact fetches the record at the committed offset)"


Wanted = tuple[str, int, int]  # topic, partition, offset


def read_record_timestamps(
    conf: Mapping[str, Any],
    wanted: Sequence[Wanted],
    timeout: float,
    describe: Callable[[object], str],
) -> Partial[Wanted, int]:
    """Epoch milliseconds of the record at each (topic, partition, offset) of `wanted` (see the
    module docstring). Several offsets of one partition (groups at different places) are read
    in rounds, one offset per partition a round."""
    out: Partial[Wanted, int] = Partial()
    rounds: dict[TopicPartitionKey, list[int]] = defaultdict(list)
    for t, p, o in dict.fromkeys(wanted):
        rounds[(t, p)].append(o)
    if not rounds:
        return out
    deadline = time.monotonic() + timeout
    consumer = Consumer({**conf, **_CONSUMER})
    try:
        while rounds and time.monotonic() < deadline:
            this = {key: offsets.pop(0) for key, offsets in rounds.items()}
            rounds = {key: offsets for key, offsets in rounds.items() if offsets}
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in sorted(this.items())])
            read = _poll(consumer, set(this), deadline, describe)
            out.values.update({(*key, this[key]): ts for key, ts in read.values.items()})
            out.errors.update({(*key, this[key]): why for key, why in read.errors.items()})
    finally:
        consumer.close()
    for key in wanted:
        if key not in out.values and key not in out.errors:
            out.errors[key] = f"no record read within {timeout:.0f}s"
    return out


def _poll(
    consumer: Any, pending: set[TopicPartitionKey], deadline: float, describe: Callable[[object], str]
) -> Partial[TopicPartitionKey, int]:
    """Poll until every pending partition gave its first record (or an error), or the deadline."""
    out: Partial[TopicPartitionKey, int] = Partial()
    while pending and time.monotonic() < deadline:
        for message in consumer.consume(
            num_messages=500, timeout=max(0.0, min(1.0, deadline - time.monotonic()))
        ):
            key = (message.topic(), message.partition())
            if key not in pending:
                continue
            error = message.error()
            if error is None:
                out.values[key] = message.timestamp()[1]
            elif error.code() == KafkaError._PARTITION_EOF:
                out.errors[key] = "no record at the offset (at the log end)"
            elif error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                out.errors[key] = f"authorization denied: the principal lacks {READ_ACL.format(topic=key[0])}"
            else:
                out.errors[key] = describe(error)
            pending.discard(key)
            consumer.pause([TopicPartition(key[0], key[1])])
    return out
