"""The operator end to end: real kube-apiserver, real Kafka, the real `kafka-health operator` process.

One operator process serves the module's namespace, under exactly the Helm chart's RBAC and
flags; each test makes its own policies in it.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.report.freshness import without_as_of
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane
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
from tests.observability_doc import documented_families, documented_values
from tests.unit.resources.bad_specs import BAD_SPECS, GOOD_SPECS

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

INTERVAL_S = 10


@pytest.fixture(scope="module")
def e2e_ns(k8s_control_plane: ControlPlane, crds: None) -> str:
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    kubectl(k8s_control_plane, "create", "namespace", name)
    return name


@pytest.fixture(scope="module")
def operator(
    k8s_control_plane: ControlPlane, e2e_ns: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The module's operator runs under exactly the chart's RBAC, peering and flags (issue 7)."""
    op, ident = chart_operator(k8s_control_plane, tmp_path_factory.mktemp("operator"), e2e_ns)
    op.start()
    yield op
    op.stop()
    ident.uninstall()


@pytest.fixture(autouse=True)
def _policies_deleted_after_each_test(k8s_control_plane: ControlPlane, e2e_ns: str) -> Iterator[None]:
    """Each test's policies go when it ends: a policy left behind would keep the module's operator
    diagnosing it every interval for the rest of the module, slowing every later test."""
    yield
    kubectl(k8s_control_plane, "delete", "khp", "--all", "-n", e2e_ns, "--wait=true", "--timeout=120s")


def policy(ns: str, name: str, bootstrap: str | list[str], **spec: Any) -> dict[str, Any]:
    servers = bootstrap.split(",") if isinstance(bootstrap, str) else bootstrap
    body: dict[str, Any] = {
        "cluster": {"bootstrapServers": servers},
        "diagnostics": {"interval": f"{INTERVAL_S}s"},
    }
    for key, value in spec.items():
        body[key] = {**body.get(key, {}), **value}
    return {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": body,
    }


def events_of(cp: ControlPlane, ns: str, name: str) -> list[dict[str, Any]]:
    out = kubectl(cp, "get", "events", "-n", ns, "-o", "json")
    return [e for e in json.loads(out.stdout)["items"] if e.get("involvedObject", {}).get("name") == name]


def test_policy_becomes_healthy_within_two_intervals_and_shows_columns(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, kafka: Testbed, bootstrap: str
) -> None:
    cp = k8s_control_plane
    apply(cp, policy(e2e_ns, "healthy", bootstrap))
    started = time.monotonic()
    diagnoses: set[str] = set()  # every cycle writes a new lastDiagnosis.at; polled far faster

    def healthy(s: dict[str, Any]) -> bool:
        at = (s.get("lastDiagnosis") or {}).get("at")
        if at:
            diagnoses.add(at)
        return s.get("health") == "Healthy"

    status = wait_status(cp, e2e_ns, "healthy", healthy, timeout=6 * INTERVAL_S, what="Healthy")
    elapsed = time.monotonic() - started
    print(f"policy Healthy {elapsed:.1f}s after apply, cycles {len(diagnoses)} (interval {INTERVAL_S}s)")
    # Counted in cycles, not seconds: a loaded machine stretches each cycle, not their number.
    assert len(diagnoses) <= 2, f"Healthy only at cycle {len(diagnoses)}: {sorted(diagnoses)}"
    assert condition(status, "Ready")["status"] == "True"
    assert condition(status, "Healthy")["status"] == "True"
    assert condition(status, "Degraded")["status"] == "False"
    assert status["observedGeneration"] == get(cp, "khp", e2e_ns, "healthy")["metadata"]["generation"]

    table = kubectl(cp, "get", "khp", "-n", e2e_ns, "healthy").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "HEALTH", "FINDINGS", "MODE", "AGE"]
    assert table[1].split()[:5] == ["healthy", "True", "Healthy", "0", "Observe"]
    wide = kubectl(cp, "get", "khp", "-n", e2e_ns, "healthy", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "READY", "HEALTH", "FINDINGS", "REMEDIATION", "MODE", "AGE"]

    # lastTransitionTime is kept while the condition does not change.
    ready_since = condition(status, "Ready")["lastTransitionTime"]
    at = status["lastDiagnosis"]["at"]
    later = wait_status(
        cp,
        e2e_ns,
        "healthy",
        lambda s: s["lastDiagnosis"]["at"] != at,
        timeout=4 * INTERVAL_S,
        what="next cycle",
    )
    assert condition(later, "Ready")["lastTransitionTime"] == ready_since


