"""The certificate checks on hand-built snapshots: the thresholds' edges, an ended chain, a CA that
ends before the broker's own certificate, the issuers' mismatch (the real cluster's version is
tests/secured/test_certificate_expiry.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import SparkSession

from kafka_health.models.findings import Severity
from kafka_health.models.snapshot import ClusterSnapshot, ListenerCertificate
from kafka_health_spark.checks import certificates
from tests.spark.builders import T0, check_findings, snapshot

pytestmark = pytest.mark.spark


def cert(
    broker: int, days: float, *, issuer: str = "CN=ca", ca_days: float | None = None, verified: bool = True
) -> ListenerCertificate:
    leaf_end = T0 + timedelta(days=days)
    ends = min(leaf_end, T0 + timedelta(days=ca_days)) if ca_days is not None else leaf_end
    return ListenerCertificate(
        broker=broker,
        address=f"10.0.0.{broker}:9093",
        subject=f"CN=broker-{broker}",
        issuer=issuer,
        fingerprint_sha256=f"{broker:064x}",
        leaf_not_after=leaf_end,
        not_after=ends,
        expiring=issuer if ends < leaf_end else f"CN=broker-{broker}",
        chain_length=2,
        verified=verified,
        verify_error=None if verified else "unable to get local issuer certificate",
    )


def snap(*certs: ListenerCertificate) -> ClusterSnapshot:
    s = snapshot()
    s.listener_certificates = list(certs)
    return s


def test_expiry_by_threshold_and_ended(spark: SparkSession) -> None:
    found = {
        f.subject.broker: f
        for f in check_findings(
            spark,
            certificates.listener_certificate_expiry,
            snap(cert(0, 400), cert(1, 30), cert(2, 7), cert(3, -2), cert(4, 300, ca_days=10)),
        )
    }
    assert {b: f.severity for b, f in found.items()} == {
        1: Severity.WARNING,  # exactly 30 days: within the warning threshold
        2: Severity.CRITICAL,
        3: Severity.CRITICAL,
        4: Severity.WARNING,  # the CA in its chain ends first
    }
    assert found[3].message == (
        "Broker 3's listener 10.0.0.3:9093 serves a certificate that ended on 2026-02-28 12:00:00 UTC "
        "(CN=broker-3): clients that verify it cannot connect."
    )
    assert found[4].evidence["expiring"] == "CN=ca" and found[4].evidence["days_left"] == 10.0
    assert found[1].message.startswith(
        "Broker 1's listener 10.0.0.1:9093 serves a certificate that ends in 30.0 days"
    )
    assert "renew the certificate CN=broker-2 and load it on broker 2" in str(found[2].remediation)


def test_thresholds_are_the_policys(spark: SparkSession) -> None:
    found = check_findings(
        spark,
        certificates.listener_certificate_expiry,
        snap(cert(0, 50), cert(1, 12)),
        certificate_warn_days=60,
        certificate_critical_days=14,
    )
    assert {f.subject.broker: f.severity for f in found} == {0: Severity.WARNING, 1: Severity.CRITICAL}


def test_one_issuer_all_verified_is_no_mismatch_and_nothing_read_is_no_finding(spark: SparkSession) -> None:
    assert (
        check_findings(spark, certificates.listener_certificate_mismatch, snap(cert(0, 400), cert(1, 400)))
        == []
    )
    assert check_findings(spark, certificates.listener_certificate_mismatch, snap()) == []
    assert check_findings(spark, certificates.listener_certificate_expiry, snap()) == []


def test_two_issuers_warn_and_a_partly_untrusted_cluster_is_critical(spark: SparkSession) -> None:
    (two,) = check_findings(
        spark,
        certificates.listener_certificate_mismatch,
        snap(cert(0, 400), cert(1, 400, issuer="CN=new"), cert(2, 400)),
    )
    assert two.severity is Severity.WARNING and two.evidence["issuers"] == 2
    assert two.evidence["by_issuer"] == "CN=ca: broker(s) 0,2; CN=new: broker(s) 1"
    assert two.evidence["unverified_brokers"] is None
    (partly,) = check_findings(
        spark,
        certificates.listener_certificate_mismatch,
        snap(cert(0, 400), cert(1, 400, verified=False)),
    )
    assert partly.severity is Severity.CRITICAL and partly.evidence["unverified_brokers"] == "1"
    assert "broker(s) 1 fail this client's verification" in partly.message
    # None verifies: no mismatch (the client's own trust is wrong for every broker, not a rotation).
    assert (
        check_findings(
            spark,
            certificates.listener_certificate_mismatch,
            snap(cert(0, 400, verified=False), cert(1, 400, verified=False)),
        )
        == []
    )
