"""The served certificate chain read by a real TLS handshake (OpenSSL through Python's `ssl`) with
a local server, no Kafka: what `collect/tls_probe.served_certificates` makes of a trusted chain,
an untrusted one, an expired intermediate, and a server that is not there.

The Python API the chain comes from on 3.10-3.12 is not public (`SSLSocket._sslobj`'s
`get_unverified_chain`); the first test fails when a Python release takes it away, instead of
the product quietly falling back to the server's own certificate only.
"""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_health.collect.connection import ConnectionConfig
from kafka_health.collect.tls_probe import served_certificates
from kafka_health.testbed import security


class TlsServer:
    """Accepts TLS connections on 127.0.0.1, serving `chain_file` (key + certificates)."""

    def __init__(self, chain_file: Path) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(chain_file)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass

    def close(self) -> None:
        self.sock.close()


def _write(path: Path, *parts: bytes) -> Path:
    path.write_bytes(b"".join(parts))
    return path


@pytest.fixture
def ca(tmp_path: Path) -> security.Pem:
    return security.make_ca("test root")


def _server(tmp_path: Path, name: str, *parts: bytes) -> Iterator[TlsServer]:
    server = TlsServer(_write(tmp_path / f"{name}.pem", *parts))
    try:
        yield server
    finally:
        server.close()


def _connection(ca_file: Path) -> ConnectionConfig:
    return ConnectionConfig.from_dict(
        {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL", "ssl.ca.location": str(ca_file)}
    )


def test_the_private_chain_api_is_still_there() -> None:
    """Python 3.13 made it public; before, the chain comes from the C object (3.10+)."""
    if sys.version_info >= (3, 13):
        assert hasattr(ssl.SSLSocket, "get_unverified_chain")
    else:
        import _ssl

        socket_type = getattr(_ssl, "_SSLSocket")  # noqa: B009 - not in typeshed: private
        assert hasattr(socket_type, "get_unverified_chain"), "Python took the chain API away"


def test_a_trusted_chain_is_read_whole_with_its_earliest_end(tmp_path: Path, ca: security.Pem) -> None:
    leaf = security.issue(ca, "broker-0", server=True, ip_addresses=("127.0.0.1",), days=20)
    for server in _server(tmp_path, "b0", leaf.key, leaf.cert, ca.cert):
        got = served_certificates(
            _connection(_write(tmp_path / "ca.pem", ca.cert)), {0: ("127.0.0.1", server.port)}, 5
        )
        assert got.errors == {}
        cert = got.values[0]
        assert cert.verified and cert.verify_error is None
        assert cert.chain_length == 2 and cert.subject == "CN=broker-0" and cert.issuer == "CN=test root"
        left = cert.not_after - dt.datetime.now(dt.UTC)
        assert dt.timedelta(days=19.9) < left < dt.timedelta(days=20.1)
        assert cert.not_after == cert.leaf_not_after and cert.expiring == "CN=broker-0"
        assert cert.address == f"127.0.0.1:{server.port}" and len(cert.fingerprint_sha256) == 64


def test_an_untrusted_chain_is_still_read_and_says_why(tmp_path: Path, ca: security.Pem) -> None:
    leaf = security.issue(ca, "broker-1", server=True, ip_addresses=("127.0.0.1",))
    other = security.make_ca("someone else")
    for server in _server(tmp_path, "b1", leaf.key, leaf.cert, ca.cert):
        got = served_certificates(
            _connection(_write(tmp_path / "other.pem", other.cert)), {1: ("127.0.0.1", server.port)}, 5
        )
        cert = got.values[1]
        assert not cert.verified and cert.verify_error is not None and "certificate" in cert.verify_error
        assert cert.issuer == "CN=test root"


def test_the_chain_ends_with_its_shortest_lived_certificate(tmp_path: Path) -> None:
    """A CA that ends before the broker's own certificate is what takes the listener down."""
    root = security.make_ca("short root", days=5)
    leaf = security.issue(root, "broker-2", server=True, ip_addresses=("127.0.0.1",), days=300)
    for server in _server(tmp_path, "b2", leaf.key, leaf.cert, root.cert):
        got = served_certificates(
            _connection(_write(tmp_path / "root.pem", root.cert)), {2: ("127.0.0.1", server.port)}, 5
        )
        cert = got.values[2]
        assert cert.expiring == "CN=short root" and cert.not_after < cert.leaf_not_after
        assert dt.timedelta(days=4.9) < cert.not_after - dt.datetime.now(dt.UTC) < dt.timedelta(days=5.1)


def test_a_broker_that_does_not_answer_is_an_error_not_a_value(tmp_path: Path, ca: security.Pem) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    got = served_certificates(_connection(_write(tmp_path / "ca.pem", ca.cert)), {3: ("127.0.0.1", port)}, 2)
    assert got.values == {} and got.errors[3].startswith(f"TLS handshake with 127.0.0.1:{port} failed")
