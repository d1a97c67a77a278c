"""Remediation through the operator on real secured 3-broker clusters, with only the policy's
Secret references to connect (issue 11): a preferred leader election that moves leaders back, an
offset reset whose saved offsets roll back with the CLI, and a rolling restart (broker pods of the
stand-in, post-roll election: every broker on SASL_SSL (SCRAM-SHA-512), broker 1 on mTLS).

One cluster per protocol (module fixture, parametrized: one runs at a time), each with its own
control plane and pod stand-in (the stand-in keeps namespace `kafka`, which the session's
PLAINTEXT cluster's stand-in may hold on the shared control plane).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_health._kits.waiting import wait_for
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.remediate.offset_reset import OFFSETS_KEY
from kafka_health.testbed import faults, security
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
from kafka_health.testbed.standin import StandIn
from tests import parallel
from tests.k8s.conftest import apply_crds
from tests.k8s.operator_process import (
    OperatorProcess,
    apply,
    broker_starts,
    chart_operator,
    condition,
    get,
    kubectl,
    request_finished,
    wait_status,
)
from tests.k8s.test_operator_e2e import events_of
from tests.k8s.test_operator_secured import mtls_policy
from tests.k8s.test_operator_secured import policy as sasl_policy
from tests.remediate.test_offset_reset import committed
from tests.secured.helpers import kafka_health, secured_testbed

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

TOPIC, PARTITIONS, GROUP = "orders", 6, "billing"
COMMITTED = 4  # the group's committed offset on every partition before the reset
SECURITY_REASONS = {
    "KafkaAuthenticationFailed",
    "KafkaTLSHandshakeFailed",
    "KafkaTLSUntrustedCertificate",
    "KafkaTLSHostnameMismatch",
    "KafkaTLSCertificateExpired",
    "KafkaTLSClientCertificateRefused",
    "KafkaSecurityProtocolMismatch",
    "KafkaAuthorizationDenied",
    "SecretNotFound",
    "SecretUnreadable",
}


@dataclass
class Secured:
    """One secured cluster with its control plane, pod stand-in, namespace and operator."""

    mode: str
    tb: Testbed
    cp: ControlPlane
    ns: str
    op: OperatorProcess

    @property
    def conf(self) -> dict[str, str]:
        """The admin's librdkafka settings (the test's own oracle goes through the secured listener)."""
        return {**self.tb.librdkafka_config(), "logger": faults._QUIET}  # type: ignore[dict-item]

    def policy(self, name: str, **spec: Any) -> dict[str, Any]:
        if self.mode == "sasl_ssl":
            body = sasl_policy(self.ns, name, self.tb, "kafka-admin")
        else:
            body = mtls_policy(self.ns, name, self.tb, client_certificate=True)
        for key, value in spec.items():
            body["spec"][key] = {**body["spec"].get(key, {}), **value}
        return body

    def not_led_by_preferred(self) -> set[tuple[str, int]]:
        md = AdminClient(self.conf).list_topics(topic=TOPIC, timeout=10)
        return {(TOPIC, p.id) for p in md.topics[TOPIC].partitions.values() if p.leader != p.replicas[0]}

    def under_replicated(self) -> int:
        md = AdminClient(self.conf).list_topics(timeout=10)
        return sum(len(p.isrs) < len(p.replicas) for t in md.topics.values() for p in t.partitions.values())


def _secrets(cp: ControlPlane, ns: str, tb: Testbed) -> None:
    """The Secrets the policies of test_operator_secured reference, from the testbed's material."""
    material = tb.material()
    if tb.require().security == "sasl_ssl":
        user = ["--from-literal=username=" + security.ADMIN]
        user.append("--from-literal=password=" + material.password(security.ADMIN))
        kubectl(cp, "create", "secret", "generic", "kafka-admin", "-n", ns, *user)
        app = ["--from-literal=username=" + security.APP]
        app.append("--from-literal=password=" + material.password(security.APP))
        kubectl(cp, "create", "secret", "generic", "kafka-app", "-n", ns, *app)
        ca = [f"--from-file=ca.crt={material.ca_file}"]
        kubectl(cp, "create", "secret", "generic", "kafka-ca", "-n", ns, *ca)
    else:
        files = [
            f"--from-file=ca.crt={material.ca_file}",
            f"--from-file=tls.crt={material.user_cert(security.ADMIN)}",
            f"--from-file=tls.key={material.user_key(security.ADMIN)}",
        ]
        kubectl(cp, "create", "secret", "generic", "kafka-mtls", "-n", ns, *files)


