"""`testbed up --kafka-version 3.9.x`: Kafka 3.9 (log4j 1, tools partly in the Scala core) with
SASL_SSL, read by the collector and by Kafka's own tools, and classified the same way."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_health.cli.kafka_options import connection
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.testbed import distribution
from kafka_health.testbed.cluster import Testbed
from tests.secured.helpers import kafka_health, properties_with, secured_testbed

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def kafka39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    yield from secured_testbed(tmp_path_factory.mktemp("kafka39"), "sasl_ssl", kafka_version="3.9.x")


def test_version_resolution() -> None:
    assert distribution.resolve("3.9.x") == distribution.NEWEST["3.9"]
    assert distribution.resolve("3.9.1") == "3.9.1"
    # Every KRaft line from 3.9 to 4.4 (the default: the newest 4.4 release).
    assert sorted(distribution.NEWEST) == ["3.9", "4.0", "4.1", "4.2", "4.3", "4.4"]
    assert distribution.KAFKA_VERSION == distribution.resolve("4.4.x") == "4.4.0"
    for bad in ("3.8.x", "3.7.0", "4.5.x", "latest", "4"):
        with pytest.raises(distribution.FetchError):
            distribution.resolve(bad)


def test_kafka_39_runs_secured_and_reads_like_kafka_4(kafka39: Testbed) -> None:
    state = kafka39.require()
    assert state.kafka_version == distribution.NEWEST["3.9"]
    log = kafka39.log_path(0).read_text()
    assert f"Kafka version: {state.kafka_version}" in log  # the 3.9 broker, logging through reload4j
    created = kafka39.tool(
        "kafka-topics", ["--create", "--topic", "old", "--partitions", "2", "--replication-factor", "1"]
    )
    assert created.returncode == 0, created.stderr
    quorum = kafka39.tool("kafka-metadata-quorum", ["describe", "--status"])
    assert quorum.returncode == 0, quorum.stderr
    leader = next(
        int(line.split()[-1]) for line in quorum.stdout.splitlines() if line.startswith("LeaderId:")
    )
    acls = kafka39.tool("kafka-acls", ["--list"])  # kafka.admin.AclCommand in 3.9
    assert acls.returncode == 0, acls.stderr

    props = kafka39.client_properties()
    assert props is not None
    with KafkaAdmin(connection(state.bootstrap_servers, props), timeouts=Timeouts(6, 6)) as admin:
        snap = collect_snapshot(admin, "k39", lambda: datetime.now(UTC))
    assert snap.missing == [], snap.missing
    assert {p.topic for p in snap.partitions} >= {"old"}
    assert snap.quorum is not None and snap.quorum.leader_id == leader  # the oracle agrees
    assert snap.log_dirs


def test_kafka_39_authentication_failure_is_classified(kafka39: Testbed, tmp_path: Path) -> None:
    props = properties_with(
        kafka39,
        tmp_path,
        "wrong.properties",
        sasl__jaas__config='org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="nope-39";',
    )
    out = kafka_health(
        "elect-leaders", "-b", kafka39.require().bootstrap_servers, "--command-config", str(props)
    )
    assert out.returncode == 3, out.stdout + out.stderr
    assert "authentication failed: " in out.stderr
