"""The four TLS causes told apart on real brokers, as a user meets them with `kafka-health diagnose
--command-config`: an untrusted chain, a host name the certificate does not name, an expired
broker certificate, and a client certificate the broker refused. Each has its own message, its
own condition reason (the cause the operator maps to one), names the Kafka client.properties key
to fix, and names no librdkafka-only setting (librdkafka's own hint says `ssl.ca.location`).

The expired certificate is a real broker's: Kafka 4.1 starts a listener whose keystore holds an
expired certificate (it checks no validity at start-up), so the SSL testbed here is made with
one; its start-up is awaited on the PLAINTEXT inter-broker listener, since no client can verify
the client listener.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_health.collect import security_errors
from kafka_health.collect.security_errors import TlsCause
from kafka_health.models.reasons import ProblemReason
from kafka_health.testbed import security
from kafka_health.testbed.cluster import Testbed
from tests.secured.helpers import PORT_OFFSET, kafka_health, other_ca, properties_with, secured_testbed

pytestmark = pytest.mark.kafka

QUIET = logging.getLogger("tls-causes.quiet")
QUIET.disabled = True
LIBRDKAFKA_ONLY = ("ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.key.location")
# What the operator's cycle reports as the condition reason for each cause (controller/cycle.py).
REASON = {
    TlsCause.UNTRUSTED: ProblemReason.KAFKA_TLS_UNTRUSTED_CERTIFICATE,
    TlsCause.HOSTNAME: ProblemReason.KAFKA_TLS_HOSTNAME_MISMATCH,
    TlsCause.EXPIRED: ProblemReason.KAFKA_TLS_CERTIFICATE_EXPIRED,
    TlsCause.CLIENT_REFUSED: ProblemReason.KAFKA_TLS_CLIENT_CERTIFICATE_REFUSED,
}


@pytest.fixture(scope="module")
def mtls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    yield from secured_testbed(tmp_path_factory.mktemp("tls-causes-mtls"), "mtls", port_key="tls-causes:mtls")


def _expired(ca: security.Pem, common_name: str) -> security.Pem:
    """A server certificate for 127.0.0.1 signed by `ca` whose validity ended yesterday."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    fresh = security.issue(ca, common_name, server=True, ip_addresses=("127.0.0.1",))
    cert = x509.load_pem_x509_certificate(fresh.cert)
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key: Any = serialization.load_pem_private_key(ca.key, password=None)
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(cert.subject)
        .issuer_name(ca_cert.subject)
        .public_key(cert.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=30))
        .not_valid_after(now - dt.timedelta(days=1))
    )
    for ext in cert.extensions:
        builder = builder.add_extension(ext.value, ext.critical)
    expired = builder.sign(ca_key, hashes.SHA256())
    return security.Pem(expired.public_bytes(serialization.Encoding.PEM), fresh.key)


