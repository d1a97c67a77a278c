"""What the principal cannot see is counted and named (issue 33, point 1), on a real 3-broker
SASL_SSL cluster with the unprivileged SCRAM user `app` given some of the ACLs of docs/policy.md.

Kafka's own tools are the oracles: `kafka-log-dirs --describe` (as `app`: it needs only DESCRIBE
on CLUSTER) lists every partition the brokers hold, `kafka-topics --list` (as `app`) the topics
`app` may see; the difference is what `kafka-health diagnose` must name, and it must never exit 0.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_health.cli.kafka_options import connection
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.collect.visibility import read_visibility
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from tests.secured.helpers import kafka_health, secured_testbed

pytestmark = pytest.mark.kafka

TOPICS = {"orders": (6, 3), "payments": (3, 2)}  # name -> (partitions, replication factor)


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    it = secured_testbed(
        tmp_path_factory.mktemp("visibility"), "sasl_ssl", port_key="visibility:sasl_ssl", brokers=3
    )
    cluster = next(it)
    for topic, (n, rf) in TOPICS.items():
        made = cluster.tool(
            "kafka-topics",
            ["--create", "--topic", topic, "--partitions", str(n), "--replication-factor", str(rf)],
        )
        assert made.returncode == 0, made.stderr
    commit(cluster, "billing", "orders", 6)  # also creates __consumer_offsets
    yield cluster
    next(it, None)


def commit(tb: Testbed, group: str, topic: str, partitions: int) -> None:
    """As admin: records in every partition and offsets committed by `group` (left Empty)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    conf = tb.librdkafka_config()
    producer = Producer(conf)
    for i in range(5 * partitions):
        producer.produce(topic, value=b"x", partition=i % partitions)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, p, 3) for p in range(partitions)], asynchronous=False)
    consumer.close()


def app_properties(tb: Testbed) -> Path:
    path = tb.client_properties(security.APP)
    assert path is not None
    return path


@contextlib.contextmanager
def granted(tb: Testbed, *acls: list[str]) -> Iterator[None]:
    """`app` holds these ACLs (each a kafka-acls argument list) inside the block only."""
    done: list[list[str]] = []
    try:
        for acl in acls:
            args = ["--allow-principal", "User:app", *acl]
            added = tb.tool("kafka-acls", ["--add", *args])
            assert added.returncode == 0, added.stderr
            done.append(args)
        yield
    finally:
        for args in reversed(done):
            removed = tb.tool("kafka-acls", ["--remove", "--force", *args])
            assert removed.returncode == 0, removed.stderr


CLUSTER = ["--operation", "Describe", "--cluster"]


def oracle(tb: Testbed) -> dict[str, set[int]]:
    """Kafka's tools, run as `app`: the partitions on the log dirs of topics `app` cannot list."""
    props = str(app_properties(tb))
    dirs = tb.tool("kafka-log-dirs", ["--describe", "--command-config", props])
    assert dirs.returncode == 0, dirs.stderr
    answer = json.loads(dirs.stdout.strip().splitlines()[-1])
    listed = tb.tool("kafka-topics", ["--list", "--command-config", props])
    assert listed.returncode == 0, listed.stderr
    visible = set(listed.stdout.split())
    hidden: dict[str, set[int]] = {}
    for broker in answer["brokers"]:
        for log_dir in broker["logDirs"]:
            for p in log_dir["partitions"]:
                topic, _, partition = p["partition"].rpartition("-")
                if not p["isFuture"] and topic not in visible:
                    hidden.setdefault(topic, set()).add(int(partition))
    return hidden


