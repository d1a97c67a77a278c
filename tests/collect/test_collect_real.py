"""collect against the real testbed, checked against Kafka's own tools."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_health._kits.waiting import wait_for
from kafka_health.collect.kafka_admin import KafkaAdmin, Timeouts
from kafka_health.collect.logs import LIBRDKAFKA_LOGGER
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.history.store import HistoryStore
from kafka_health.models.snapshot import ClusterSnapshot, Partition
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from tests.collect.ports import closed_port

pytestmark = pytest.mark.kafka

PARTITIONS = 6


def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdmin]:
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as a:
        yield a


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, value=f"m{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def tool_partitions(testbed: Testbed, topic: str) -> dict[int, tuple[int | None, list[int], list[int]]]:
    out = testbed.tool("kafka-topics", ["--describe", "--topic", topic])
    assert out.returncode == 0, out.stderr
    found = {}
    for m in re.finditer(r"Partition: (\d+)\s+Leader: (\S+)\s+Replicas: (\S+)\s+Isr: (\S*)", out.stdout):
        leader = None if m[2] == "none" else int(m[2])
        found[int(m[1])] = (leader, [int(x) for x in m[3].split(",")], [int(x) for x in m[4].split(",") if x])
    return found


def ours(snapshot: ClusterSnapshot, topic: str) -> dict[int, tuple[int | None, list[int], list[int]]]:
    return {p.partition: (p.leader, p.replicas, p.isr) for p in snapshot.partitions if p.topic == topic}


def tool_quorum(testbed: Testbed) -> dict[str, str]:
    out = testbed.tool("kafka-metadata-quorum", ["describe", "--status"])
    assert out.returncode == 0, out.stderr
    return dict(re.findall(r"^(\w+):\s+(.*)$", out.stdout, re.M))


def test_snapshot_agrees_with_kafka_tools(
    testbed: Testbed, bootstrap: str, unique_name: str, admin: KafkaAdmin
) -> None:
    topic = group_id = unique_name
    faults.create_topic(bootstrap, topic)
    produce(bootstrap, topic, {p: 10 + p for p in range(PARTITIONS)})
    altered = testbed.tool(
        "kafka-configs",
        [
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--add-config",
            "retention.ms=3600000",
        ],
    )
    assert altered.returncode == 0, altered.stderr

    consumer = faults.member_that_committed(bootstrap, group_id, topic, 25)
    try:
        # The consumer stays in the group (heartbeats run in the background) while both look.
        snap = collect_snapshot(admin, "testbed", now)
        groups_out = testbed.tool("kafka-consumer-groups", ["--describe", "--group", group_id])
    finally:
        consumer.close()

    assert snap.reachable and snap.missing == [], snap.missing
    assert ours(snap, topic) == tool_partitions(testbed, topic)
    assert sorted(b.id for b in snap.brokers if b.alive) == [0, 1, 2]

    # Committed and log-end offsets, member: as kafka-consumer-groups shows them.
    assert groups_out.returncode == 0, groups_out.stderr
    rows = [line.split() for line in groups_out.stdout.splitlines() if line.startswith(group_id + " ")]
    tool_offsets = {int(r[2]): (None if r[3] == "-" else int(r[3]), int(r[4])) for r in rows}
    assert len(tool_offsets) == PARTITIONS
    group = next(g for g in snap.groups if g.group_id == group_id)
    log_end = {o.partition: o.log_end_offset for o in snap.offsets if o.topic == topic}
    assert {o.partition: (o.committed_offset, log_end[o.partition]) for o in group.offsets} == tool_offsets
    assert any(committed for committed, _ in tool_offsets.values())
    assert group.state == "Stable" and group.members == 1
    assert group.member_ids == sorted({r[6] for r in rows})  # CONSUMER-ID
    assert all(o.log_start_offset == 0 for o in snap.offsets if o.topic == topic)

    # Effective configs, broker defaults included, as kafka-configs --describe --all shows them.
    cfg_out = testbed.tool(
        "kafka-configs", ["--describe", "--all", "--entity-type", "topics", "--entity-name", topic]
    )
    assert cfg_out.returncode == 0, cfg_out.stderr
    tool_cfg = dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", cfg_out.stdout, re.M))
    cfg = next(c for c in snap.topic_configs if c.topic == topic)
    assert cfg.retention_ms == int(tool_cfg["retention.ms"]) == 3_600_000
    assert cfg.min_insync_replicas == int(tool_cfg["min.insync.replicas"]) == 2
    assert cfg.unclean_leader_election_enable is (tool_cfg["unclean.leader.election.enable"] == "true")
    assert cfg.retention_bytes == int(tool_cfg["retention.bytes"])
    assert cfg.cleanup_policy == tool_cfg["cleanup.policy"]

    # The active controller is the quorum leader, as kafka-metadata-quorum reports it.
    status = tool_quorum(testbed)
    assert snap.quorum is not None
    assert snap.quorum.leader_id == int(status["LeaderId"])
    assert snap.quorum.leader_epoch == int(status["LeaderEpoch"])
    assert 0 < (snap.quorum.high_watermark or 0) <= int(status["HighWatermark"])
    assert sorted(v.id for v in snap.quorum.voters) == sorted(
        map(int, re.findall(r'"id": (\d+)', status["CurrentVoters"]))
    )

    # Log dirs: the same directories, and used bytes = the sum of the partition sizes the tool lists.
    def log_dirs_agree() -> bool:
        out = testbed.tool("kafka-log-dirs", ["--describe", "--broker-list", "0,1,2"])
        report = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))
        tool_dirs = {
            (b["broker"], d["logDir"]): sum(p["size"] for p in d["partitions"])
            for b in report["brokers"]
            for d in b["logDirs"]
        }
        fresh = collect_snapshot(admin, "testbed", now)
        return tool_dirs == {(d.broker_id, d.path): d.used_bytes for d in fresh.log_dirs}

    wait_for(log_dirs_agree, timeout=30, interval=1, what="log dir sizes equal to kafka-log-dirs")
    assert all(d.total_bytes and d.usable_bytes for d in snap.log_dirs)  # Kafka 4 reports volume size


def test_stopped_broker_is_not_alive_and_its_replicas_leave_the_isr(
    kafka: Testbed, bootstrap: str, unique_name: str, admin: KafkaAdmin
) -> None:
    faults.create_topic(bootstrap, unique_name)
    kafka.stop(1)
    snap = collect_snapshot(admin, "testbed", now)

    broker1 = next(b for b in snap.brokers if b.id == 1)
    assert not broker1.alive and broker1.fenced  # still registered, fenced after the controlled shutdown
    assert (broker1.host, broker1.port) == ("127.0.0.1", kafka.require().brokers[1].port)
    partitions = ours(snap, unique_name)
    assert len(partitions) == PARTITIONS
    assert all(1 not in isr and 1 in replicas for _, replicas, isr in partitions.values())
    assert partitions == tool_partitions(kafka, unique_name)
    assert {m.part for m in snap.missing} == {"log_dirs:1"}
    assert snap.quorum is not None and snap.quorum.leader_id == int(tool_quorum(kafka)["LeaderId"])


def test_a_restarted_broker_log_dirs_are_read_as_soon_as_it_is_back(
    kafka: Testbed, bootstrap: str, admin: KafkaAdmin
) -> None:
    """kafka-python's metadata (refreshed every 30 s) did not know a broker that registered again:
    its log dirs stayed unreadable (UnknownBrokerIdError) for 10 s after a restart, which read as
    `log_dirs:<N>` missing right after a roll's broker was healthy again (issue 33 point 6)."""
    assert not collect_snapshot(admin, "testbed", now).missing  # the client knows the cluster
    kafka.stop(1)
    assert {m.part for m in collect_snapshot(admin, "testbed", now).missing} == {"log_dirs:1"}
    kafka.start(1)  # waits until it serves
    wait_for(
        lambda: all(b.alive for b in collect_snapshot(admin, "testbed", now).brokers),
        timeout=60,
        what="broker 1 registered",
    )
    snap = collect_snapshot(admin, "testbed", now)
    assert not snap.missing, snap.missing
    assert 1 in {d.broker_id for d in snap.log_dirs}


