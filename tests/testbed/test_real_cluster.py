"""The testbed is a real Kafka cluster: data flows, faults show up the way Kafka's own tools see them."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import faults, jvm_archive, node_process
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.faults import create_topic

pytestmark = pytest.mark.kafka


def partition_leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = faults.admin(bootstrap).list_topics(topic=topic, timeout=10)
    return {p.id: p.leader for p in md.topics[topic].partitions.values()}


def leader_of_partition_0(bootstrap: str, topic: str, *, other_than: int = -1) -> int:
    """Partition 0's leader, once the broker asked knows one (and it is not `other_than`).

    Each metadata request may reach another broker, and a broker learns of a just-created
    topic's partitions a moment after the others (CI once read a topic without its partitions
    right after `create_topic` had seen them led). Returned in a list: broker 0 is falsy."""

    def led() -> list[int]:
        leader = partition_leaders(bootstrap, topic).get(0, -1)
        return [] if leader in (-1, other_than) else [leader]

    return wait_for(led, timeout=45, what=f"a leader for {topic} partition 0 other than {other_than}")[0]


def test_produce_and_consume_with_acks_all(testbed: Testbed, bootstrap: str, unique_name: str) -> None:
    create_topic(bootstrap, unique_name)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    acked: list[str] = []
    for i in range(200):
        producer.produce(
            unique_name,
            key=str(i),
            value=f"v{i}",
            on_delivery=lambda e, m: acked.append(m.value().decode()) if e is None else None,
        )
    assert producer.flush(30) == 0
    assert len(acked) == 200

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique_name, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([unique_name])
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while len(seen) < 200 and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.add(msg.value().decode())
    consumer.close()
    assert seen == set(acked)


def _tool_under_replicated(testbed: Testbed, topic: str) -> set[tuple[str, int]]:
    out = testbed.tool("kafka-topics", ["--describe", "--under-replicated-partitions", "--topic", topic])
    assert out.returncode == 0, out.stderr
    return {(m[0], int(m[1])) for m in re.findall(r"Topic: (\S+)\s+Partition: (\d+)", out.stdout)}


def test_stopped_broker_shows_same_under_replicated_partitions_as_kafka_topics(
    kafka: Testbed, bootstrap: str, unique_name: str
) -> None:
    create_topic(bootstrap, unique_name, partitions=6)
    kafka.stop(1)
    ours = wait_for(
        lambda: {tp for tp in faults.under_replicated(bootstrap) if tp[0] == unique_name},
        timeout=30,
        what="under-replicated partitions after stopping broker 1",
    )
    # RF 3 over 3 brokers: every partition has a replica on broker 1.
    assert ours == {(unique_name, p) for p in range(6)}
    assert _tool_under_replicated(kafka, unique_name) == ours

    kafka.start(1)
    wait_for(
        lambda: not {tp for tp in faults.under_replicated(bootstrap) if tp[0] == unique_name},
        timeout=90,
        what="ISR recovered after starting broker 1",
    )
    assert _tool_under_replicated(kafka, unique_name) == set()


def test_killing_a_leader_moves_leadership(kafka: Testbed, bootstrap: str, unique_name: str) -> None:
    create_topic(bootstrap, unique_name, partitions=3)
    leader = leader_of_partition_0(bootstrap, unique_name)
    kafka.kill(leader)
    survivors = ",".join(f"127.0.0.1:{b.port}" for b in kafka.require().brokers if b.id != leader)
    # A killed broker is fenced after broker.session.timeout.ms (4 s in the testbed); its
    # leaderships move. (The helper returns the id in a list: CI once waited 45 s for a leader
    # that had moved to broker 0, a falsy id.)
    new_leader = leader_of_partition_0(survivors, unique_name, other_than=leader)
    assert new_leader not in (leader, -1)
    assert new_leader in {b.id for b in kafka.require().brokers}


def test_paused_broker_is_fenced_and_returns_on_resume(kafka: Testbed, bootstrap: str) -> None:
    kafka.pause(2)
    survivors = ",".join(f"127.0.0.1:{b.port}" for b in kafka.require().brokers if b.id != 2)
    wait_for(lambda: 2 not in faults.registered_brokers(survivors), timeout=45, what="broker 2 fenced")
    assert kafka.process_state(kafka.broker(kafka.require(), 2)) == "paused"
    kafka.resume(2)
    wait_for(lambda: 2 in faults.registered_brokers(survivors), timeout=60, what="broker 2 registered again")


def node_jvms(testbed: Testbed, node_id: int) -> list[int]:
    """Every running JVM of the node, as `pgrep -f` sees them (not the testbed's own bookkeeping)."""
    found = subprocess.run(
        ["pgrep", "-f", re.escape(str(testbed.config_path(node_id)))], capture_output=True, text=True
    )
    return sorted(int(pid) for pid in found.stdout.split())


def test_one_jvm_per_node_whoever_starts_it(kafka: Testbed) -> None:
    """Three processes start a stopped node at once (a test healing while the pod stand-in replaces
    a pod): one JVM runs. Two once shared a data dir and broke its metadata log. A pid lost from
    testbed.json is found again, and starting the running node adopts it instead of a second JVM."""
    kafka.stop(2)
    assert node_jvms(kafka, 2) == []
    start = (
        "import sys; from pathlib import Path; from kafka_health.testbed.cluster import Testbed; "
        "Testbed(Path(sys.argv[1])).start(2, wait=False)"
    )
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", start, str(kafka.state_dir)], stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    for p in starters:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    jvms = node_jvms(kafka, 2)
    assert len(jvms) == 1, f"node 2 runs as {len(jvms)} JVMs: {jvms}"
    assert kafka.broker(kafka.require(), 2).pid == jvms[0]

    node_process.record_pid(kafka.state_file, 2, None)  # a stale write lost the pid
    assert next(row["pid"] for row in kafka.status() if row["id"] == 2) == jvms[0]
    kafka.start(2, wait=True, timeout=90)
    assert node_jvms(kafka, 2) == jvms
    assert kafka.broker(kafka.require(), 2).pid == jvms[0]


def test_nodes_and_tools_map_the_class_archives(kafka: Testbed) -> None:
    """Every node of the session's cluster maps the `node` archive (`make test`'s fetch built it),
    and a tool run with `-Xshare:on` (which exits rather than run without it) answers as the
    same tool run without any archive."""
    version = kafka.require().kafka_version
    node_archive, tool_archive = (jvm_archive.archive_path(version, k) for k in jvm_archive.KINDS)
    assert node_archive is not None and node_archive.exists(), "kafka-health testbed fetch builds it"
    assert tool_archive is not None and tool_archive.exists()
    for b in kafka.require().nodes:
        assert b.pid is not None
        assert str(node_archive) in Path(f"/proc/{b.pid}/maps").read_text(), f"node {b.id}"
    command = kafka.tool_command("kafka-metadata-quorum", ["describe", "--status"])
    assert f"-XX:SharedArchiveFile={tool_archive}" in command
    mapped = subprocess.run([command[0], "-Xshare:on", *command[1:]], capture_output=True, text=True)
    plain = [a for a in command if "SharedArchiveFile" not in a and not a.startswith(("-Xshare", "-Xlog"))]
    unmapped = subprocess.run(plain, capture_output=True, text=True)
    assert mapped.returncode == unmapped.returncode == 0, (mapped.stderr, unmapped.stderr)
    assert mapped.stderr == "" and "ClusterId:" in mapped.stdout
    leader = [line for line in mapped.stdout.splitlines() if line.startswith("LeaderId")]
    assert leader == [line for line in unmapped.stdout.splitlines() if line.startswith("LeaderId")]
