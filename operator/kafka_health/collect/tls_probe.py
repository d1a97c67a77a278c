"""Check a broker's certificate ourselves, to say why librdkafka could not verify it.

librdkafka reports an untrusted chain, a host name the certificate does not name and an expired
certificate with one text (it leaves out OpenSSL's verify result). A TLS handshake of our own
with the same broker, the same CA and the same host name check (Python's `ssl`, OpenSSL too)
gets that verify result (`SSLCertVerificationError.verify_code`), and, when the chain is
trusted, the names the certificate carries (a second handshake without the host name check).
collect/security_errors.py turns the result into the message; this module only does the I/O.

No client certificate is sent: the broker's certificate is verified before the broker asks for
one, and nothing here reaches Kafka's protocol. The probe runs only after a handshake failed,
once per failed metadata read, with the client's request timeout.

`served_certificates` reads, every collect on a TLS connection, the chain each broker serves
(whose end of validity the certificate checks judge). It sends the client certificate when the
connection has one (a broker asking for it under TLS 1.2 would end the handshake otherwise), and
takes the chain unverified when verification fails, so an expired or untrusted certificate is
still read and said.
"""

from __future__ import annotations

import _ssl
import hashlib
import socket
import ssl
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka_health.collect.connection import ConnectionConfig
from kafka_health.collect.results import Partial
from kafka_health.collect.security_errors import CheckPeer, PeerCheck
from kafka_health.models.snapshot import ListenerCertificate


def checker(connection: ConnectionConfig, timeout_s: float) -> CheckPeer:
    """`check_peer` for `connection`: its CA (`ssl.ca.location`, else the system's CAs) and its
    host name verification (on unless `ssl.endpoint.identification.algorithm` is `none`)."""
    ca_file = connection.options.get("ssl.ca.location")
    verify_hostname = _verifies_hostname(connection)

    def check(host: str, port: int) -> PeerCheck | None:
        return check_peer(host, port, ca_file=ca_file, verify_hostname=verify_hostname, timeout_s=timeout_s)

    return check


