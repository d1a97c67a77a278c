"""SASL_SSL (SCRAM-SHA-512) on a real broker: the CLI connects with --command-config, and each
way of getting security wrong gets its own error naming the setting to fix (never a secret)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.kafka_options import connection
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from tests.secured.helpers import internal_listener, kafka_health, other_ca, properties_with, secured_testbed

pytestmark = pytest.mark.kafka

WRONG = "Wr0ng-Secret-Value"
JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    tb_iter = secured_testbed(tmp_path_factory.mktemp("sasl_ssl"), "sasl_ssl")
    tb = next(tb_iter)
    created = tb.tool(
        "kafka-topics", ["--create", "--topic", "orders", "--partitions", "3", "--replication-factor", "1"]
    )
    assert created.returncode == 0, created.stderr
    commit_group(tb, "billing", "orders", 3)
    yield tb
    next(tb_iter, None)


def commit_group(tb: Testbed, group: str, topic: str, partitions: int) -> None:
    """As admin: a few records per partition and group offsets committed (the group left Empty)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    conf = tb.librdkafka_config()
    producer = Producer(conf)
    for i in range(5 * partitions):
        producer.produce(topic, value=b"x", partition=i % partitions)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": group, "enable.auto.commit": False})
    try:  # the first commit of a new cluster may find its coordinator still loading: retried
        offsets = [TopicPartition(topic, p, 3) for p in range(partitions)]
        wait_for(lambda: _committed(consumer, offsets), timeout=60, what=f"group {group} committed")
    finally:
        consumer.close()


def _committed(consumer: Any, offsets: list[Any]) -> bool:
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    except KafkaException as exc:
        if exc.args[0].retriable() or exc.args[0].code() == KafkaError.COORDINATOR_LOAD_IN_PROGRESS:
            return False
        raise
    return True


def bootstrap(tb: Testbed) -> str:
    return tb.require().bootstrap_servers


def passwords(tb: Testbed) -> list[str]:
    return list(tb.material().passwords().values())


def assert_no_secret(out: str, tb: Testbed, *extra: str) -> None:
    for secret in [*passwords(tb), *extra]:
        assert secret not in out


def test_testbed_tool_and_env_carry_the_client_settings(sasl: Testbed) -> None:
    """Kafka's own tools stay oracles: `testbed tool` adds the admin's --command-config."""
    listed = sasl.tool("kafka-topics", ["--list"])
    assert listed.returncode == 0, listed.stderr
    assert "orders" in listed.stdout.split()
    env = kafka_health("testbed", "env", "--state-dir", str(sasl.state_dir))
    assert env.returncode == 0, env.stderr
    assert f"export KAFKA_HEALTH_COMMAND_CONFIG={sasl.client_properties()}" in env.stdout
    assert "--from-literal=username=admin" in env.stdout
    assert_no_secret(env.stdout, sasl)


def test_diagnose_reads_the_secured_cluster(sasl: Testbed, tmp_path: Path) -> None:
    """The env var is --command-config's default; the admin reads every part of the cluster."""
    snap = tmp_path / "snapshot.json"
    out = kafka_health(
        "diagnose",
        "-b",
        bootstrap(sasl),
        "-o",
        "json",
        "--save-snapshot",
        str(snap),
        env={"KAFKA_HEALTH_COMMAND_CONFIG": str(sasl.client_properties())},
    )
    assert out.returncode in (0, 1), out.stderr  # healthy or warnings (RF 1 on one broker)
    saved = json.loads(snap.read_text())
    assert {p["topic"] for p in saved["partitions"]} >= {"orders"}
    assert saved["quorum"]["leader_id"] == 0
    assert saved["missing"] == []
    assert_no_secret(out.stdout + out.stderr, sasl)


@pytest.mark.parametrize("user", ["admin", "ghost"], ids=["wrong-password", "unknown-user"])
def test_authentication_failed(sasl: Testbed, tmp_path: Path, user: str) -> None:
    props = properties_with(
        sasl, tmp_path, "bad.properties", sasl__jaas__config=JAAS.format(user=user, password=WRONG)
    )
    out = kafka_health("diagnose", "-b", bootstrap(sasl), "--command-config", str(props))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "authentication failed: " in out.stderr
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in out.stderr
    assert "sasl.jaas.config in --command-config" in out.stderr
    assert "Broker transport failure" not in out.stderr
    assert_no_secret(out.stdout + out.stderr, sasl, WRONG)


def test_tls_handshake_failed_bad_ca(sasl: Testbed, tmp_path: Path) -> None:
    props = properties_with(
        sasl, tmp_path, "bad-ca.properties", ssl__truststore__location=str(other_ca(tmp_path))
    )
    out = kafka_health("elect-leaders", "-b", bootstrap(sasl), "--command-config", str(props))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "TLS handshake failed: " in out.stderr and "certificate verify failed" in out.stderr
    assert "ssl.truststore.location in --command-config" in out.stderr
    assert_no_secret(out.stdout + out.stderr, sasl)