def test_stopped_broker_is_reported_with_an_event_then_clears(
    k8s_control_plane: ControlPlane,
    operator: OperatorProcess,
    e2e_ns: str,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
) -> None:
    cp = k8s_control_plane
    faults.create_topic(bootstrap, unique_name, 3)
    apply(cp, policy(e2e_ns, "broker-down", bootstrap, diagnostics={"topFindings": 50}))
    wait_status(cp, e2e_ns, "broker-down", lambda s: s.get("health") == "Healthy", timeout=90, what="Healthy")

    kafka.stop(1)
    status = wait_status(
        cp,
        e2e_ns,
        "broker-down",
        lambda s: any(f["check"] == "under_replicated" for f in s.get("topFindings", [])),
        timeout=4 * INTERVAL_S + 30,
        what="the under_replicated finding",
    )
    assert status["health"] in ("Warning", "Critical")
    assert condition(status, "Healthy")["status"] == "False"
    urp = [f for f in status["topFindings"] if f["check"] == "under_replicated"]
    assert urp, status["topFindings"]
    # The findings are one incident, named for the broker, and one Event.
    status = wait_status(
        cp,
        e2e_ns,
        "broker-down",
        lambda s: any(i["id"] == "broker_down:1" for i in s.get("topIncidents", [])),
        timeout=2 * INTERVAL_S + 30,
        what="the broker_down:1 incident",
    )
    (incident,) = [i for i in status["topIncidents"] if i["id"] == "broker_down:1"]
    assert incident["severity"] == "critical" and incident["partitions"] >= 3, incident
    assert status["lastDiagnosis"]["incidents"] >= 1
    wait_for(
        lambda: any(
            e["reason"] == "IncidentOpened" and without_as_of(e["message"]).startswith("broker_down:1 ")
            for e in events_of(cp, e2e_ns, "broker-down")
        ),
        timeout=30,
        what="an IncidentOpened Event for broker_down:1",
    )

    kafka.start(1)
    faults.heal(kafka)
    wait_status(
        cp, e2e_ns, "broker-down", lambda s: s.get("health") == "Healthy", timeout=120, what="Healthy again"
    )
    wait_for(
        lambda: any(
            e["reason"] == "IncidentResolved"
            and without_as_of(e["message"]).startswith("broker_down:1 resolved")
            for e in events_of(cp, e2e_ns, "broker-down")
        ),
        timeout=30,
        what="an IncidentResolved Event for broker_down:1",
    )
    # One Event per incident and direction, not one per cycle, check or partition.
    opened = [e for e in events_of(cp, e2e_ns, "broker-down") if e["reason"] == "IncidentOpened"]
    # A slow cycle's Events start "as of HH:MM:SSZ (...ago): " (report/freshness.py).
    assert (
        sum(e.get("count", 1) for e in opened if without_as_of(e["message"]).startswith("broker_down:1 "))
        == 1
    )
    assert not any(
        e["reason"] in ("FindingAppeared", "FindingCleared") for e in events_of(cp, e2e_ns, "broker-down")
    )


def test_unreachable_cluster_is_degraded_while_other_policies_are_served(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, bootstrap: str
) -> None:
    cp = k8s_control_plane
    apply(cp, policy(e2e_ns, "served", bootstrap))
    apply(cp, policy(e2e_ns, "unreachable", "127.0.0.1:1"))
    status = wait_status(
        cp,
        e2e_ns,
        "unreachable",
        lambda s: condition(s, "Degraded").get("status") == "True",
        timeout=90,
        what="Degraded",
    )
    assert condition(status, "Degraded")["reason"] == "KafkaUnreachable"
    assert condition(status, "Ready")["status"] == "False"
    assert status["health"] == "Unknown"
    first = wait_status(
        cp, e2e_ns, "served", lambda s: "lastDiagnosis" in s, timeout=90, what="served diagnosed"
    )
    wait_status(
        cp,
        e2e_ns,
        "served",
        lambda s: s["lastDiagnosis"]["at"] != first["lastDiagnosis"]["at"],
        timeout=4 * INTERVAL_S,
        what="served keeps being diagnosed",
    )
    assert any(e["reason"] == "KafkaUnreachable" for e in events_of(cp, e2e_ns, "unreachable"))