@pytest.fixture(scope="module", params=["sasl_ssl", "mtls"])
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    mode = request.param
    tmp = tmp_path_factory.mktemp(f"op-remediate-{mode}")
    tb_iter = secured_testbed(tmp / "tb", mode, port_key=f"operator-remediation:{mode}", brokers=3)
    tb = next(tb_iter)
    cp = ControlPlane(tb.state_dir, parallel.control_plane_ports())
    standin = StandIn(tb.state_dir, cp.kubeconfig)
    op: OperatorProcess | None = None
    ident: Any = None
    try:
        cp.start()
        standin.start()
        apply_crds(cp)
        ns = f"secrem-{uuid.uuid4().hex[:6]}"
        kubectl(cp, "create", "namespace", ns)
        _secrets(cp, ns, tb)
        op, ident = chart_operator(cp, tmp / "operator", ns, extra_namespaces=("kafka",))
        op.start()
        yield Secured(mode, tb, cp, ns, op)
    finally:
        if op is not None:
            kubectl(cp, "delete", "khp", "--all", "-n", ns, "--wait=true", "--timeout=120s", check=False)
            op.stop()
            ident.uninstall()
        standin.stop()
        cp.stop()
        next(tb_iter, None)


def _create_topic_and_group(s: Secured) -> None:
    admin = AdminClient(s.conf)
    new = NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(timeout=60)
    wait_for(
        lambda: (
            len(AdminClient(s.conf).list_topics(topic=TOPIC, timeout=5).topics[TOPIC].partitions)
            == PARTITIONS
            and s.under_replicated() == 0
        ),
        timeout=60,
        what="the topic led and fully replicated",
    )
    producer = Producer(s.conf)
    for i in range(10 * PARTITIONS):
        producer.produce(TOPIC, value=b"x", partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    consumer = Consumer({**s.conf, "group.id": GROUP, "enable.auto.commit": False})
    try:  # no subscription: the group holds offsets and stays Empty
        consumer.commit(offsets=[KTP(TOPIC, p, COMMITTED) for p in range(PARTITIONS)], asynchronous=False)
    finally:
        consumer.close()


def _bounce(s: Secured, broker: int) -> set[tuple[str, int]]:
    """Stop and start a broker: its leaderships move away and stay away (no auto rebalance)."""
    s.tb.stop(broker)
    s.tb.start(broker)
    wait_for(lambda: s.under_replicated() == 0, timeout=120, what="URP 0 after the bounce")
    off = s.not_led_by_preferred()
    assert off, "the bounce left every leader on its preferred replica"
    return off


class AppGrants:
    """ACLs granted to the unprivileged user during one test, removed again at its end."""

    def __init__(self, s: Secured) -> None:
        self.s = s
        self.granted: list[list[str]] = []

    def grant(self, *acl: str) -> None:
        args = ["--allow-principal", f"User:{security.APP}", *acl]
        done = self.s.tb.tool("kafka-acls", ["--add", *args])
        assert done.returncode == 0, done.stderr
        self.granted.append(args)

    def revoke_all(self) -> None:
        for args in reversed(self.granted):
            self.s.tb.tool("kafka-acls", ["--remove", "--force", *args])


def _history(status: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [h for h in status.get("history") or [] if h["action"] == action]


def _elected(outcome: str) -> Any:
    """A `wait_status` predicate: status.history holds an election that ended `outcome`."""
    return lambda st: any(h["outcome"] == outcome for h in _history(st, "PreferredLeaderElection"))


def test_election_offset_reset_with_rollback_and_roll_through_the_operator(
    secured: Secured, tmp_path: Path
) -> None:
    s = secured
    cp, ns = s.cp, s.ns
    _create_topic_and_group(s)
    admin = KafkaAdmin(s.tb.librdkafka_config())
    try:
        before = committed(admin, GROUP)
        assert before == {(TOPIC, p): COMMITTED for p in range(PARTITIONS)}
        _bounce(s, 1)

        # 1. Preferred leader election and an offset reset, both in one Enforce policy.
        reset = {"id": "rewind-1", "group": GROUP, "topics": [TOPIC], "earliest": True}
        apply(cp, s.policy("secured", remediation={"mode": "Enforce", "offsetResets": {"requests": [reset]}}))
        status = wait_status(
            cp,
            ns,
            "secured",
            lambda st: (
                _elected("Succeeded")(st)
                and any(
                    r["id"] == "rewind-1" and r["state"] != "Pending" for r in st.get("offsetResets") or []
                )
            ),
            timeout=240,
            what="the election and the reset done",
        )
        assert condition(status, "Degraded").get("status") == "False", status.get("conditions")
        election = _history(status, "PreferredLeaderElection")[0]
        assert " elected" in election["message"] and "0 failed" in election["message"], election
        wait_for(lambda: not s.not_led_by_preferred(), timeout=30, what="every leader preferred again")
        result = next(r for r in status["offsetResets"] if r["id"] == "rewind-1")
        assert result["state"] == "Succeeded", result
        assert committed(admin, GROUP) == {(TOPIC, p): 0 for p in range(PARTITIONS)}
        cm = get(cp, "configmap", ns, result["savedOffsets"])
        saved = json.loads(cm["data"][OFFSETS_KEY])
        assert {(p["topic"], p["partition"]): p["offset"] for p in saved["partitions"]} == before

        # 2. The rollback, as docs/remediation-election-offsets.md says: the ConfigMap's
        # offsets.json through the CLI, with the testbed's client settings.
        saved_file = tmp_path / "saved.json"
        saved_file.write_text(cm["data"][OFFSETS_KEY])
        props = str(s.tb.client_properties())
        rollback = kafka_health(
            "reset-offsets", "-b", s.tb.require().bootstrap_servers, "--command-config", props,
            "--group", GROUP, "--from-file", str(saved_file), "--execute",
        )  # fmt: skip
        assert rollback.returncode == 0, rollback.stdout + rollback.stderr
        assert committed(admin, GROUP) == before

        # 3. A roll through the broker pods; elections off, so only the post-roll election can put
        # the leaders back on their preferred replicas. Every broker on SASL_SSL; on mTLS broker 1
        # (the roll's Kafka client is the one the election and the reset used: one restart proves
        # the certificates work for each of its waits, three only cost two more restarts).
        wanted = [0, 1, 2] if s.mode == "sasl_ssl" else [1]
        starts = broker_starts(s.tb)
        roll = s.policy(
            "secured",
            remediation={
                "mode": "Enforce",
                "preferredLeaderElection": {"enabled": False},
                "offsetResets": {"requests": [reset]},
                "rollingRestart": {
                    "requireMaintenanceWindow": False,
                    "pauseBetweenBrokers": "0s",
                    "requests": [{"id": "r1", "brokers": wanted, "reason": f"secured {s.mode}"}],
                },
            },
        )
        roll["spec"]["cluster"]["brokerPods"] = {"namespace": "kafka", "statefulSet": "kafka"}
        apply(cp, roll)
        done = wait_status(
            cp,
            ns,
            "secured",
            request_finished("rollingRestarts", "r1"),
            timeout=600,
            what="the roll finished",
        )
        rolled = next(r for r in done["rollingRestarts"] if r["id"] == "r1")
        assert rolled["state"] == "Succeeded", rolled
        assert sorted(rolled["brokersDone"]) == wanted
        assert "preferred leader election: " in rolled["message"] and "0 failed" in rolled["message"], rolled
        after = broker_starts(s.tb)
        assert {b: after[b] - starts[b] for b in after} == {b: int(b in wanted) for b in (0, 1, 2)}, (
            starts,
            after,
        )
        assert not s.not_led_by_preferred(), "the post-roll election left leaders off their preferred replica"
        assert s.under_replicated() == 0
        # The reset request is still in the spec: applied once, not again after the rollback. (A
        # fresh client: the old one's group coordinator connection went with the roll.)
        with KafkaAdmin(s.tb.librdkafka_config()) as fresh:
            assert wait_for(lambda: committed(fresh, GROUP), timeout=60, what="the offsets read") == before
        reasons = [e["reason"] for e in events_of(cp, ns, "secured")]
        assert reasons.count("BrokerRestarted") == len(wanted) and "RollSucceeded" in reasons, reasons
        # A cycle that ran while a broker restarted may find a part unreadable (Degraded for
        # that); never a security reason: the Secrets kept working through every restart.
        assert condition(done, "Degraded").get("reason") not in SECURITY_REASONS, done.get("conditions")
        assert not [line for line in s.op.log().splitlines() if "Traceback" in line], s.op.log()[-3000:]
    finally:
        admin.close()
        kubectl(cp, "delete", "khp", "secured", "-n", ns, "--wait=true", "--timeout=120s", check=False)


@pytest.mark.parametrize("secured", ["sasl_ssl"], indirect=True)
def test_alter_on_cluster_unlocks_the_election_for_the_unprivileged_user(
    secured: Secured, unique_name: str
) -> None:
    """The ACL table's ALTER on CLUSTER row (docs/policy.md): with every other ACL of the table,
    the unprivileged user's election is refused, and the CLI and the operator name the missing
    ACL (the diagnosis is unaffected); granted, the same election moves the leaders back."""
    s = secured
    cp, ns = s.cp, s.ns
    topic = unique_name
    admin = AdminClient(s.conf)
    admin.create_topics([NewTopic(topic, PARTITIONS, 3)], operation_timeout=30)[topic].result(timeout=60)
    wait_for(lambda: s.under_replicated() == 0, timeout=60, what="the topic fully replicated")
    acls = AppGrants(s)
    grant = acls.grant

    def off() -> set[int]:
        md = AdminClient(s.conf).list_topics(topic=topic, timeout=10)
        return {p.id for p in md.topics[topic].partitions.values() if p.leader != p.replicas[0]}

    app_props = str(s.tb.client_properties(security.APP))
    elect = ["elect-leaders", "-b", s.tb.require().bootstrap_servers, "--command-config", app_props]
    body = sasl_policy(ns, "app-election", s.tb, "kafka-app")
    body["spec"]["remediation"] = {
        "mode": "Enforce",
        "rateLimits": {"preferredLeaderElection": {"cooldown": "0s"}},
    }
    try:
        # Every ACL of the table but ALTER on CLUSTER: the diagnosis reads everything.
        grant("--operation", "Describe", "--operation", "DescribeConfigs", "--topic", "*")
        grant("--operation", "Describe", "--cluster")
        grant("--operation", "Describe", "--group", "*")
        s.tb.stop(1)
        s.tb.start(1)
        wait_for(lambda: s.under_replicated() == 0, timeout=120, what="URP 0 after the bounce")
        before = off()
        assert before, "the bounce left every leader on its preferred replica"

        refused = kafka_health(*elect, "--execute")
        assert refused.returncode != 0, refused.stdout + refused.stderr
        assert "CLUSTER_AUTHORIZATION_FAILED" in refused.stdout + refused.stderr
        assert "authorization denied: the principal lacks ALTER on CLUSTER kafka-cluster" in refused.stderr
        assert "--operation Alter --cluster" in refused.stderr
        assert off() == before

        apply(cp, body)
        denied = wait_status(
            cp,
            ns,
            "app-election",
            _elected("Failed"),
            timeout=300,
            what="the app user's election refused",
        )
        record = _history(denied, "PreferredLeaderElection")[0]
        assert "lacks ALTER on CLUSTER kafka-cluster" in record["message"], record
        assert "lacks ALTER on CLUSTER kafka-cluster" in denied["remediationSummary"]
        events = [e for e in events_of(cp, ns, "app-election") if e["reason"] == "KafkaAuthorizationDenied"]
        assert events and "lacks ALTER on CLUSTER kafka-cluster" in events[0]["message"], events
        assert events[0]["type"] == "Warning"
        # Nothing else broke: the diagnosis read the whole cluster, nothing is Degraded.
        assert condition(denied, "Ready")["status"] == "True", denied["conditions"]
        assert condition(denied, "Degraded")["status"] == "False", denied["conditions"]
        assert not denied["lastDiagnosis"].get("missing"), denied["lastDiagnosis"]
        assert off() == before

        grant("--operation", "Alter", "--cluster")
        healed = wait_status(
            cp,
            ns,
            "app-election",
            _elected("Succeeded"),
            timeout=300,
            what="the app user's election done",
        )
        wait_for(lambda: not off(), timeout=30, what="every leader preferred again")
        assert any(e["reason"] == "ElectionSucceeded" for e in events_of(cp, ns, "app-election"))
        assert "KafkaAuthorizationDenied" not in {c.get("reason") for c in healed["conditions"]}
    finally:
        kubectl(cp, "delete", "khp", "app-election", "-n", ns, "--wait=true", "--timeout=120s", check=False)
        acls.revoke_all()


@pytest.mark.parametrize("secured", ["sasl_ssl"], indirect=True)
def test_read_on_group_and_topic_unlock_the_offset_reset_for_the_unprivileged_user(secured: Secured) -> None:
    """The ACL table's READ rows (docs/policy.md) through the operator: without READ on the GROUP,
    then without READ on the TOPIC, the unprivileged user's offset reset fails and the operator
    names the missing ACL (KafkaAuthorizationDenied Event, remediationSummary); nothing is
    committed; with both granted, a third request resets the group."""
    s = secured
    cp, ns = s.cp, s.ns
    topic = f"rd-{uuid.uuid4().hex[:6]}"  # short: the summary is at most 256 characters
    group = f"{topic}-g"
    admin = AdminClient(s.conf)
    admin.create_topics([NewTopic(topic, 3, 3)], operation_timeout=30)[topic].result(timeout=60)
    wait_for(lambda: s.under_replicated() == 0, timeout=60, what="the topic fully replicated")
    producer = Producer(s.conf)
    for i in range(30):
        producer.produce(topic, value=b"x", partition=i % 3)
    assert producer.flush(30) == 0
    consumer = Consumer({**s.conf, "group.id": group, "enable.auto.commit": False})
    try:  # no subscription: the group holds offsets and stays Empty
        consumer.commit(offsets=[KTP(topic, p, 7) for p in range(3)], asynchronous=False)
    finally:
        consumer.close()
    before = {(topic, p): 7 for p in range(3)}
    acls = AppGrants(s)
    grant = acls.grant

    requests: list[dict[str, Any]] = []

    def reset(request_id: str) -> dict[str, Any]:
        """Add a reset request to the policy; its result once it is terminal."""
        requests.append({"id": request_id, "group": group, "topics": [topic], "earliest": True})
        body = sasl_policy(ns, "app-reset", s.tb, "kafka-app")
        body["spec"]["remediation"] = {
            "mode": "Enforce",
            "preferredLeaderElection": {"enabled": False},
            "offsetResets": {"requests": list(requests)},
        }
        apply(cp, body)
        status = wait_status(
            cp,
            ns,
            "app-reset",
            request_finished("offsetResets", request_id),
            timeout=300,
            what=f"the app user's reset {request_id} done",
        )
        return status

    def denied_events() -> list[str]:
        return [
            e["message"] for e in events_of(cp, ns, "app-reset") if e["reason"] == "KafkaAuthorizationDenied"
        ]

    with KafkaAdmin(s.tb.librdkafka_config()) as oracle:
        try:
            # What the diagnosis needs (DESCRIBE on topics, cluster, groups), nothing to commit with.
            grant("--operation", "Describe", "--operation", "DescribeConfigs", "--topic", "*")
            grant("--operation", "Describe", "--cluster")
            grant("--operation", "Describe", "--group", "*")

            status = reset("no-read-group")
            result = next(r for r in status["offsetResets"] if r["id"] == "no-read-group")
            assert result["state"] == "Failed", result
            want = f"lacks READ on GROUP {group}"
            # The request's own result says what to grant (the summary is only the latest cycle's).
            assert want in (result.get("message") or ""), result
            assert any(want in m and f"--operation Read --group {group}" in m for m in denied_events()), (
                denied_events()
            )
            assert condition(status, "Ready")["status"] == "True", status["conditions"]
            assert committed(oracle, group) == before

            grant("--operation", "Read", "--group", group)
            status = reset("no-read-topic")
            result = next(r for r in status["offsetResets"] if r["id"] == "no-read-topic")
            assert result["state"] == "Failed", result
            want = f"lacks READ on TOPIC {topic}"
            # The request's own result says what to grant (the summary is only the latest cycle's).
            assert want in (result.get("message") or ""), result
            assert any(want in m for m in denied_events()), denied_events()
            assert committed(oracle, group) == before

            grant("--operation", "Read", "--topic", topic)
            status = reset("granted")
            result = next(r for r in status["offsetResets"] if r["id"] == "granted")
            assert result["state"] == "Succeeded", result
            assert committed(oracle, group) == {(topic, p): 0 for p in range(3)}
            assert any(e["reason"] == "OffsetResetSucceeded" for e in events_of(cp, ns, "app-reset"))
        finally:
            kubectl(cp, "delete", "khp", "app-reset", "-n", ns, "--wait=true", "--timeout=120s", check=False)
            acls.revoke_all()
