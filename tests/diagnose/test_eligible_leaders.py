"""Eligible leader replicas (KIP-966) on a real Kafka 4.4 cluster with dedicated controllers
(the quorum stays up while brokers stop): a topic on brokers 0 and 1 with min.insync.replicas 2.
Broker 1 stops: the ISR shrinks below min ISR and 1 enters the ELR; broker 0 stops: the partition
is offline, its ISR empty, its ELR 0 and 1. At each step the collector's ELR and last-known ELR
equal `kafka-topics --describe`'s `Elr` and `LastKnownElr`, and the diagnosis says the partition
comes back cleanly when an eligible replica returns; broker 1 returns and leads it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from kafka_health._kits.waiting import wait_for
from kafka_health.diagnose import run_diagnosis
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.testbed.cluster import Testbed
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import snapshot_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

# From KAFKA_HEALTH_TEST_PORT: brokers 1050-1052, controllers 1150-1152 (clear of the session
# cluster, of tests/secured's clusters and, modulo 1000, of every other module's).
PORT_OFFSET = 1050
TOPIC = "elr"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    tb = Testbed(tmp_path_factory.mktemp("elr"))
    try:
        tb.up(3, int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET, controllers=3)
        created = tb.tool(
            "kafka-topics",
            [
                "--create",
                "--topic",
                TOPIC,
                "--replica-assignment",
                "0:1",
                "--config",
                "min.insync.replicas=2",
            ],
        )
        assert created.returncode == 0, created.stderr
        yield tb
    finally:
        tb.down(purge=True)


def oracle(tb: Testbed) -> tuple[list[int], list[int], list[int]]:
    """`kafka-topics --describe --topic elr`: the partition's (ISR, ELR, last-known ELR)."""
    out = tb.tool("kafka-topics", ["--describe", "--topic", TOPIC])
    assert out.returncode == 0, out.stderr
    m = re.search(r"Partition: 0\s.*Isr: ?(\S*)\s+Elr: ?(\S*)\s+LastKnownElr: ?(\S*)", out.stdout)
    assert m is not None, out.stdout

    def ids(text: str) -> list[int]:
        return sorted(int(x) for x in text.split(",") if x)

    return ids(m[1]), ids(m[2]), ids(m[3])


def ours(snap: ClusterSnapshot) -> tuple[list[int], list[int], list[int]]:
    (p,) = [p for p in snap.partitions if p.topic == TOPIC]
    found = [e for e in snap.eligible_leaders if (e.topic, e.partition) == (TOPIC, 0)]
    elr, last = (found[0].elr, found[0].last_known_elr) if found else ([], [])
    return sorted(p.isr), elr, last


def settled(tb: Testbed, bootstrap: str, want_isr: list[int]) -> ClusterSnapshot:
    """A snapshot taken once Kafka's tool shows `want_isr` and agrees with it twice in a row."""

    def same() -> ClusterSnapshot | None:
        before = oracle(tb)
        snap = snapshot_of(bootstrap)
        return snap if before[0] == want_isr and ours(snap) == before == oracle(tb) else None

    return wait_for(same, timeout=60, interval=1, what=f"ISR {want_isr} read alike by us and kafka-topics")


def test_elr_read_as_kafka_topics_shows_it_and_the_offline_finding_names_it(
    cluster: Testbed, spark: SparkSession
) -> None:
    serving = f"127.0.0.1:{cluster.require().brokers[2].port}"  # broker 2 holds no replica of the topic
    assert ours(settled(cluster, serving, [0, 1])) == ([0, 1], [], [])

    cluster.stop(1)
    snap = settled(cluster, serving, [0])
    assert ours(snap) == ([0], [1], [])  # below min ISR: 1 left the ISR into the ELR
    assert not [m for m in snap.missing if m.part.startswith("eligible_leaders")]

    cluster.stop(0)
    snap = settled(cluster, serving, [])
    isr, elr, last = ours(snap)
    assert (isr, elr) == ([], [0, 1]) and last  # offline: the ISR emptied, both replicas eligible
    diagnosis = run_diagnosis(snap, None, Thresholds(), spark)
    (offline,) = [
        f for f in diagnosis.findings if f.check == "offline_partition" and f.subject.topic == TOPIC
    ]
    assert "eligible leader replicas 0,1" in offline.message and "elects cleanly" in offline.message
    assert offline.evidence["eligible_leaders"] == "0,1"

    # An eligible replica returns: Kafka elects it (no unclean election), as the finding said.
    cluster.start(1)
    led = wait_for(
        lambda: next((p.leader for p in snapshot_of(serving).partitions if p.topic == TOPIC), None) == 1,
        timeout=60,
        interval=1,
        what="broker 1 leading the partition again",
    )
    assert led
    cluster.start(0)
