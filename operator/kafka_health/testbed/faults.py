"""Fault helpers for tests and benches: break one broker, then always put the cluster back."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed.cluster import Testbed

_QUIET = logging.getLogger("kafka_health.testbed.faults.librdkafka")
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


def admin(bootstrap: str) -> AdminClient:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _QUIET, "socket.timeout.ms": 5000}
    return AdminClient(conf)


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 6,
    rf: int = 3,
    *,
    assignment: list[list[int]] | None = None,
    config: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> None:
    """Create a topic and wait until every partition has a leader and a full ISR: Kafka answers
    CreateTopics before the leaders are known to every broker, and a test that reads leaders
    right away would otherwise see -1 or a missing partition."""
    client = admin(bootstrap)  # kept alive until its future resolves
    new = (
        NewTopic(name, len(assignment), -1, replica_assignment=assignment, config=config or {})
        if assignment
        else NewTopic(name, partitions, rf, config=config or {})
    )
    client.create_topics([new], operation_timeout=timeout)[name].result(timeout=timeout)
    expected = len(assignment) if assignment else partitions

    def ready() -> bool:
        topic = admin(bootstrap).list_topics(topic=name, timeout=5).topics[name]
        parts = topic.partitions.values()
        return len(parts) == expected and all(p.leader >= 0 and len(p.isrs) == len(p.replicas) for p in parts)

    wait_for(ready, timeout=timeout, what=f"topic {name} led and fully replicated")


def fill(bootstrap: str, topic: str, partitions: int, *, kb_each: int = 3000) -> None:
    """Write `kb_each` KB of 1 KB acks=all records to each partition of `topic`. A replication
    throttle lets a fetch of up to replica.fetch.max.bytes (1 MB a partition) through whenever the
    rate over its quota window (11 one-second samples) is back under the limit, so however low the
    limit, a throttled new replica catches up at about 1 MB per 11 s: the data holds it back for about
    11 s per MB (3 MB: half a minute)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "logger": _QUIET})
    for i in range(kb_each * partitions):
        producer.produce(topic, value=b"x" * 1000, partition=i % partitions)
        if i % 1000 == 0:
            producer.flush()
    if producer.flush(30) != 0:
        raise TimeoutError(f"records to {topic} still unacknowledged after 30 s")


def member_that_committed(
    bootstrap: str, group: str, topic: str, records: int, *, timeout: float = 60.0
) -> Any:
    """A confluent_kafka Consumer in `group` that has read `records` records of `topic` from the
    start and committed them; it stays a member (heartbeats run in the background) until the
    caller closes it."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    consumed, deadline = 0, time.monotonic() + timeout
    while consumed < records and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            consumed += 1
    consumer.commit(asynchronous=False)
    return consumer


def under_replicated(bootstrap: str) -> set[tuple[str, int]]:
    """(topic, partition) whose ISR is smaller than its replica set, as Kafka's metadata says now."""
    md = admin(bootstrap).list_topics(timeout=10)
    return {
        (name, p.id)
        for name, t in md.topics.items()
        for p in t.partitions.values()
        if len(p.isrs) < len(p.replicas)
    }


def registered_brokers(bootstrap: str) -> set[int]:
    return set(admin(bootstrap).list_topics(timeout=10).brokers)


def heal(testbed: Testbed, *, timeout: float = 120.0, restore_leaders: bool = True) -> None:
    """Resume paused brokers, start stopped ones, wait until no partition is under-replicated and
    (unless `restore_leaders=False`, for a test that wants the imbalance) elect preferred leaders."""
    state = testbed.require()
    for b in state.brokers:
        st = testbed.process_state(b)
        if st == "paused":
            testbed.resume(b.id)
        elif st == "down":
            testbed.start(b.id, wait=False)
    testbed.wait_serving(testbed.require(), [b.id for b in state.brokers], timeout=timeout)
    wait_for(
        lambda: not under_replicated(state.bootstrap_servers),
        timeout=timeout,
        what="every partition fully replicated again",
    )
    if restore_leaders:
        restore_preferred_leaders(state.bootstrap_servers, timeout=timeout)


def not_led_by_preferred(bootstrap: str) -> set[tuple[str, int]]:
    md = admin(bootstrap).list_topics(timeout=10)
    return {
        (name, p.id)
        for name, t in md.topics.items()
        for p in t.partitions.values()
        if p.replicas and p.leader != p.replicas[0]
    }


def restore_preferred_leaders(bootstrap: str, *, timeout: float = 60.0) -> None:
    """Elect preferred leaders everywhere (a bounced broker leaves leadership elsewhere; the testbed
    runs without Kafka's auto rebalance), so the next test starts from a balanced cluster."""
    from confluent_kafka import ElectionType, TopicPartition

    def balanced() -> bool:
        pending = not_led_by_preferred(bootstrap)
        if not pending:
            return True
        client = admin(bootstrap)
        # confluent-kafka 2.16.1 rejects request_timeout here: bound the future instead.
        future = client.elect_leaders(ElectionType.PREFERRED, [TopicPartition(t, p) for t, p in pending])
        with contextlib.suppress(Exception):  # per-partition errors: retried by the next poll
            future.result(timeout=15)
        return False

    wait_for(balanced, timeout=timeout, interval=1.0, what="preferred leaders restored")


@contextmanager
def broken(testbed: Testbed, action: str, broker_id: int) -> Iterator[None]:
    """`with broken(tb, "stop", 1): ...` — the broker is restored (and URP back to 0) on exit."""
    getattr(testbed, action)(broker_id)
    try:
        yield
    finally:
        heal(testbed)


def delete_named(bootstrap: str, prefix: str, *, timeout: float = 30.0) -> None:
    """Delete the topics whose name starts with `prefix` and the groups whose id does (test cleanup)."""
    client = admin(bootstrap)
    topics = [t for t in client.list_topics(timeout=10).topics if t.startswith(prefix)]
    if topics:
        for future in client.delete_topics(topics, operation_timeout=timeout).values():
            future.result(timeout=timeout)
    listed = [g.group_id for g in client.list_consumer_groups().result(timeout=timeout).valid]
    groups = [g for g in listed + _share_groups(bootstrap) if g.startswith(prefix)]
    if groups:
        for future in client.delete_consumer_groups(groups, request_timeout=timeout).values():
            # A group still in use is left: stopping its consumers was the test's job.
            with contextlib.suppress(Exception):
                future.result(timeout=timeout)


def _share_groups(bootstrap: str) -> list[str]:
    """The share groups (KIP-932), which confluent-kafka does not list (kafka-python does, by
    ListGroups v5; none on a Kafka without them). DeleteGroups deletes them like any group."""
    from kafka import KafkaAdminClient
    from kafka.errors import IncompatibleBrokerVersion, KafkaError

    kp = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        for _ in range(5):  # a coordinator still loading after a restart answers ListGroups with 14
            try:
                return [str(g["group_id"]) for g in kp.list_groups(types_filter=["share"])]
            except IncompatibleBrokerVersion:  # before ListGroups v5 (Kafka 3.8): no share groups
                return []
            except KafkaError:
                time.sleep(2)
        return []  # cleanup is best effort, as deleting the groups is
    finally:
        kp.close()
