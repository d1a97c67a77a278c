"""Helpers for the real-fault tests: topics, producing, and Kafka's own tools parsed."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from confluent_kafka import IsolationLevel, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import OffsetSpec

from kafka_health.cli.diagnose import collect
from kafka_health.collect.connection import ConnectionConfig
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed

TopicPartition = tuple[str, int]


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, value=f"m{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def snapshot_of(bootstrap: str, *, exact_lag: bool = False) -> ClusterSnapshot:
    return collect(
        ConnectionConfig.from_dict({"bootstrap.servers": bootstrap}), bootstrap, exact_lag=exact_lag
    )


def describe_list(testbed: Testbed, flag: str) -> set[TopicPartition]:
    """`kafka-topics --describe <flag>` (e.g. --under-replicated-partitions) as (topic, partition)."""
    out = testbed.tool("kafka-topics", ["--describe", flag])
    assert out.returncode == 0, out.stderr
    return {(m[0], int(m[1])) for m in re.findall(r"Topic: (\S+)\s+Partition: (\d+)\s", out.stdout)}


def describe_all(testbed: Testbed) -> dict[TopicPartition, tuple[int | None, list[int]]]:
    """`kafka-topics --describe`: (topic, partition) → (leader, replicas)."""
    out = testbed.tool("kafka-topics", ["--describe"])
    assert out.returncode == 0, out.stderr
    found = {}
    for m in re.finditer(r"Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\S+)\s+Replicas: (\S+)", out.stdout):
        leader = None if m[3] in ("none", "-1") else int(m[3])
        found[(m[1], int(m[2]))] = (leader, [int(x) for x in m[4].split(",")])
    return found


def group_lag(testbed: Testbed, group: str) -> dict[TopicPartition, int | None]:
    """`kafka-consumer-groups --describe --group G`: LAG per partition ('-' → None)."""
    out = testbed.tool("kafka-consumer-groups", ["--describe", "--group", group])
    assert out.returncode == 0, out.stderr
    lags: dict[TopicPartition, int | None] = {}
    for line in out.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == group:
            lags[(cols[1], int(cols[2]))] = None if cols[5] == "-" else int(cols[5])
    return lags


def topic_configs(testbed: Testbed, topic: str) -> dict[str, str]:
    out = testbed.tool("kafka-configs", ["--describe", "--entity-type", "topics", "--entity-name", topic])
    assert out.returncode == 0, out.stderr
    return dict(re.findall(r"(\S+)=(\S+) sensitive=", out.stdout))


def now() -> datetime:
    return datetime.now(UTC)


def stable_and_end(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """The partition's last stable offset and high watermark, as the broker answers ListOffsets."""
    admin = faults.admin(bootstrap)
    tp = KafkaTopicPartition(topic, partition)
    out = []
    for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        answer = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)
        out.append(answer[tp].result().offset)
    return out[0], out[1]


def transaction_starts(testbed: Testbed, topic: str, partition: int) -> set[int]:
    """`kafka-transactions describe-producers`: the CurrentTransactionStartOffset of each producer
    with an open transaction on the partition."""
    args = ["describe-producers", "--topic", topic, "--partition", str(partition)]
    out = testbed.tool("kafka-transactions", args)
    assert out.returncode == 0, out.stderr
    rows = re.findall(r"^\d+\s+\d+\s+-?\d+\s+-?\d+\s+\d+\s+(-?\d+)\s*$", out.stdout, re.M)
    return {int(start) for start in rows if int(start) >= 0}
