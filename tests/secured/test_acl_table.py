"""The ACL table of docs/policy.md, proven row by row on a real 3-broker SASL_SSL cluster with a
least-privilege principal (`app`): with exactly the table's ACLs every feature works (diagnose
reads everything, elect-leaders and reset-offsets execute); without one row exactly the features
that need it fail, naming that ACL, and nothing reads healthy, succeeded or "does not exist".

Kafka's own tools, run as admin, are the oracles: `kafka-topics --describe` for the leaders (5
partitions of `orders` whose preferred replica, broker 0, was bounced away from leading them),
`kafka-consumer-groups --describe` for the committed offsets.

Kafka grants DESCRIBE with READ, WRITE, DELETE and ALTER on the same resource (its implied
operations): a DESCRIBE row is only really absent without the READ (or ALTER) row on the same
resource type, so removing it here removes that one too (`IMPLIED_BY`).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from tests import parallel
from tests.secured.helpers import kafka_health, secured_testbed
from tests.secured.test_sasl_ssl import _committed

pytestmark = pytest.mark.kafka

TOPIC, GROUP, PARTITIONS, COMMITTED = "orders", "billing", 5, 3
ASSIGNMENT = "0:1:2,0:2:1,0:1:2,0:2:1,0:1:2"  # broker 0 is every partition's preferred replica

# The table's rows, as kafka-acls grants them to the principal (the grant lines of docs/policy.md).
ROWS: dict[str, tuple[str, ...]] = {
    "DESCRIBE TOPIC": ("--operation", "Describe", "--topic", "*"),
    "DESCRIBE_CONFIGS TOPIC": ("--operation", "DescribeConfigs", "--topic", "*"),
    "DESCRIBE CLUSTER": ("--operation", "Describe", "--cluster"),
    "ALTER CLUSTER": ("--operation", "Alter", "--cluster"),
    "DESCRIBE GROUP": ("--operation", "Describe", "--group", "*"),
    "READ GROUP": ("--operation", "Read", "--group", "*"),
    "READ TOPIC": ("--operation", "Read", "--topic", "*"),
}
IMPLIED_BY = {
    "DESCRIBE TOPIC": "READ TOPIC",
    "DESCRIBE CLUSTER": "ALTER CLUSTER",
    "DESCRIBE GROUP": "READ GROUP",
}
NEVER = ("does not exist", "not found", "Every partition is led by its preferred replica", "EXECUTED:")


def binding(row: str, *, kind: Any = None) -> Any:
    """The AclBinding kafka-acls creates for a row (ALLOW, literal, any host; CLUSTER is
    `kafka-cluster`), or the AclBindingFilter that matches exactly it (`kind`)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    operation, resource = row.split(" ")
    restype, name = (
        (ResourceType.BROKER, "kafka-cluster") if resource == "CLUSTER" else (ResourceType[resource], "*")
    )
    return (kind or AclBinding)(
        restype,
        name,
        ResourcePatternType.LITERAL,
        f"User:{security.APP}",
        "*",
        AclOperation[operation],
        AclPermissionType.ALLOW,
    )


