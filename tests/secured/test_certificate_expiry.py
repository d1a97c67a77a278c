"""The certificates the brokers serve, on a real 2-broker SSL testbed made with short-lived broker
certificates (`kafka-health testbed up --certificate-days 20`), with OpenSSL's own client as the
oracle (`openssl s_client -showcerts`, `openssl x509`).

Then a CA rotation left half done: broker 1 reissued by a second CA for 3 days, both CAs
trusted (the testbed's CA file holds both, as clients hold during a rotation). The diagnosis says
broker 1 is critical, broker 0 still a warning, the issuers differ, in one incident; the
operator's metric carries each broker's end of validity.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from tests.secured.helpers import PORT_OFFSET, kafka_health

pytestmark = pytest.mark.kafka

PEM = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----\n?", re.S)


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """The testbed, started with the CLI flag a user would use."""
    state = tmp_path_factory.mktemp("certificates")
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET["certificates:ssl"]
    tb = Testbed(state)
    try:
        up = kafka_health(
            "testbed",
            "up",
            "--brokers",
            "2",
            "--base-port",
            str(base),
            "--security",
            "ssl",
            "--certificate-days",
            "20",
            "--state-dir",
            str(state),
        )
        assert up.returncode == 0, up.stdout + up.stderr
        yield tb
    finally:
        tb.down(purge=True)


def served(address: str, ca_file: Path) -> list[dict[str, Any]]:
    """Oracle: each certificate the broker at `address` serves, as OpenSSL's client reads it."""
    host, port = address.rsplit(":", 1)
    shown = subprocess.run(
        ["openssl", "s_client", "-connect", f"{host}:{port}", "-showcerts", "-CAfile", str(ca_file)],
        input=b"",
        capture_output=True,
        timeout=30,
        check=False,
    )
    out = []
    for pem in PEM.findall(shown.stdout):
        fields = subprocess.run(
            ["openssl", "x509", "-noout", "-enddate", "-subject", "-issuer", "-fingerprint", "-sha256"],
            input=pem,
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout.decode()
        end = re.search(r"notAfter=(.+)", fields)
        digest = re.search(r"Fingerprint=([0-9A-F:]+)", fields)
        assert end is not None and digest is not None, fields
        out.append(
            {
                "not_after": datetime.strptime(end.group(1).strip(), "%b %d %H:%M:%S %Y %Z").replace(
                    tzinfo=UTC
                ),
                "fingerprint": digest.group(1).replace(":", "").lower(),
            }
        )
    assert out, shown.stdout.decode() + shown.stderr.decode()
    return out


def diagnose(tb: Testbed, *args: str) -> tuple[int, dict[str, Any]]:
    props = tb.client_properties()
    assert props is not None
    out = kafka_health(
        "diagnose", "-b", tb.require().bootstrap_servers, "--command-config", str(props), "-o", "json", *args
    )
    assert out.returncode in (0, 1, 4), out.stdout + out.stderr
    return out.returncode, json.loads(out.stdout)


def by_broker(report: dict[str, Any], check: str) -> dict[int, dict[str, Any]]:
    return {f["subject"]["broker"]: f for f in report["findings"] if f["check"] == check}


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def test_short_lived_certificates_warn_with_the_dates_openssl_reads(short: Testbed) -> None:
    ca_file = short.material().ca_file
    code, report = diagnose(short)
    expiry = by_broker(report, "listener_certificate_expiry")
    assert set(expiry) == {0, 1}, report["findings"]
    for b in short.require().brokers:
        address = f"127.0.0.1:{b.port}"
        chain = served(address, ca_file)
        f = expiry[b.id]
        assert f["severity"] == "warning"
        assert f["evidence"]["address"] == address and f["evidence"]["expiring"] == f"CN=broker-{b.id}"
        assert f["evidence"]["not_after"] == stamp(min(c["not_after"] for c in chain))
        assert f["evidence"]["fingerprint_sha256"] == chain[0]["fingerprint"]
        assert 19.5 < f["evidence"]["days_left"] <= 20
        ended = datetime.fromisoformat(report["certificates_not_after"][str(b.id)].replace("Z", "+00:00"))
        assert ended == min(c["not_after"] for c in chain)
    assert not by_broker(report, "listener_certificate_mismatch")
    worse = {f["check"] for f in report["findings"] if f["severity"] != "info"}
    assert worse == {"listener_certificate_expiry"} and code == 1
    (incident,) = [i for i in report["incidents"] if i["id"] == "certificates:cluster"]
    assert incident["title"].startswith("Listener certificates: served certificates ending: broker ")

    # The policy's threshold (here the CLI's --threshold): 10 days leaves 20-day certificates alone.
    code, report = diagnose(short, "--threshold", "certificate_warn_days=10")
    assert not by_broker(report, "listener_certificate_expiry") and code == 0


def test_a_half_done_rotation_is_critical_on_one_broker_and_a_mismatch(short: Testbed) -> None:
    material = short.material()
    second = security.make_ca("kafka-health testbed second CA")
    leaf = security.issue(second, "broker-1", server=True, ip_addresses=("127.0.0.1",), days=3)
    with material.ca_file.open("ab") as trusted:  # clients and brokers trust both during a rotation
        trusted.write(second.cert)
    short.stop(1)
    material.broker_keystore(1).write_bytes(leaf.key + leaf.cert + second.cert)
    short.start(1)
    port = short.broker(short.require(), 1).port

    def rotated() -> tuple[int, dict[str, Any]] | None:
        code, report = diagnose(short)
        found = by_broker(report, "listener_certificate_expiry").get(1)
        return (code, report) if found and found["severity"] == "critical" else None

    code, report = wait_for(rotated, timeout=60, interval=2, what="broker 1 serving its new certificate")
    expiry = by_broker(report, "listener_certificate_expiry")
    assert expiry[0]["severity"] == "warning" and expiry[1]["severity"] == "critical"
    chain = served(f"127.0.0.1:{port}", material.ca_file)
    assert expiry[1]["evidence"]["not_after"] == stamp(min(c["not_after"] for c in chain))
    assert 2.5 < expiry[1]["evidence"]["days_left"] <= 3
    assert expiry[1]["evidence"]["issuer"] == "CN=kafka-health testbed second CA"
    (mismatch,) = [f for f in report["findings"] if f["check"] == "listener_certificate_mismatch"]
    assert mismatch["severity"] == "warning"  # both chains verify: the client trusts both CAs
    assert mismatch["evidence"]["issuers"] == 2 and mismatch["evidence"]["unverified_brokers"] is None
    assert mismatch["evidence"]["by_issuer"] == (
        "CN=kafka-health testbed CA: broker(s) 0; CN=kafka-health testbed second CA: broker(s) 1"
    )
    (incident,) = [i for i in report["incidents"] if i["id"] == "certificates:cluster"]
    assert incident["severity"] == "critical" and len(incident["findings"]) == 3
    assert "served from 2 issuers" in incident["title"] and code == 4

    # The operator's metric: the cycle's report sets each broker's end of validity.
    from kafka_health.controller.cycle_report import Reported, report_cycle
    from kafka_health.controller.handlers import apply_report
    from kafka_health.models.findings import Diagnosis
    from kafka_health.report import metrics
    from kafka_health.report.status import CycleOutcome

    diagnosis = Diagnosis.model_validate(report)
    now = datetime.now(UTC)
    done = report_cycle(
        Reported(),
        CycleOutcome(diagnosis=diagnosis),
        written=None,
        duration_s=1.0,
        interval=timedelta(seconds=30),
        now=now,
        unix_now=now.timestamp(),
    )
    apply_report(None, "ns", "certs", replace(done, events=()))  # its Events need a policy body
    gauge = "kafka_health_listener_certificate_expiry_timestamp_seconds"
    value = metrics.REGISTRY.get_sample_value(gauge, {"namespace": "ns", "policy": "certs", "broker": "1"})
    assert value == pytest.approx(min(c["not_after"] for c in chain).timestamp(), abs=1)
    metrics.forget_policy("ns", "certs")
    assert (
        metrics.REGISTRY.get_sample_value(gauge, {"namespace": "ns", "policy": "certs", "broker": "1"})
        is None
    )
