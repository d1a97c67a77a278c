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
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

from kafka_health.collect.connection import ConnectionConfig
from kafka_health.collect.security_errors import CheckPeer, PeerCheck


def checker(connection: ConnectionConfig, timeout_s: float) -> CheckPeer:
    """`check_peer` for `connection`: its CA (`ssl.ca.location`, else the system's CAs) and its
    host name verification (on unless `ssl.endpoint.identification.algorithm` is `none`)."""
    ca_file = connection.options.get("ssl.ca.location")
    verify_hostname = connection.options.get("ssl.endpoint.identification.algorithm", "https") != "none"

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
    certificate taken unverified (decoded only when the `cryptography` package is installed)."""
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
    try:
        from cryptography import x509
    except ImportError:
        return (), None
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