def test_secrets_never_leak_and_a_missing_secret_is_a_condition(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, bootstrap: str
) -> None:
    cp = k8s_control_plane
    planted = f"PLANTED-{uuid.uuid4().hex}"
    apply(
        cp,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "kafka-user", "namespace": e2e_ns},
            "data": {
                "username": base64.b64encode(b"alice").decode(),
                "password": base64.b64encode(planted.encode()).decode(),
            },
        },
    )
    sasl = {
        "protocol": "SASL_PLAINTEXT",
        "sasl": {
            "mechanism": "PLAIN",
            "username": {"name": "kafka-user", "key": "username"},
            "password": {"name": "kafka-user", "key": "password"},
        },
    }
    # The testbed speaks PLAINTEXT: the SASL handshake fails, so the error paths run with the secret loaded.
    body = policy(e2e_ns, "with-secret", bootstrap)
    body["spec"]["cluster"]["security"] = sasl
    apply(cp, body)
    missing = policy(e2e_ns, "missing-secret", bootstrap)
    missing["spec"]["cluster"]["security"] = {
        **sasl,
        "sasl": {**sasl["sasl"], "password": {"name": "nope", "key": "p"}},
    }
    apply(cp, missing)

    status = wait_status(
        cp,
        e2e_ns,
        "missing-secret",
        lambda s: condition(s, "Ready").get("status") == "False",
        timeout=90,
        what="missing Secret reported",
    )
    assert condition(status, "Ready")["reason"] == "SecretNotFound"
    assert "nope" in condition(status, "Ready")["message"]
    wait_status(
        cp,
        e2e_ns,
        "with-secret",
        lambda s: condition(s, "Degraded").get("status") == "True",
        timeout=90,
        what="SASL failure reported",
    )
    time.sleep(INTERVAL_S)  # let a second failing cycle log and post too
    everything = "\n".join(
        [
            operator.log(),
            json.dumps(get(cp, "khp", e2e_ns, "with-secret")),
            kubectl(cp, "get", "events", "-n", e2e_ns, "-o", "json").stdout,
        ]
    )
    assert planted not in everything


def test_missing_broker_pods_are_reported_and_block_remediation(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, bootstrap: str
) -> None:
    cp = k8s_control_plane
    body = policy(e2e_ns, "no-pods", bootstrap)
    body["spec"]["cluster"]["brokerPods"] = {"podSelector": {"matchLabels": {"app": "no-such-kafka"}}}
    apply(cp, body)
    status = wait_status(
        cp,
        e2e_ns,
        "no-pods",
        lambda s: condition(s, "Degraded").get("status") == "True",
        timeout=90,
        what="BrokerPodsNotFound",
    )
    assert condition(status, "Degraded")["reason"] == "BrokerPodsNotFound"
    assert "no-such-kafka" in condition(status, "Degraded")["message"]
    assert condition(status, "Ready")["status"] == "True"  # diagnosis still runs


@pytest.mark.parametrize("bad", BAD_SPECS, ids=[b.description for b in BAD_SPECS])
def test_invalid_specs_are_rejected_by_the_api_server_naming_the_field(
    k8s_control_plane: ControlPlane, e2e_ns: str, bad: Any
) -> None:
    body = {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": "bad", "namespace": e2e_ns},
        "spec": bad.spec,
    }
    out = kubectl(k8s_control_plane, "create", "-f", "-", input=json.dumps(body), check=False)
    if out.returncode == 0:
        kubectl(k8s_control_plane, "delete", "khp", "-n", e2e_ns, "bad")
    assert out.returncode != 0, f"accepted: {bad.description}"
    assert bad.field in out.stderr, out.stderr


@pytest.mark.parametrize(("description", "spec"), GOOD_SPECS, ids=[d for d, _ in GOOD_SPECS])
def test_valid_specs_at_the_limits_are_accepted_by_the_api_server(
    k8s_control_plane: ControlPlane, e2e_ns: str, description: str, spec: dict[str, Any]
) -> None:
    """The other side of the bad specs: the limits themselves are accepted (a dry run)."""
    body = {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": "good", "namespace": e2e_ns},
        "spec": spec,
    }
    out = kubectl(
        k8s_control_plane, "create", "--dry-run=server", "-f", "-", input=json.dumps(body), check=False
    )
    assert out.returncode == 0, f"{description}: {out.stderr}"


def test_deleting_a_policy_stops_its_work(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, bootstrap: str
) -> None:
    cp = k8s_control_plane
    apply(cp, policy(e2e_ns, "short-lived", bootstrap))
    wait_status(cp, e2e_ns, "short-lived", lambda s: "lastDiagnosis" in s, timeout=90, what="diagnosed")
    kubectl(cp, "delete", "khp", "-n", e2e_ns, "short-lived", "--wait=true", "--timeout=90s")
    wait_for(lambda: 'policy="short-lived"' not in operator.metrics(), timeout=30, what="its metrics removed")
    cycles_after = operator.cycles(e2e_ns, "short-lived")
    time.sleep(INTERVAL_S + 2)
    assert operator.cycles(e2e_ns, "short-lived") == cycles_after == 0