@pytest.fixture(scope="module")
def expired(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Testbed, str]]:
    """An SSL testbed whose broker serves an expired certificate (its CA is valid), and that
    certificate's end of validity."""
    from cryptography import x509

    state = tmp_path_factory.mktemp("tls-causes-ssl")
    material = security.Material(state, "ssl")
    material.dir.mkdir(parents=True, mode=0o700)
    ca = security.make_ca()
    material.ca_key_file.write_bytes(ca.key)
    os.chmod(material.ca_key_file, 0o600)
    material.ca_file.write_bytes(ca.cert)
    leaf = _expired(ca, "broker-0")
    material.broker_keystore(0).write_bytes(leaf.key + leaf.cert + ca.cert)  # kept by Material.ensure
    os.chmod(material.broker_keystore(0), 0o600)
    not_after = x509.load_pem_x509_certificate(leaf.cert).not_valid_after_utc.strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )
    tb = Testbed(state)

    def wait_on_internal_listener(st: Any, broker_ids: list[int], *, timeout: float) -> None:
        """No client verifies the client listener's certificate: wait on the PLAINTEXT one."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        for b in st.brokers:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{b.internal_port}", "logger": QUIET})
            while True:
                try:
                    md = admin.list_topics(timeout=3)
                    if b.id in md.brokers and md.controller_id is not None:
                        break
                except Exception:
                    pass
                assert time.monotonic() < deadline, f"broker {b.id} did not serve; see {state / 'logs'}"
                time.sleep(0.5)

    tb.wait_serving = wait_on_internal_listener  # type: ignore[method-assign]
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET["tls-causes:ssl"]
    try:
        tb.up(1, base, security_mode="ssl")
        yield tb, not_after
    finally:
        tb.down(purge=True)


def diagnose(bootstrap: str, props: Path) -> tuple[int, str]:
    out = kafka_health("diagnose", "-b", bootstrap, "--command-config", str(props))
    return out.returncode, out.stdout + out.stderr


def assert_cause(output: str, bootstrap: str, cause: TlsCause, key: str) -> str:
    """The CLI's one error line: the cause's message, the key to fix, no librdkafka-only key."""
    prefix = f"error: cannot read {bootstrap}: "
    line = next((ln for ln in output.splitlines() if ln.startswith(prefix)), None)
    assert line is not None, output
    message = line[len(prefix) :]
    assert message.startswith(f"TLS handshake failed: {cause}"), message
    assert security_errors.tls_cause(message) is cause
    assert REASON[cause] in ProblemReason  # a documented, distinct condition reason
    assert key in message, message
    assert not any(name in output for name in LIBRDKAFKA_ONLY), output
    return message


def test_untrusted_chain_names_the_truststore(mtls: Testbed, tmp_path: Path) -> None:
    bootstrap = mtls.require().bootstrap_servers
    props = properties_with(
        mtls, tmp_path, "other-ca.properties", ssl__truststore__location=str(other_ca(tmp_path))
    )
    code, output = diagnose(bootstrap, props)
    assert code == 3, output
    message = assert_cause(
        output, bootstrap, TlsCause.UNTRUSTED, "set ssl.truststore.location in --command-config"
    )
    assert "certificate verify failed: self-signed certificate in certificate chain" in message


def test_hostname_mismatch_names_the_certificates_names(mtls: Testbed, tmp_path: Path) -> None:
    """The testbed's certificates name 127.0.0.1 only: `localhost` is not among them."""
    port = mtls.require().brokers[0].port
    bootstrap = f"localhost:{port}"
    code, output = diagnose(bootstrap, mtls.client_properties() or Path())
    assert code == 3, output
    message = assert_cause(output, bootstrap, TlsCause.HOSTNAME, "ssl.endpoint.identification.algorithm=")
    assert "does not name the host localhost" in message
    assert "the certificate carries IP:127.0.0.1 (its subject alternative names)" in message
    off = properties_with(mtls, tmp_path, "no-verify.properties", ssl__endpoint__identification__algorithm="")
    code, output = diagnose(bootstrap, off)
    assert code in (0, 1), output  # the fix it names works


def test_expired_broker_certificate_names_the_keystore(expired: tuple[Testbed, str]) -> None:
    tb, not_after = expired
    bootstrap = tb.require().bootstrap_servers
    code, output = diagnose(bootstrap, tb.client_properties() or Path())
    assert code == 3, output
    message = assert_cause(output, bootstrap, TlsCause.EXPIRED, "ssl.keystore.location")
    assert "certificate verify failed: certificate has expired" in message
    assert f"notAfter: {not_after}" in message


def test_client_certificate_the_broker_refused_names_the_keystore(mtls: Testbed, tmp_path: Path) -> None:
    """A client certificate for CN=admin, signed by a CA the broker does not trust."""
    rogue_ca = security.make_ca("not the testbed's CA")
    leaf = security.issue(rogue_ca, security.ADMIN, server=False)
    keystore = tmp_path / "rogue.pem"
    keystore.write_bytes(leaf.key + leaf.cert)
    props = properties_with(mtls, tmp_path, "rogue.properties", ssl__keystore__location=str(keystore))
    bootstrap = mtls.require().bootstrap_servers
    code, output = diagnose(bootstrap, props)
    assert code == 3, output
    message = assert_cause(
        output, bootstrap, TlsCause.CLIENT_REFUSED, "ssl.keystore.location in --command-config"
    )
    assert "alert" in message  # the broker's TLS alert, as received
