"""`diagnose/planned.coordinator_partition` against the real cluster: for groups of every shape
(ASCII, long, non-ASCII, one whose Java hash is Integer.MIN_VALUE), the leader of the
`__consumer_offsets` partition it computes is the coordinator Kafka names (FindCoordinator,
through DescribeConsumerGroups). A planned roll relies on it to tell a group left unread
because its coordinator's broker is restarting."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kafka_health._kits.waiting import wait_for
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.diagnose.planned import OFFSETS_TOPIC, coordinator_partition, java_string_hash

pytestmark = pytest.mark.kafka

GROUPS = ["billing", "orders-consumer-7", "Ωmega-grüppe", "😀 emoji", "polygenelubricants", "x" * 200]


def test_java_string_hash_matches_java() -> None:
    # Values of String.hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("😀") == 0xD83D * 31 + 0xDE00  # a surrogate pair, as Java sees it
    assert coordinator_partition("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0


def test_the_computed_coordinator_partition_is_led_by_the_coordinator_kafka_names(bootstrap: str) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})

    def describe() -> dict[str, Any] | None:
        # NOT_COORDINATOR while __consumer_offsets is first created and its leaders elected.
        try:
            return {g: f.result(timeout=30) for g, f in client.describe_consumer_groups(GROUPS).items()}
        except KafkaException:
            return None

    described = wait_for(describe, timeout=60, interval=1.0, what="every group's coordinator")
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        snap = collect_snapshot(admin, "kafka", lambda: datetime.now(UTC))
    offsets = {p.partition: p for p in snap.partitions if p.topic == OFFSETS_TOPIC}
    assert offsets, "the cluster has __consumer_offsets"
    for group, d in described.items():
        p = offsets[coordinator_partition(group, len(offsets))]
        assert d.coordinator.id == p.leader, (group, p, d.coordinator)