def test_a_policy_with_kopfs_default_finalizer_is_migrated_and_still_deletable(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, bootstrap: str
) -> None:
    """Policies created by earlier versions carry Kopf's default finalizer: the operator puts its
    own (kafkahealth.io/finalizer) in place and drops the old one, so deletion still completes."""
    cp = k8s_control_plane
    old = policy(e2e_ns, "migrated", bootstrap)
    old["metadata"]["finalizers"] = ["kopf.zalando.org/KopfFinalizerMarker"]
    apply(cp, old)

    def finalizers() -> list[str]:
        return list(get(cp, "khp", e2e_ns, "migrated")["metadata"].get("finalizers") or [])

    wait_for(lambda: finalizers() == ["kafkahealth.io/finalizer"], timeout=60, what="finalizer migrated")
    kubectl(cp, "delete", "khp", "-n", e2e_ns, "migrated", "--wait=true", "--timeout=60s")
    gone = kubectl(cp, "get", "khp", "-n", e2e_ns, "migrated", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_metrics_after_real_cycles_are_exactly_the_documented_ones(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, bootstrap: str, unique_name: str
) -> None:
    """Scrape /metrics after real cycles (a diagnosed policy, a DryRun one with a plan held back,
    an unreachable one): every family, label and label value is one docs/observability.md names."""
    from prometheus_client.parser import text_string_to_metric_families

    cp = k8s_control_plane
    # A group 5 records behind on its own topic; unique_name deletes both after the test, so the
    # worker's later tests on the same cluster do not find it lagging.
    lagging = unique_name
    faults.create_topic(bootstrap, lagging, partitions=1)
    _produce(bootstrap, lagging, 10)
    _commit(bootstrap, lagging, lagging, 5)
    apply(cp, policy(e2e_ns, "scraped", bootstrap))
    apply(cp, policy(e2e_ns, "scraped-dry", bootstrap, remediation={"mode": "DryRun"}))
    apply(cp, policy(e2e_ns, "scraped-down", "127.0.0.1:1"))
    for name in ("scraped", "scraped-dry"):
        wait_status(cp, e2e_ns, name, lambda s: "lastDiagnosis" in s, timeout=90, what=f"{name} diagnosed")
    wait_for(
        lambda: 'policy="scraped-down"' in operator.metrics(),
        timeout=180,
        what="the unreachable one's series",
    )
    families = documented_families()
    values = documented_values()
    seen: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(operator.metrics()):
        if not family.name.startswith("kafka_health"):
            continue  # prometheus_client's own process_/python_ collectors
        exposed = family.name + ("_total" if family.type == "counter" else "")
        if exposed not in families and family.name.endswith("_created"):
            # `_created` of a counter or histogram (documented as "also `_created`")
            base = family.name.removesuffix("_created")
            exposed = base + "_total" if base + "_total" in families else base
        assert exposed in families, f"{exposed} is not in docs/observability.md"
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if k != "le"}
            assert set(labels) == families[exposed], (exposed, labels)
            for label, value in labels.items():
                if label in values:
                    assert value in values[label], f"{exposed}{{{label}={value!r}}} is not documented"
                seen.setdefault(label, set()).add(value)
    assert "ok" in seen["outcome"], seen
    assert {"scraped", "scraped-dry", "scraped-down"} <= seen["policy"], seen

    # The lagging group's lag in seconds: the log end passed its offset before the policy's first
    # sample, so a lower bound that grows with the history; no series, never 0, before that.
    def behind() -> list[tuple[float, str]]:
        return [
            (s.value, s.labels["kind"])
            for f in text_string_to_metric_families(operator.metrics())
            if f.name == "kafka_health_consumer_lag_seconds"
            for s in f.samples
            if s.labels["group"] == lagging
            and s.labels["topic"] == lagging
            and s.labels["policy"] == "scraped"
        ]

    seconds = wait_for(lambda: behind() or None, timeout=120, what="the lagging group's lag in seconds")
    # Committed by a consumer of the classic protocol (confluent-kafka's default): kind classic.
    assert len(seconds) == 1 and seconds[0][0] > 0 and seconds[0][1] == "classic", seconds