def test_frozen_broker_gives_a_partial_snapshot_within_the_bound(
    kafka: Testbed, bootstrap: str, unique_name: str
) -> None:
    faults.create_topic(bootstrap, unique_name)  # partitions to read, whichever tests ran before
    timeouts = Timeouts(metadata=4, request=3)
    with KafkaAdmin({"bootstrap.servers": bootstrap}, timeouts=timeouts) as admin:
        # Connections to every broker are up, and the new topic's leaders are known to every
        # broker (right after creation one may still answer NOT_LEADER_FOR_PARTITION: CI, once).
        first = wait_for(
            lambda: found if not (found := collect_snapshot(admin, "testbed", now)).missing else None,
            timeout=30,
            what="a complete snapshot",
        )
        # A broker that is not the active controller. Freezing the active controller also kept
        # live brokers from answering their log dirs within the 3 s request timeout (5 of 10
        # runs here; reported as missing, with the reason): broker 2, frozen here before, was
        # the active controller in some runs only, and the test failed in some runs only.
        assert first.quorum is not None and first.quorum.leader_id is not None
        frozen = max({0, 1, 2} - {first.quorum.leader_id})
        kafka.pause(frozen)
        try:
            started = time.monotonic()
            snap = collect_snapshot(admin, "testbed", now)
            elapsed = time.monotonic() - started
        finally:
            kafka.resume(frozen)  # before the topic is deleted, whatever the outcome

    assert elapsed < 20, (elapsed, snap.missing)
    assert snap.reachable and snap.partitions, snap.missing  # the other brokers answered the metadata
    parts = {m.part: m.reason for m in snap.missing}
    assert f"log_dirs:{frozen}" in parts, parts
    assert all(reason for reason in parts.values())
    assert {d.broker_id for d in snap.log_dirs} == {0, 1, 2} - {frozen}, parts