class AclCluster:
    """The cluster, the principal's client.properties, and the admin's oracles."""

    def __init__(self, tb: Testbed, tmp: Path) -> None:
        self.tb, self.tmp = tb, tmp
        props = tb.client_properties(security.APP)
        assert props is not None
        self.props = props
        self.bootstrap = tb.require().bootstrap_servers

    def grant(self, row: str) -> None:
        """The grant line of docs/policy.md, run with Kafka's own kafka-acls."""
        done = self.tb.tool("kafka-acls", ["--add", "--allow-principal", f"User:{security.APP}", *ROWS[row]])
        assert done.returncode == 0, done.stderr

    @contextmanager
    def without(self, *rows: str) -> Iterator[None]:
        """The rows removed for the block, then granted again: through the Admin API as admin
        (the grant lines themselves are proven with kafka-acls when the module starts; each tool
        run is a JVM, 4 per row here)."""
        from confluent_kafka.admin import AclBindingFilter, AdminClient

        admin = AdminClient(self.tb.librdkafka_config())
        bindings = [binding(row) for row in rows]
        filters = [binding(row, kind=AclBindingFilter) for row in rows]
        for wanted, deleted in admin.delete_acls(filters, request_timeout=30).items():
            matched = deleted.result(30)
            assert len(matched) == 1, f"{wanted}: {matched}"
        time.sleep(1)  # the brokers apply ACL changes from the metadata log a moment later
        try:
            yield
        finally:
            for created in admin.create_acls(bindings, request_timeout=30).values():
                created.result(30)
            time.sleep(1)

    def leaders(self) -> dict[int, tuple[int, int]]:
        """Oracle: partition -> (leader, preferred replica), from kafka-topics --describe as admin."""
        out = self.tb.tool("kafka-topics", ["--describe", "--topic", TOPIC])
        assert out.returncode == 0, out.stderr
        found = re.findall(r"Partition: (\d+)\s+Leader: (-?\d+)\s+Replicas: (\d+)", out.stdout)
        return {int(p): (int(leader), int(preferred)) for p, leader, preferred in found}

    def off_preferred(self) -> set[int]:
        return {p for p, (leader, preferred) in self.leaders().items() if leader != preferred}

    def bounce(self) -> None:
        """Broker 0 stopped and started: it leads none of its 5 preferred partitions after."""
        self.tb.stop(0)
        self.tb.start(0)
        wait_for(
            lambda: self.off_preferred() == set(range(PARTITIONS)) and self.in_sync(),
            timeout=120,
            what="every orders partition off its preferred leader, in sync",
        )

    def ensure_off_preferred(self) -> None:
        if self.off_preferred() != set(range(PARTITIONS)):
            self.bounce()

    def in_sync(self) -> bool:
        out = self.tb.tool("kafka-topics", ["--describe", "--under-replicated-partitions"])
        return out.returncode == 0 and not out.stdout.strip()

    def committed(self) -> dict[int, int | None]:
        """Oracle: partition -> the group's committed offset, from kafka-consumer-groups as admin."""
        out = self.tb.tool("kafka-consumer-groups", ["--describe", "--group", GROUP])
        assert out.returncode == 0, out.stderr
        rows = [r for r in (line.split() for line in out.stdout.splitlines()) if r[:2] == [GROUP, TOPIC]]
        return {int(r[2]): None if r[3] == "-" else int(r[3]) for r in rows}

    def commit(self, offset: int) -> None:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self.tb.librdkafka_config(), "group.id": GROUP, "enable.auto.commit": False})
        offsets = [TopicPartition(TOPIC, p, offset) for p in range(PARTITIONS)]
        try:  # a new cluster's coordinator may still be loading: retried (test_sasl_ssl._committed)
            wait_for(lambda: _committed(consumer, offsets), timeout=60, what=f"group {GROUP} committed")
        finally:
            consumer.close()

    # The features, as a user runs them with the principal's client.properties.
    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return kafka_health(*args, "-b", self.bootstrap, "--command-config", str(self.props))

    def diagnose(self, name: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
        saved = self.tmp / f"{name}.json"
        out = self.run("diagnose", "--save-snapshot", str(saved))
        assert saved.exists(), out.stdout + out.stderr
        return out, {m["part"]: m["reason"] for m in json.loads(saved.read_text())["missing"]}

    def elect(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.run("elect-leaders", *extra)

    def reset(self, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
        save = self.tmp / f"reset-{name}.json"
        return self.run(
            "reset-offsets", "-g", GROUP, "-t", TOPIC, "--to-earliest", "--save-to", str(save), *extra
        )


@pytest.fixture(scope="module")
def acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    tmp = tmp_path_factory.mktemp("acl_table")
    tb_iter = secured_testbed(tmp / "tb", "sasl_ssl", port_key="acl_table:sasl_ssl", brokers=3)
    tb = next(tb_iter)
    try:
        c = AclCluster(tb, tmp)
        created = tb.tool("kafka-topics", ["--create", "--topic", TOPIC, "--replica-assignment", ASSIGNMENT])
        assert created.returncode == 0, created.stderr
        wait_for(lambda: len(c.leaders()) == PARTITIONS and c.in_sync(), timeout=60, what="orders in sync")
        from confluent_kafka import Producer

        producer = Producer(tb.librdkafka_config())
        for i in range(10 * PARTITIONS):
            producer.produce(TOPIC, value=b"x", partition=i % PARTITIONS)
        assert producer.flush(30) == 0
        c.commit(COMMITTED)
        for row in ROWS:
            c.grant(row)
        yield c
    finally:
        next(tb_iter, None)


def assert_never_claims(out: subprocess.CompletedProcess[str]) -> None:
    for words in NEVER:
        assert words not in out.stdout + out.stderr, out.stdout + out.stderr


def test_with_exactly_the_table_every_feature_works(acl: AclCluster) -> None:
    acl.ensure_off_preferred()
    diagnosed, missing = acl.diagnose("all-rows")
    assert diagnosed.returncode in (0, 1), diagnosed.stdout + diagnosed.stderr  # 1: the leader imbalance
    assert missing == {}

    planned = acl.elect()
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert all(re.search(rf"^{TOPIC}\s+{p}\s", planned.stdout, re.M) for p in range(PARTITIONS)), (
        planned.stdout
    )
    elected = acl.elect("--execute")
    assert elected.returncode == 0, elected.stdout + elected.stderr
    assert "Successfully completed leader election (PREFERRED)" in elected.stdout
    assert acl.off_preferred() == set()  # Kafka's own view: every leader preferred again

    reset = acl.reset("all-rows", "--execute")
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert acl.committed() == dict.fromkeys(range(PARTITIONS), 0)
    acl.commit(COMMITTED)


# Per removed row: the features that must fail, each with the words its error must carry.
EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    "DESCRIBE TOPIC": {
        "diagnose": ("visibility", "hidden from this principal", "lacks DESCRIBE on TOPIC"),
        "elect": ("hidden from this principal", TOPIC, "lacks DESCRIBE on TOPIC", "nothing elected"),
        "elect -t": (f"lacks DESCRIBE on TOPIC {TOPIC}", f"--operation Describe --topic {TOPIC}"),
        "reset": (f"lacks DESCRIBE on TOPIC {TOPIC}", "nothing reset"),
    },
    "DESCRIBE_CONFIGS TOPIC": {
        "diagnose": (f"configs:{TOPIC}", f"lacks DESCRIBE_CONFIGS on TOPIC {TOPIC}"),
    },
    "DESCRIBE CLUSTER": {
        "diagnose": ("visibility", "lacks DESCRIBE on CLUSTER", "cannot be checked"),
        "elect": ("lacks DESCRIBE on CLUSTER", "cannot be checked", "nothing elected"),
        "elect -t": ("lacks ALTER on CLUSTER kafka-cluster",),  # ALTER went with it (it implies DESCRIBE)
    },
    "ALTER CLUSTER": {
        "elect": ("lacks ALTER on CLUSTER kafka-cluster", "--operation Alter --cluster", "REFUSED BY KAFKA"),
        "elect -t": ("lacks ALTER on CLUSTER kafka-cluster",),
    },
    "DESCRIBE GROUP": {
        "diagnose": (f"group:{GROUP}", f"lacks DESCRIBE on GROUP {GROUP}"),
        "reset": (f"lacks DESCRIBE on GROUP {GROUP}", "nothing reset"),
    },
    "READ GROUP": {
        "reset": (f"lacks READ on GROUP {GROUP}", "--operation Read --group"),
    },
    "READ TOPIC": {
        "reset": (f"lacks READ on TOPIC {TOPIC}", "--operation Read --topic"),
    },
}


@pytest.mark.parametrize("row", list(ROWS))
def test_without_one_row_exactly_its_features_name_it(acl: AclCluster, row: str) -> None:
    expected = EXPECTED[row]
    acl.ensure_off_preferred()
    leaders, offsets = acl.leaders(), acl.committed()
    removed = [row, *([IMPLIED_BY[row]] if row in IMPLIED_BY else [])]
    with acl.without(*removed):
        diagnosed, missing = acl.diagnose(row.replace(" ", "-"))
        if "diagnose" in expected:
            assert diagnosed.returncode != 0, diagnosed.stdout  # never healthy
            reasons = " ".join(f"{part} {reason}" for part, reason in missing.items())
            for words in expected["diagnose"]:
                assert words in reasons, missing
        else:
            assert diagnosed.returncode in (0, 1) and missing == {}, (diagnosed.stdout, missing)

        runs = {
            "elect": acl.elect(*(["--execute"] if "elect" in expected else [])),
            "elect -t": acl.elect("-t", TOPIC, *(["--execute"] if "elect -t" in expected else [])),
            "reset": acl.reset(row.replace(" ", "-"), *(["--execute"] if "reset" in expected else [])),
        }
        for feature, out in runs.items():
            said = out.stdout + out.stderr
            if feature in expected:
                assert out.returncode == 3, said  # could not run: nothing changed
                for words in expected[feature]:
                    assert words in said, said
                assert_never_claims(out)
            else:  # what does not need the row works as before (a dry run: it reads what --execute does)
                assert out.returncode == 0, said
                assert "authorization denied" not in said, said
    # Nothing changed where a feature failed (Kafka's tools as admin).
    assert acl.leaders() == leaders
    assert acl.committed() == offsets


@pytest.mark.k8s
def test_restart_dry_run_passes_with_the_table_and_refuses_hidden_partitions(acl: AclCluster) -> None:
    """`restart`'s pre-checks, as a dry run against the broker pods (the real kube-apiserver and
    the pod stand-in): with exactly the table's rows they pass (exit 0: the first broker may
    restart now); without DESCRIBE on TOPIC (and READ, which implies it) the roll is refused,
    naming the hidden partitions and the grant, before anything else (exit 3)."""
    from kafka_health.testbed.controlplane import ControlPlane
    from kafka_health.testbed.pod_layout import NAMESPACE
    from kafka_health.testbed.standin import StandIn

    cp = ControlPlane(acl.tb.state_dir, parallel.control_plane_ports())
    standin = StandIn(acl.tb.state_dir, cp.kubeconfig)
    try:
        cp.start()
        standin.start()
        args = ("restart", "-n", NAMESPACE, "--kubeconfig", str(cp.kubeconfig), "--statefulset", "kafka")
        planned = acl.run(*args)
        said = planned.stdout + planned.stderr
        assert planned.returncode == 0, said
        assert "DRY RUN" in planned.stdout and "authorization denied" not in said
        with acl.without("DESCRIBE TOPIC", "READ TOPIC"):
            refused = acl.run(*args)
        said = refused.stdout + refused.stderr
        assert refused.returncode == 3, said
        for words in ("hidden from this principal", TOPIC, "lacks DESCRIBE on TOPIC", "nothing restarted"):
            assert words in refused.stderr, said
        assert "DRY RUN" not in refused.stdout
    finally:
        standin.stop()
        cp.stop()