def _produce(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        producer.produce(topic, value=f"r{i}".encode())
    assert producer.flush(30) == 0


def _commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """Commit `offset` on every partition of `topic` for `group` (no member stays)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.commit(offsets=[TopicPartition(topic, p, offset) for p in parts], asynchronous=False)
    finally:
        consumer.close()


def test_two_replicas_never_both_act(
    k8s_control_plane: ControlPlane, crds: None, bootstrap: str, tmp_path: Path
) -> None:
    cp = k8s_control_plane
    ns = f"peer-{uuid.uuid4().hex[:6]}"
    kubectl(cp, "create", "namespace", ns)
    apply(
        cp,
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfPeering",
            "metadata": {"name": "kafka-health", "namespace": ns},
        },
    )
    apply(cp, policy(ns, "shared", bootstrap))
    high = OperatorProcess(
        cp, tmp_path / "high", [ns], "--peering", "kafka-health", "--priority", "20"
    ).start()
    low: OperatorProcess | None = None
    try:
        wait_for(lambda: high.cycles(ns, "shared") >= 1, timeout=120, what="the high-priority replica acting")
        low = OperatorProcess(
            cp, tmp_path / "low", [ns], "--peering", "kafka-health", "--priority", "10"
        ).start()
        acted = high.cycles(ns, "shared")
        time.sleep(3 * INTERVAL_S)
        assert high.cycles(ns, "shared") > acted, "the active replica stopped acting"
        assert low.cycles(ns, "shared") == 0, (
            "the standby replica acted while a higher-priority peer was alive"
        )
        # The standby takes over when the active replica goes away.
        high.stop()
        wait_for(lambda: low.cycles(ns, "shared") >= 1, timeout=180, what="the standby taking over")
    finally:
        high.stop()
        if low is not None:
            low.stop()


def test_a_diagnosis_past_the_timeout_is_cancelled_and_reported(
    k8s_control_plane: ControlPlane, crds: None, bootstrap: str, tmp_path: Path
) -> None:
    """--diagnosis-timeout 1s: a first cycle's Spark work (cold code generation, windows read from
    the history) takes longer, so it is cancelled and the policy reports DiagnosisTimedOut; the
    process stays live (the cancelled jobs stopped) and keeps cycling."""
    cp = k8s_control_plane
    ns = f"deadline-{uuid.uuid4().hex[:6]}"
    kubectl(cp, "create", "namespace", ns)
    apply(cp, policy(ns, "slow", bootstrap))
    op = OperatorProcess(cp, tmp_path / "op", [ns], "--standalone", "--diagnosis-timeout", "1s").start()
    try:
        status = wait_status(
            cp,
            ns,
            "slow",
            lambda s: condition(s, "Degraded").get("reason") == "DiagnosisTimedOut",
            timeout=180,
            what="DiagnosisTimedOut",
        )
        degraded = condition(status, "Degraded")
        assert degraded["status"] == "True"
        assert "--diagnosis-timeout of 1s" in degraded["message"], degraded
        assert condition(status, "Ready")["status"] == "False"
        assert any(e["reason"] == "DiagnosisTimedOut" for e in events_of(cp, ns, "slow"))
        cycles = op.cycles(ns, "slow")
        wait_for(lambda: op.cycles(ns, "slow") > cycles, timeout=6 * INTERVAL_S, what="the next cycle")
        with urllib.request.urlopen(f"http://127.0.0.1:{op.health_port}/healthz", timeout=5) as reply:
            assert reply.status == 200  # cancelled in time: nothing wedged
        assert "Traceback" not in op.log_path.read_text()
    finally:
        op.stop()
        kubectl(cp, "delete", "namespace", ns, "--wait=false")


# ------------------------------------------------------------------------------------------------
# Remediation through the operator: preferred leader election (issue 6).


def _bounce(kafka: Testbed, broker: int) -> None:
    """Stop and start a broker: its leaderships move away and stay away (no auto rebalance here)."""
    kafka.stop(broker)
    kafka.start(broker)
    wait_for(
        lambda: not faults.under_replicated(kafka.require().bootstrap_servers), timeout=120, what="URP 0"
    )


def _imbalanced_topic(kafka: Testbed, bootstrap: str, topic: str) -> set[tuple[str, int]]:
    faults.create_topic(bootstrap, topic)
    _bounce(kafka, 1)
    off = {tp for tp in faults.not_led_by_preferred(bootstrap) if tp[0] == topic}
    assert off, "the bounce left every leader on its preferred replica"
    return off


def test_dry_run_and_closed_window_act_on_nothing(
    k8s_control_plane: ControlPlane,
    operator: OperatorProcess,
    e2e_ns: str,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
) -> None:
    cp = k8s_control_plane
    off = _imbalanced_topic(kafka, bootstrap, unique_name)
    dry = policy(e2e_ns, "dry-run", bootstrap, remediation={"mode": "DryRun"})
    closed = policy(
        e2e_ns,
        "closed-window",
        bootstrap,
        remediation={
            "mode": "Enforce",
            # A one-minute window once a year, on a day that is not today.
            "maintenanceWindows": [{"schedule": "0 3 29 2 *", "duration": "1m", "timeZone": "UTC"}],
            "preferredLeaderElection": {"requireMaintenanceWindow": True},
        },
    )
    apply(cp, dry)
    apply(cp, closed)
    try:
        dry_status = wait_status(
            cp,
            e2e_ns,
            "dry-run",
            lambda s: (
                "DryRun" in json.dumps(s.get("withheld", []))
                or condition(s, "Remediating").get("reason") == "DryRun"
            ),
            timeout=90,
            what="a dry-run plan",
        )
        closed_status = wait_status(
            cp,
            e2e_ns,
            "closed-window",
            lambda s: any(w["reason"] == "OutsideMaintenanceWindow" for w in s.get("withheld", [])),
            timeout=90,
            what="withheld outside the window",
        )
        time.sleep(2 * INTERVAL_S)
        still_off = {tp for tp in faults.not_led_by_preferred(bootstrap) if tp[0] == unique_name}
        assert still_off == off, "something elected leaders although nothing may act"
        for status in (dry_status, closed_status):
            assert not status.get("history"), status.get("history")
    finally:
        kubectl(cp, "delete", "khp", "-n", e2e_ns, "dry-run", "closed-window", "--wait=true")


def test_leader_imbalance_is_healed_within_two_intervals_in_enforce_mode(
    k8s_control_plane: ControlPlane,
    operator: OperatorProcess,
    e2e_ns: str,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
) -> None:
    cp = k8s_control_plane
    _imbalanced_topic(kafka, bootstrap, unique_name)
    started = time.monotonic()
    apply(cp, policy(e2e_ns, "heal", bootstrap, remediation={"mode": "Enforce"}))
    try:
        status = wait_status(
            cp,
            e2e_ns,
            "heal",
            lambda s: any(
                h["action"] == "PreferredLeaderElection" and h["outcome"] == "Succeeded"
                for h in s.get("history", [])
            ),
            timeout=120,
            what="a succeeded preferred leader election in status.history",
        )
        wait_for(
            lambda: not {tp for tp in faults.not_led_by_preferred(bootstrap) if tp[0] == unique_name},
            timeout=30,
            what="every partition led by its preferred replica",
        )
        healed_after = time.monotonic() - started
        print(f"imbalance healed {healed_after:.1f}s after the policy was applied (interval {INTERVAL_S}s)")
        record = next(h for h in status["history"] if h["action"] == "PreferredLeaderElection")
        assert "elected" in record["message"]
        assert any(e["reason"] == "ElectionSucceeded" for e in events_of(cp, e2e_ns, "heal"))
        assert not status.get("currentRemediation")
    finally:
        kubectl(cp, "delete", "khp", "-n", e2e_ns, "heal", "--wait=true")


def test_offset_reset_waits_for_approval_saves_offsets_then_applies_once(
    k8s_control_plane: ControlPlane,
    operator: OperatorProcess,
    e2e_ns: str,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
) -> None:
    """An offset reset request through the operator: planned, held for approval (nothing
    committed), approved by annotation, the old offsets saved to a ConfigMap, applied once."""
    from datetime import UTC, datetime, timedelta

    from kafka_health.collect.kafka_admin import KafkaAdmin
    from kafka_health.remediate.offset_reset import OFFSETS_KEY
    from tests.remediate.test_offset_reset import MESSAGES, commit, committed, produce_timed

    cp = k8s_control_plane
    group = f"{unique_name}-sink"  # the unique_name fixture deletes it afterwards
    faults.create_topic(bootstrap, unique_name, 2)
    produce_timed(bootstrap, unique_name, 2, datetime.now(UTC) - timedelta(hours=3))
    commit(bootstrap, group, {(unique_name, 0): MESSAGES, (unique_name, 1): MESSAGES})
    admin = KafkaAdmin({"bootstrap.servers": bootstrap})
    before = committed(admin, group)
    body = policy(
        e2e_ns,
        "reset",
        bootstrap,
        remediation={
            "mode": "Enforce",
            "requireApproval": True,
            "preferredLeaderElection": {"enabled": False},
            "offsetResets": {
                "requests": [{"id": "restore-1", "group": group, "topics": [unique_name], "earliest": True}]
            },
        },
    )
    apply(cp, body)
    try:
        pending = wait_status(
            cp, e2e_ns, "reset", lambda s: bool((s.get("pendingPlan") or {}).get("planId")),
            timeout=120, what="a plan awaiting approval",
        )  # fmt: skip
        plan_id = pending["pendingPlan"]["planId"]
        time.sleep(INTERVAL_S)  # another cycle: still nothing may change without approval
        assert committed(admin, group) == before
        kubectl(cp, "annotate", "khp", "-n", e2e_ns, "reset", f"kafkahealth.io/approve-plan={plan_id}")
        status = wait_status(
            cp, e2e_ns, "reset",
            lambda s: any(r["id"] == "restore-1" and r["state"] in ("Succeeded", "Failed", "Blocked")
                          for r in s.get("offsetResets") or []),
            timeout=120, what="the reset finished",
        )  # fmt: skip
        result = next(r for r in status["offsetResets"] if r["id"] == "restore-1")
        assert result["state"] == "Succeeded", result
        assert committed(admin, group) == {(unique_name, 0): 0, (unique_name, 1): 0}
        saved = json.loads(get(cp, "configmap", e2e_ns, result["savedOffsets"])["data"][OFFSETS_KEY])
        assert {(p["topic"], p["partition"]): p["offset"] for p in saved["partitions"]} == before
        # Applied once per id: committing again is not undone by later cycles.
        commit(bootstrap, group, {(unique_name, 0): 5, (unique_name, 1): 5})
        time.sleep(2 * INTERVAL_S)
        assert committed(admin, group) == {(unique_name, 0): 5, (unique_name, 1): 5}
        assert any(h["action"] == "OffsetReset" and h["outcome"] == "Succeeded" for h in status["history"])
    finally:
        kubectl(cp, "delete", "khp", "-n", e2e_ns, "reset", "--wait=true")
        admin.close()


def test_a_hanging_transaction_is_found_then_aborted_on_request_and_a_young_one_is_refused(
    k8s_control_plane: ControlPlane,
    operator: OperatorProcess,
    e2e_ns: str,
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
) -> None:
    """checks.hangingTransactions on (1 min): partition 0's hanging transaction becomes a
    `hanging_transaction` finding; its abort request waits for approval, then aborts it (a
    TransactionAborted Event, a Succeeded result and history record; `kafka-transactions
    find-hanging` no longer lists it). A second request, for a transaction hanging on partition 1
    for less than the timeout, is refused live (Failed, nothing sent: it still hangs)."""
    from kafka_health.testbed.transactions import VERIFICATION, hang
    from tests.diagnose.test_hanging_transactions import find_hanging

    cp = k8s_control_plane
    topic = unique_name
    faults.create_topic(bootstrap, topic, partitions=2)
    config = ["--entity-type", "brokers", "--entity-default", "--alter"]
    assert kafka.tool("kafka-configs", [*config, "--add-config", f"{VERIFICATION}=false"]).returncode == 0
    try:
        hung = hang(bootstrap, topic, 0, f"{topic}-hang")
        requests = [
            {"id": "unstick", "topic": topic, "partition": 0, "startOffset": hung.start_offset},
            {"id": "young", "topic": topic, "partition": 1, "startOffset": 0},  # made below
        ]
        body = policy(
            e2e_ns,
            "txn",
            bootstrap,
            diagnostics={
                "checks": {"hangingTransactions": {"enabled": True, "maxTransactionTimeoutMinutes": 1}}
            },
            remediation={
                "mode": "Enforce",
                "requireApproval": True,
                "preferredLeaderElection": {"enabled": False},
                "transactionAborts": {"requests": requests},
            },
        )
        apply(cp, body)
        found = wait_status(
            cp, e2e_ns, "txn",
            lambda s: any(f["check"] == "hanging_transaction" and f"topic={topic}/" in f["subject"]
                          for f in s.get("topFindings", [])),
            timeout=180, what="the hanging_transaction finding (after the 1 min timeout)",
        )  # fmt: skip
        (finding,) = [f for f in found["topFindings"] if f["check"] == "hanging_transaction"]
        assert finding["subject"].endswith("/partition=0"), finding
        assert finding["evidence"]["start_offset"] == str(hung.start_offset)  # status evidence: strings
        status = approve_and_finish(cp, e2e_ns, "unstick")
        young = hang(bootstrap, topic, 1, f"{topic}-young")
        assert young.start_offset == 0
        status = approve_and_finish(cp, e2e_ns, "young")
        results = {r["id"]: r for r in status["transactionAborts"]}
        assert results["unstick"]["state"] == "Succeeded", results
        assert "aborted: hanging" in results["unstick"]["message"]
        assert results["young"]["state"] == "Failed", results
        assert "within the transaction timeout" in results["young"]["message"], results
        # The hanging one is gone; the young one was left as it was (nothing sent).
        assert find_hanging(kafka, topic) == {(topic, 1, young.producer_id, 0)}
        outcomes = {h["id"]: h["outcome"] for h in status["history"] if h["action"] == "TransactionAbort"}
        assert outcomes == {"unstick": "Succeeded", "young": "Failed"}
        reasons = {e["reason"] for e in events_of(cp, e2e_ns, "txn")}
        assert {"TransactionAborted", "TransactionAbortFailed"} <= reasons, reasons
    finally:
        kubectl(cp, "delete", "khp", "-n", e2e_ns, "txn", "--wait=true")
        kafka.tool("kafka-configs", [*config, "--delete-config", VERIFICATION])


def approve_and_finish(cp: ControlPlane, ns: str, request_id: str) -> dict[str, Any]:
    """Wait for `request_id`'s plan to await approval, approve it, wait for its result."""
    pending = wait_status(
        cp, ns, "txn", lambda s: (s.get("pendingPlan") or {}).get("id") == request_id,
        timeout=120, what=f"{request_id} awaiting approval",
    )  # fmt: skip
    plan_id = pending["pendingPlan"]["planId"]
    kubectl(cp, "annotate", "--overwrite", "khp", "-n", ns, "txn", f"kafkahealth.io/approve-plan={plan_id}")
    return wait_status(
        cp, ns, "txn", request_finished("transactionAborts", request_id), timeout=120,
        what=f"{request_id} finished",
    )  # fmt: skip