def test_unreachable_cluster_is_reported_quickly_without_leaking_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with closed_port() as port:
        conf = {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "ops",
            "sasl.password": "pa55-w0rd",
        }
        started = time.monotonic()
        with caplog.at_level(logging.DEBUG), KafkaAdmin(conf) as admin:
            snap = collect_snapshot(admin, "gone", now)
        elapsed = time.monotonic() - started

    assert elapsed <= 10, elapsed
    assert not snap.reachable
    assert [m.part for m in snap.missing] == ["metadata"]
    assert snap.brokers == [] and snap.partitions == []
    assert "pa55-w0rd" not in snap.model_dump_json()
    assert any(r.name == LIBRDKAFKA_LOGGER for r in caplog.records)  # librdkafka logs reach Python logging
    assert not any("pa55-w0rd" in r.getMessage() for r in caplog.records)


def test_history_records_isr_transitions_only_when_they_change(
    kafka: Testbed, bootstrap: str, unique_name: str, admin: KafkaAdmin, tmp_path: Path
) -> None:
    faults.create_topic(bootstrap, unique_name)
    store = HistoryStore(tmp_path)

    def cycle() -> ClusterSnapshot:
        snap = collect_snapshot(admin, "testbed", now)
        assert snap.reachable
        store.append(snap)
        return snap

    cycle()
    cycle()  # nothing changed
    kafka.stop(1)
    cycle()  # ISR shrinks (and leaders move off broker 1)
    cycle()  # nothing changed
    faults.heal(kafka)
    healed = cycle()  # ISR back to full

    rows = [r for r in store.read("partition_state", "testbed").to_pylist() if r["topic"] == unique_name]
    by_partition: dict[int, list[list[int]]] = {}
    for r in rows:
        by_partition.setdefault(r["partition"], []).append(sorted(r["isr"]))
    assert by_partition == {p: [[0, 1, 2], [0, 2], [0, 1, 2]] for p in range(PARTITIONS)}
    last = {r["partition"]: r for r in rows if r["ts"] == healed.taken_at}
    assert {
        p: Partition(topic=unique_name, partition=p, **{k: last[p][k] for k in ("leader", "replicas", "isr")})
        for p in last
    } == {p.partition: p for p in healed.partitions if p.topic == unique_name}
    samples = store.read("broker_samples", "testbed").to_pylist()
    assert [r["alive"] for r in samples if r["broker"] == 1] == [True, True, False, False, True]
    latest = store.latest("testbed")
    assert latest is not None and latest.taken_at == healed.taken_at