def _context(ca_file: str | None, verify_hostname: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.check_hostname = verify_hostname
    return ctx


def _handshake(host: str, port: int, ctx: ssl.SSLContext, timeout_s: float) -> tuple[dict[str, Any], bytes]:
    """The peer certificate (decoded when verified, else {}) and its DER form."""
    with (
        socket.create_connection((host, port), timeout=timeout_s) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        return dict(tls.getpeercert() or {}), tls.getpeercert(binary_form=True) or b""


def check_peer(
    host: str, port: int, *, ca_file: str | None, verify_hostname: bool, timeout_s: float
) -> PeerCheck | None:
    """The broker certificate at host:port verified as the client verifies it, or None when no
    handshake could be made (the broker is unreachable, the CA file is unreadable)."""
    address = f"{host}:{port}"
    try:
        cert, _ = _handshake(host, port, _context(ca_file, verify_hostname), timeout_s)
        return PeerCheck(address, 0, "ok", _names(cert), cert.get("notAfter"))
    except ssl.SSLCertVerificationError as exc:
        code, message = int(exc.verify_code or -1), str(exc.verify_message or exc.reason)
    except (OSError, ValueError):
        return None
    names, not_after = _unverified(host, port, ca_file, timeout_s)
    return PeerCheck(address, code, message, names, not_after)


def _unverified(
    host: str, port: int, ca_file: str | None, timeout_s: float
) -> tuple[tuple[str, ...], str | None]:
    """Names and end of validity of the broker certificate whose verification failed: from a
    handshake with the CA but no host name check (a host name mismatch), else from the
    certificate taken unverified (decoded with the `cryptography` package)."""
    try:
        cert, _ = _handshake(host, port, _context(ca_file, False), timeout_s)
        return _names(cert), cert.get("notAfter")
    except (OSError, ValueError):
        pass
    ctx = _context(ca_file, False)
    ctx.verify_mode = ssl.CERT_NONE
    try:
        _, der = _handshake(host, port, ctx, timeout_s)
    except (OSError, ValueError):
        return (), None
    return _decode(der)


def _names(cert: dict[str, Any]) -> tuple[str, ...]:
    """`DNS:name` / `IP:address` from Python's decoded certificate's subjectAltName."""
    kinds = {"DNS": "DNS", "IP Address": "IP"}
    return tuple(f"{kinds.get(k, k)}:{v}" for k, v in cert.get("subjectAltName", ()))


def _decode(der: bytes) -> tuple[tuple[str, ...], str | None]:
    from cryptography import x509

    try:
        cert = x509.load_der_x509_certificate(der)
        not_after = cert.not_valid_after_utc.strftime("%Y-%m-%d %H:%M:%S UTC")
        try:
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            return (), not_after
    except ValueError:
        return (), None
    names = [f"DNS:{n}" for n in sans.get_values_for_type(x509.DNSName)]
    names += [f"IP:{a}" for a in sans.get_values_for_type(x509.IPAddress)]
    return tuple(names), not_after


# ------------------------------------------------------------------------ the chains brokers serve
def served_certificates(
    connection: ConnectionConfig, addresses: Mapping[int, tuple[str, int]], timeout_s: float
) -> Partial[int, ListenerCertificate]:
    """Per broker id, the chain it serves at its (host, port); a broker no handshake could be
    made with is in `errors` with the reason (the brokers are read side by side)."""
    out: Partial[int, ListenerCertificate] = Partial()
    if not addresses:
        return out
    with ThreadPoolExecutor(max_workers=min(8, len(addresses)), thread_name_prefix="tls-chain") as pool:
        futures = {
            b: pool.submit(_served, b, host, port, connection, timeout_s)
            for b, (host, port) in addresses.items()
        }
        for broker, future in sorted(futures.items()):
            host, port = addresses[broker]
            try:
                out.values[broker] = future.result()
            except (OSError, ValueError) as exc:
                out.errors[broker] = f"TLS handshake with {host}:{port} failed: {exc}"
    return out


def _client_context(connection: ConnectionConfig, *, verify: bool) -> ssl.SSLContext:
    """The client's TLS settings: its CA and host name check (`verify`), its certificate if any."""
    options = connection.options
    ctx = _context(options.get("ssl.ca.location"), verify and _verifies_hostname(connection))
    if not verify:
        ctx.verify_mode = ssl.CERT_NONE
    if options.get("ssl.certificate.location"):
        ctx.load_cert_chain(
            options["ssl.certificate.location"],
            options.get("ssl.key.location") or None,
            options.get("ssl.key.password") or None,
        )
    return ctx


def _verifies_hostname(connection: ConnectionConfig) -> bool:
    return connection.options.get("ssl.endpoint.identification.algorithm", "https") != "none"


def _served(
    broker: int, host: str, port: int, connection: ConnectionConfig, timeout_s: float
) -> ListenerCertificate:
    """One broker's chain: verified as the client verifies it, else read unverified."""
    verified, error = True, None
    try:
        chain = _chain(host, port, _client_context(connection, verify=True), timeout_s)
    except ssl.SSLCertVerificationError as exc:
        verified, error = False, str(exc.verify_message or exc.reason)
        chain = _chain(host, port, _client_context(connection, verify=False), timeout_s)
    if not chain:
        raise ValueError("the broker served no certificate")
    return describe_chain(broker, f"{host}:{port}", chain, verified=verified, verify_error=error)


def _chain(host: str, port: int, ctx: ssl.SSLContext, timeout_s: float) -> list[bytes]:
    with (
        socket.create_connection((host, port), timeout=timeout_s) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        return served_chain(tls)


def served_chain(tls: ssl.SSLSocket) -> list[bytes]:
    """DER of each certificate the peer served, its own first. Python 3.13 has the public
    `SSLSocket.get_unverified_chain`; 3.10 to 3.12 have the same method on the C object the
    socket wraps (`_sslobj`), not yet exposed (tests/unit/test_tls_chain.py fails if it goes).
    Without either, the peer's own certificate only."""
    getter = getattr(tls, "get_unverified_chain", None) or getattr(
        getattr(tls, "_sslobj", None), "get_unverified_chain", None
    )
    if getter is None:
        leaf = tls.getpeercert(binary_form=True)
        return [leaf] if leaf else []
    return [c if isinstance(c, bytes) else c.public_bytes(_ssl.ENCODING_DER) for c in getter() or []]


def describe_chain(
    broker: int, address: str, chain: list[bytes], *, verified: bool, verify_error: str | None
) -> ListenerCertificate:
    """The served chain (DER, the broker's certificate first) as the snapshot keeps it."""
    from cryptography import x509

    certs = [x509.load_der_x509_certificate(der) for der in chain]
    leaf = certs[0]
    first = min(certs, key=lambda c: c.not_valid_after_utc)
    return ListenerCertificate(
        broker=broker,
        address=address,
        subject=leaf.subject.rfc4514_string(),
        issuer=leaf.issuer.rfc4514_string(),
        fingerprint_sha256=hashlib.sha256(chain[0]).hexdigest(),
        leaf_not_after=leaf.not_valid_after_utc,
        not_after=first.not_valid_after_utc,
        expiring=first.subject.rfc4514_string(),
        chain_length=len(certs),
        verified=verified,
        verify_error=verify_error,
    )