def diagnose(tb: Testbed, tmp: Path) -> tuple[int, str, ClusterSnapshot]:
    saved = tmp / "snapshot.json"
    out = kafka_health(
        "diagnose",
        "-b",
        tb.require().bootstrap_servers,
        "--command-config",
        str(app_properties(tb)),
        "--save-snapshot",
        str(saved),
        "--spark-driver-memory",
        "512m",
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out.returncode, out.stdout, ClusterSnapshot.model_validate_json(saved.read_text())


def snapshot(tb: Testbed) -> ClusterSnapshot:
    conn = connection(tb.require().bootstrap_servers, app_properties(tb))
    with KafkaAdmin(conn, timeouts=Timeouts(metadata=6, request=6)) as admin:
        return collect_snapshot(admin, "visibility", lambda: datetime.now(UTC))


def test_no_acl_at_all_says_the_totals_cannot_be_checked(tb: Testbed, tmp_path: Path) -> None:
    code, out, snap = diagnose(tb, tmp_path)
    assert code != 0, out
    assert snap.partitions == [] and snap.hidden == {}
    missing = {m.part: m.reason for m in snap.missing}
    assert missing["visibility"].startswith(
        "authorization denied: the principal lacks DESCRIBE on CLUSTER kafka-cluster, so DescribeLogDirs "
        "is denied: the totals cannot be checked"
    )
    assert (
        "0 topics, 0 partitions, 0 consumer groups (what this principal sees; the totals cannot be checked)"
        in out
    )
    assert "visibility:cluster" in out and "Not read: " in out and "visibility" in out.split("Not read: ")[1]


def test_describe_on_cluster_alone_names_every_hidden_partition(tb: Testbed, tmp_path: Path) -> None:
    """The issue's case: without DESCRIBE on TOPIC, diagnose exited 0 with "0 topics"."""
    with granted(tb, CLUSTER):
        expected = oracle(tb)
        n, m = sum(len(ps) for ps in expected.values()), len(expected)
        assert set(expected) == {"orders", "payments", "__consumer_offsets"}
        code, out, snap = diagnose(tb, tmp_path)
    assert {t: set(ps) for t, ps in snap.hidden.items()} == expected
    assert code == 4, out  # everything hidden: critical (more hidden than seen)
    assert f"{n} partitions in {m} topics on the brokers are hidden from this principal" in out
    assert "it lacks DESCRIBE on TOPIC" in out
    assert "kafka-acls --add --allow-principal User:<name> --operation Describe --topic '*'" in out
    assert f"(what this principal sees; {n} more partitions on the brokers are hidden from it)" in out
    assert "critical  visibility:cluster" in out


def test_partly_hidden_is_a_warning_counted_like_kafka(tb: Testbed, tmp_path: Path) -> None:
    """DESCRIBE on the two user topics only: the internal __consumer_offsets counts as hidden."""
    topics = [["--operation", "Describe", "--topic", t] for t in TOPICS]
    with granted(tb, CLUSTER, *topics):
        expected = oracle(tb)
        assert set(expected) == {"__consumer_offsets"}
        n = len(expected["__consumer_offsets"])
        code, out, snap = diagnose(tb, tmp_path)
        conn = connection(tb.require().bootstrap_servers, app_properties(tb))
        with KafkaAdmin(conn, timeouts=Timeouts(metadata=6, request=6)) as admin:
            seen = read_visibility(admin, [p.topic for p in snap.partitions], [b.id for b in snap.brokers])
    assert {p.topic for p in snap.partitions} == set(TOPICS)
    assert {t: set(ps) for t, ps in snap.hidden.items()} == expected
    assert seen.hidden_partition_count() == n and seen.brokers_unread == () and seen.unchecked is None
    assert code == 1, out  # 9 seen, 6 hidden: a warning, never healthy
    assert (
        f"{n} partitions in 1 topic on the brokers are hidden from this principal (__consumer_offsets)" in out
    )


def test_a_groups_offsets_on_hidden_topics_are_named_with_the_acl(tb: Testbed) -> None:
    """OffsetFetch leaves out topics the principal may not DESCRIBE: the group is named, whether
    its members are assigned the hidden topic (certain) or it is Empty with nothing readable."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            **tb.librdkafka_config(),
            "group.id": "shipping",
            "enable.auto.commit": False,
            "session.timeout.ms": 45000,
        }
    )
    consumer.subscribe(["payments"])
    deadline = time.monotonic() + 60
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.5)
    assert consumer.assignment(), "the consumer got no assignment"
    groups = [["--operation", "Describe", "--group", g] for g in ("billing", "shipping")]
    try:
        with granted(tb, CLUSTER, *groups):
            snap = snapshot(tb)
    finally:
        consumer.close()
    missing = {m.part: m.reason for m in snap.missing}
    assert {"visibility", "group_offsets:billing", "group_offsets:shipping"} <= set(missing), missing
    assert missing["group_offsets:shipping"].startswith(
        "authorization denied: the principal lacks DESCRIBE on TOPIC payments, which members of group "
        "shipping are assigned"
    )
    assert "their lag is unknown, not 0" in missing["group_offsets:shipping"]
    assert "no committed offset of group billing could be read" in missing["group_offsets:billing"]
    for reason in (missing["group_offsets:billing"], missing["group_offsets:shipping"]):
        assert "--operation Describe --topic '*'" in reason


def test_every_acl_of_the_table_leaves_nothing_hidden(tb: Testbed, tmp_path: Path) -> None:
    acls = [
        ["--operation", "Describe", "--operation", "DescribeConfigs", "--topic", "*"],
        CLUSTER,
        ["--operation", "Describe", "--group", "*"],
    ]
    with granted(tb, *acls):
        assert oracle(tb) == {}
        snap = snapshot(tb)
        code, out, _ = diagnose(tb, tmp_path)
    assert snap.hidden == {} and snap.missing == [], snap.missing
    assert "visibility" not in out and "hidden" not in out
    assert code in (0, 1), out  # RF 2 topics may warn; nothing about what the principal sees
