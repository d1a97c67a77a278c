"""mTLS (client certificates, CN → user, StandardAuthorizer) on a real broker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_health.cli.kafka_options import connection
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from tests.secured.helpers import internal_listener, kafka_health, other_ca, properties_with, secured_testbed

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    tb_iter = secured_testbed(tmp_path_factory.mktemp("mtls"), "mtls")
    tb = next(tb_iter)
    created = tb.tool(
        "kafka-topics", ["--create", "--topic", "payments", "--partitions", "2", "--replication-factor", "1"]
    )
    assert created.returncode == 0, created.stderr
    yield tb
    next(tb_iter, None)


def bootstrap(tb: Testbed) -> str:
    return tb.require().bootstrap_servers


def test_diagnose_and_elect_leaders_with_a_client_certificate(mtls: Testbed, tmp_path: Path) -> None:
    props = str(mtls.client_properties())
    elect = kafka_health("elect-leaders", "-b", bootstrap(mtls), "--command-config", props, "-o", "json")
    assert elect.returncode == 0, elect.stderr
    snap = tmp_path / "snapshot.json"
    out = kafka_health(
        "diagnose",
        "-b",
        bootstrap(mtls),
        "--command-config",
        props,
        "-o",
        "json",
        "--save-snapshot",
        str(snap),
    )
    assert out.returncode in (0, 1), out.stderr
    saved = json.loads(snap.read_text())
    assert {p["topic"] for p in saved["partitions"]} >= {"payments"}
    assert saved["missing"] == []
    key = (mtls.material().user_key(security.ADMIN)).read_text()
    assert key.splitlines()[1] not in out.stdout + out.stderr  # no key material in any output


def test_no_client_certificate_is_a_tls_failure_naming_the_keystore(mtls: Testbed, tmp_path: Path) -> None:
    props = properties_with(
        mtls, tmp_path, "no-cert.properties", ssl__keystore__type=None, ssl__keystore__location=None
    )
    out = kafka_health("diagnose", "-b", bootstrap(mtls), "--command-config", str(props))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "TLS handshake failed: " in out.stderr and "alert" in out.stderr
    assert "ssl.keystore.location in --command-config" in out.stderr


def test_bad_ca_is_a_tls_failure_naming_the_truststore(mtls: Testbed, tmp_path: Path) -> None:
    props = properties_with(
        mtls, tmp_path, "bad-ca.properties", ssl__truststore__location=str(other_ca(tmp_path))
    )
    out = kafka_health("diagnose", "-b", bootstrap(mtls), "--command-config", str(props))
    assert out.returncode == 3, out.stdout + out.stderr
    assert "TLS handshake failed: " in out.stderr and "ssl.truststore.location" in out.stderr


def test_tls_client_on_a_plaintext_listener_is_a_protocol_mismatch(mtls: Testbed) -> None:
    props = str(mtls.client_properties())
    out = kafka_health("diagnose", "-b", internal_listener(mtls), "--command-config", props)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "security protocol mismatch: " in out.stderr


def test_unprivileged_certificate_names_the_missing_acl(mtls: Testbed) -> None:
    app_props = mtls.client_properties(security.APP)
    assert app_props is not None
    with KafkaAdmin(
        connection(bootstrap(mtls), app_props), timeouts=Timeouts(metadata=6, request=6)
    ) as admin:
        snap = collect_snapshot(admin, "mtls", lambda: datetime.now(UTC))
    assert snap.reachable
    # Kafka hides the topics User:app may not DESCRIBE; the cluster-level refusal is reported.
    assert snap.partitions == []
    missing = {m.part: m.reason for m in snap.missing}
    assert missing["quorum"].startswith("authorization denied: the principal lacks DESCRIBE on CLUSTER")