def test_argocd_health_check_on_objects_this_suite_produced(
    k8s_control_plane: ControlPlane, operator: OperatorProcess, e2e_ns: str, kafka: Testbed, bootstrap: str
) -> None:
    """deploy/argocd/health.lua on live objects the operator wrote (not hand-written fixtures)."""
    from tests.ship.test_argocd_health import run_health

    cp = k8s_control_plane
    # A fresh policy (fresh history): earlier fault tests leave leader-change history behind that
    # the windowed checks rightly report on older policies.
    apply(cp, policy(e2e_ns, "argo-healthy", bootstrap))
    apply(cp, policy(e2e_ns, "unreachable", "127.0.0.1:1"))
    paused = policy(e2e_ns, "paused", bootstrap, remediation={"paused": True})
    apply(cp, paused)
    wait_status(
        cp, e2e_ns, "argo-healthy", lambda s: s.get("health") == "Healthy", timeout=120, what="Healthy"
    )
    wait_status(
        cp,
        e2e_ns,
        "unreachable",
        lambda s: condition(s, "Degraded").get("status") == "True",
        timeout=90,
        what="Degraded",
    )
    wait_status(cp, e2e_ns, "paused", lambda s: "lastDiagnosis" in s, timeout=90, what="paused diagnosed")
    expected = {"argo-healthy": "Healthy", "unreachable": "Degraded", "paused": "Suspended"}
    for name, status in expected.items():
        obj = get(cp, "khp", e2e_ns, name)
        health = run_health(obj)
        assert health["status"] == status, (name, health, obj.get("status"))