def test_tls_hostname_mismatch_and_the_setting_that_turns_it_off(sasl: Testbed, tmp_path: Path) -> None:
    """The certificates name 127.0.0.1 only: `localhost` fails verification unless it is off."""
    port = sasl.require().brokers[0].port
    props = sasl.client_properties()
    assert props is not None
    out = kafka_health("elect-leaders", "-b", f"localhost:{port}", "--command-config", str(props))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "TLS handshake failed: " in out.stderr and "subject alternative names" in out.stderr
    off = properties_with(sasl, tmp_path, "no-verify.properties", ssl__endpoint__identification__algorithm="")
    ok = kafka_health("elect-leaders", "-b", f"localhost:{port}", "--command-config", str(off))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_sasl_client_on_a_plaintext_listener_is_a_protocol_mismatch(sasl: Testbed, tmp_path: Path) -> None:
    props = properties_with(
        sasl,
        tmp_path,
        "sasl-plaintext.properties",
        security__protocol="SASL_PLAINTEXT",
        ssl__truststore__type=None,
        ssl__truststore__location=None,
    )
    out = kafka_health("diagnose", "-b", internal_listener(sasl), "--command-config", str(props))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "security protocol mismatch: the listener does not speak SASL" in out.stderr
    assert "security.protocol in --command-config" in out.stderr
    assert_no_secret(out.stdout + out.stderr, sasl)


def test_acl_table_each_grant_unlocks_exactly_its_part(sasl: Testbed, tmp_path: Path) -> None:
    """The ACL table of docs/policy.md, walked grant by grant with the unprivileged user: each
    missing ACL is named (operation and resource) on the part it hides, nothing else breaks,
    and its grant removes exactly that."""
    app_props = sasl.client_properties(security.APP)
    assert app_props is not None
    conn = connection(bootstrap(sasl), app_props)
    grants: list[list[str]] = []

    def grant(*acl: str) -> None:
        args = ["--allow-principal", "User:app", *acl]
        done = sasl.tool("kafka-acls", ["--add", *args])
        assert done.returncode == 0, done.stderr
        grants.append(args)

    def read() -> tuple[ClusterSnapshot, dict[str, str]]:
        with KafkaAdmin(conn, timeouts=Timeouts(metadata=6, request=6)) as admin:
            snap = collect_snapshot(admin, "sasl", lambda: datetime.now(UTC))
        assert snap.reachable
        return snap, {m.part: m.reason for m in snap.missing}

    def reset() -> subprocess.CompletedProcess[str]:
        save = tmp_path / f"before-{len(grants)}.json"
        return kafka_health(
            "reset-offsets",
            "-b",
            bootstrap(sasl),
            "--command-config",
            str(app_props),
            "-g",
            "billing",
            "-t",
            "orders",
            "--to-earliest",
            "--execute",
            "--save-to",
            str(save),
            "-o",
            "json",
        )

    try:
        snap, missing = read()
        # Kafka hides topics and groups the principal may not DESCRIBE, and without DESCRIBE on
        # CLUSTER the brokers' log dirs that would count them are denied too: said, not "0 topics".
        assert snap.partitions == [] and snap.groups == []
        assert set(missing) == {"quorum", "log_dirs:0", "reassignments", "visibility"}, missing
        for part in ("quorum", "log_dirs:0", "reassignments", "visibility"):
            assert missing[part].startswith("authorization denied: the principal lacks DESCRIBE on CLUSTER")
        assert "the totals cannot be checked" in missing["visibility"]

        grant("--operation", "Describe", "--topic", "orders")
        snap, missing = read()
        assert {p.topic for p in snap.partitions} == {"orders"} and len(snap.offsets) == 3
        assert set(missing) == {"quorum", "log_dirs:0", "reassignments", "configs:orders", "visibility"}, (
            missing
        )
        assert "lacks DESCRIBE_CONFIGS on TOPIC orders" in missing["configs:orders"]

        grant("--operation", "DescribeConfigs", "--topic", "orders")
        snap, missing = read()
        assert [c.topic for c in snap.topic_configs] == ["orders"]
        assert set(missing) == {"quorum", "log_dirs:0", "reassignments", "visibility"}, missing

        grant("--operation", "Describe", "--cluster")
        snap, missing = read()
        assert snap.quorum is not None and snap.log_dirs
        # DESCRIBE on CLUSTER lists every group; describing one needs DESCRIBE on it. The log dirs
        # now count what stays hidden: __consumer_offsets, without DESCRIBE on that topic.
        assert set(missing) == {"group:billing", "visibility"}, missing
        assert "lacks DESCRIBE on GROUP billing" in missing["group:billing"]
        assert "hidden from this principal (__consumer_offsets)" in missing["visibility"]

        grant("--operation", "Describe", "--group", "billing")
        snap, missing = read()
        assert set(missing) == {"visibility"} and [g.group_id for g in snap.groups] == ["billing"]
        grant("--operation", "Describe", "--operation", "DescribeConfigs", "--topic", "__consumer_offsets")
        snap, missing = read()
        assert missing == {} and snap.hidden == {}

        # reset-offsets: READ on the group, then READ on the topic (OffsetCommit).
        refused = reset()
        assert "GROUP_AUTHORIZATION_FAILED" in refused.stdout + refused.stderr
        assert "authorization denied: the principal lacks READ on GROUP billing" in refused.stderr
        grant("--operation", "Read", "--group", "billing")
        refused = reset()
        assert "TOPIC_AUTHORIZATION_FAILED" in refused.stdout + refused.stderr
        assert "authorization denied: the principal lacks READ on TOPIC orders" in refused.stderr
        assert refused.returncode == 3  # Kafka refused every partition for an ACL: nothing changed
        grant("--operation", "Read", "--topic", "orders")
        done = reset()
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        for args in reversed(grants):
            removed = sasl.tool("kafka-acls", ["--remove", "--force", *args])
            assert removed.returncode == 0, removed.stderr