# ------------------------------------------------------------------------------------------------
# Rolling restart through the operator, with the operator killed mid-roll (issue 6).


def test_operator_rolls_every_broker_once_even_when_killed_mid_roll(
    k8s_control_plane: ControlPlane,
    crds: None,
    kafka: Testbed,
    bootstrap: str,
    broker_pods: Any,
    tmp_path: Path,
) -> None:
    cp = k8s_control_plane
    ns = f"roll-{uuid.uuid4().hex[:6]}"
    kubectl(cp, "create", "namespace", ns)
    before = broker_starts(kafka)
    body = policy(
        ns,
        "roll",
        bootstrap,
        remediation={
            "mode": "Enforce",
            "preferredLeaderElection": {"enabled": False},
            "rollingRestart": {
                "requireMaintenanceWindow": False,
                "pauseBetweenBrokers": "0s",
                "requests": [{"id": "r1", "reason": "e2e"}],
            },
        },
    )
    body["spec"]["cluster"]["brokerPods"] = {"namespace": "kafka", "statefulSet": "kafka"}
    # As the chart deploys it: its Role in `ns`, its pods/statefulsets Role in "kafka", its flags.
    first, ident = chart_operator(cp, tmp_path / "first", ns, extra_namespaces=("kafka",))
    first.start()
    second: OperatorProcess | None = None
    try:
        apply(cp, body)
        wait_status(
            cp,
            ns,
            "roll",
            lambda s: len((s.get("currentRemediation") or {}).get("brokersDone") or []) >= 1,
            timeout=300,
            what="the first broker restarted",
        )
        first.stop(kill=True)  # SIGKILL: no clean shutdown, the roll is mid-way
        # The replacement pod: same identity and flags, fresh process and disk.
        second = OperatorProcess(
            cp, tmp_path / "second", [], *first.extra, kubeconfig=ident.kubeconfig
        ).start()
        status = wait_status(
            cp,
            ns,
            "roll",
            request_finished("rollingRestarts", "r1"),
            timeout=600,
            what="the roll finished",
        )
        result = next(r for r in status["rollingRestarts"] if r["id"] == "r1")
        assert result["state"] == "Succeeded", result
        assert sorted(result["brokersDone"]) == [0, 1, 2]
        after = broker_starts(kafka)
        assert {b: after[b] - before[b] for b in after} == {0: 1, 1: 1, 2: 1}, (before, after)
        assert not status.get("currentRemediation")
        assert any(h["action"] == "RollingRestart" and h["outcome"] == "Succeeded" for h in status["history"])
    finally:
        first.stop()
        if second is not None:
            second.stop()
        ident.uninstall()
