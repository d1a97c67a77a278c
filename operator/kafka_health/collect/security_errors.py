"""Why a secured cluster refused us: authentication, authorization, TLS, or the wrong protocol.

Pure functions, no client library imported. Two sources:
- connection errors: librdkafka's error callback (`error_cb`) reports each failed connection
  with an error code: `_AUTHENTICATION` (SASL: wrong password, unknown user, unsupported
  mechanism; and a SASL handshake the listener does not expect), `_SSL` (TLS handshake: the
  broker certificate failed verification, or the broker refused the client certificate),
  `_TRANSPORT` (among others a TLS client on a PLAINTEXT listener, which librdkafka recognises,
  and the broker's TLS alert refusing a missing or untrusted client certificate under mTLS).
  The code decides the kind; the text only refines it, and is kept, secrets redacted and
  librdkafka's own hints dropped (they name librdkafka's settings, such as `ssl.ca.location`,
  which a Kafka client.properties does not have), as the detail.
- per-call errors: Kafka's `*_AUTHORIZATION_FAILED` codes (`TOPIC_AUTHORIZATION_FAILED`,
  kafka-python's `ClusterAuthorizationFailedError`, …) on a part of a snapshot, turned into
  the operation and resource the principal lacks.

TLS causes. librdkafka reports an untrusted chain, a host name the certificate does not name and
an expired certificate with one text (`certificate verify failed: broker certificate could not
be verified, …`): it leaves out OpenSSL's verify result. So the caller passes `check_peer`
(collect/tls_probe.py: a TLS handshake of our own with that broker, with the same CA and host
name check), whose OpenSSL verify code tells the four causes apart (`TlsCause`), each with its
own message naming the Kafka-style key to fix; the names the certificate carries are read for a
host name mismatch. Without a conclusive check the message names both the CA and the host name.

Each classified message starts with a fixed phrase (`kind_of` reads it back; `tls_cause` reads
the TLS cause after it), names the setting to fix in both places it can live (the policy's
Secret / spec field, and the `--command-config` key), and never contains a secret: the callers
redact the detail.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    AUTHENTICATION = "authentication failed"
    AUTHORIZATION = "authorization denied"
    TLS = "TLS handshake failed"
    PROTOCOL = "security protocol mismatch"


class TlsCause(StrEnum):
    """Why a TLS handshake failed, as the message says it right after `Kind.TLS`'s phrase."""

    UNTRUSTED = "the broker certificate is not signed by a CA the client trusts"
    HOSTNAME = "the broker certificate does not name the host"
    EXPIRED = "the broker certificate (or its CA) has expired or is not yet valid"
    CLIENT_REFUSED = "the broker refused the client certificate"


@dataclass(frozen=True)
class Classified:
    kind: Kind
    message: str  # starts with the kind's phrase; includes the fix
    cause: TlsCause | None = None


@dataclass(frozen=True)
class PeerCheck:
    """What a TLS handshake of our own with a broker found (collect/tls_probe.py): OpenSSL's
    verify result (`verify_code` 0: verified) and the names the certificate carries (its subject
    alternative names, as `DNS:host` / `IP:address`), read when it could be."""

    address: str  # host:port
    verify_code: int
    verify_message: str
    names: tuple[str, ...] = ()
    not_after: str | None = None


CheckPeer = Callable[[str, int], "PeerCheck | None"]
"""(host, port) → the broker's certificate checked by us, or None when that could not be done."""

# OpenSSL's X509_V_ERR_* codes, by cause (include/openssl/x509_vfy.h).
_UNTRUSTED_CODES = frozenset({2, 4, 6, 7, 18, 19, 20, 21, 24, 27, 28})
_EXPIRED_CODES = frozenset({9, 10})
_HOSTNAME_CODES = frozenset({62, 64})


_AUTH_FIX = (
    "check the user name and password: the policy's Secret keys named by "
    "spec.cluster.security.sasl.username/password, or sasl.jaas.config in --command-config; "
    "and that the user exists on the cluster for sasl.mechanism"
)
_MECH_FIX = (
    "set the mechanism the listener enables: spec.cluster.security.sasl.mechanism, or sasl.mechanism "
    "in --command-config"
)
_TLS_CA_FIX = (
    "the broker's certificate is not signed by the CA given, or does not name the host in the "
    "bootstrap servers: check the CA (the Secret key named by spec.cluster.security.tls.ca, or "
    "ssl.truststore.location in --command-config) and that each bootstrap host is in the broker "
    "certificate's subject alternative names (or turn host name verification off: "
    "spec.cluster.security.tls.verifyHostname=false, ssl.endpoint.identification.algorithm=)"
)
_TLS_UNTRUSTED_FIX = (
    "set ssl.truststore.location in --command-config (the operator: the Secret key named by "
    "spec.cluster.security.tls.ca) to the CA that signed the brokers' certificates"
)
_TLS_HOSTNAME_FIX = (
    "put a name the certificate carries in the bootstrap servers, or reissue the broker "
    "certificate with {host} among its subject alternative names, or turn host name verification "
    "off: ssl.endpoint.identification.algorithm= (empty) in --command-config (the operator: "
    "spec.cluster.security.tls.verifyHostname: false)"
)
_TLS_EXPIRED_FIX = (
    "renew the broker's certificate (the file the broker's listener reads from its "
    "ssl.keystore.location); if the CA expired, renew it on the brokers and give the new CA in "
    "ssl.truststore.location in --command-config (the operator: spec.cluster.security.tls.ca)"
)
_TLS_CLIENT_FIX = (
    "check spec.cluster.security.tls.certificate/key (or ssl.keystore.location in --command-config): "
    "a client certificate signed by a CA in the broker's ssl.truststore.location, not expired"
)
# librdkafka's hints after its error text: they name librdkafka's settings (ssl.ca.location,
# ssl.key.location, ssl.certificate.location), which a Kafka client.properties does not have.
_LIBRDKAFKA_HINTS = re.compile(
    r":\s*(?:broker certificate could not be verified|client SSL authentication might be required)[^;]*?"
    r"(?=;|$| \(after \d+ms)",
    re.IGNORECASE,
)
# Any librdkafka-only TLS key left in a text the user reads, as the Kafka client.properties key.
_KAFKA_KEY = {
    "ssl.ca.location": "ssl.truststore.location",
    "ssl.ca.pem": "ssl.truststore.certificates",
    "ssl.certificate.location": "ssl.keystore.location",
    "ssl.key.location": "ssl.keystore.location",
    "ssl.certificate.pem": "ssl.keystore.certificate.chain",
    "ssl.key.pem": "ssl.keystore.key",
}
_LIBRDKAFKA_KEY = re.compile("|".join(re.escape(k) for k in _KAFKA_KEY))
_PROTOCOL_FIX = (
    "set the security protocol of the listener the bootstrap servers point at: "
    "spec.cluster.security.protocol, or security.protocol in --command-config"
)


def kafka_key_names(text: str) -> str:
    """`text` with librdkafka's hints dropped and any librdkafka-only TLS key named as Kafka's
    client.properties names it (for every client error text a user reads)."""
    text = _LIBRDKAFKA_HINTS.sub("", text)
    return _LIBRDKAFKA_KEY.sub(lambda m: _KAFKA_KEY[m.group(0)], text)


def _tidy(text: str) -> str:
    """librdkafka's text without the timing suffix and its hints naming librdkafka's settings."""
    text = re.sub(r"\s*\(after \d+ms in state [A-Z_]+(?:, \d+ identical error\(s\) suppressed)?\)", "", text)
    return kafka_key_names(text).strip()


def classify_connection_errors(
    errors: Iterable[tuple[str, str]], check_peer: CheckPeer | None = None
) -> Classified | None:
    """The most telling connection error among `(code name, text)` pairs from librdkafka's
    error callback (e.g. `("_AUTHENTICATION", "sasl_ssl://h:9093/bootstrap: SASL authentication
    error: ...")`), or None when none of them is a security failure. `check_peer` tells the
    causes of a failed certificate verification apart (see the module's doc); it is called at
    most once, for the first such error."""
    best: Classified | None = None
    rank = {Kind.PROTOCOL: 0, Kind.AUTHENTICATION: 1, Kind.TLS: 2}
    checked: dict[str, PeerCheck | None] = {}
    for code, text in errors:
        found = _one(code, text)
        if found is not None and found.kind is Kind.TLS and found.cause is None and check_peer is not None:
            found = _verify_failure(text, found, check_peer, checked)
        if found is not None and (best is None or rank[found.kind] < rank[best.kind]):
            best = found
    return best


def _address(text: str) -> tuple[str, int] | None:
    """The broker of a librdkafka error text (`ssl://host:port/id: …`; `[v6]:port` too)."""
    m = re.match(r"\s*[a-z_]+://(\[[^\]]+\]|[^:/\s]+):(\d+)/", text)
    return (m.group(1).strip("[]"), int(m.group(2))) if m else None


def _verify_failure(
    text: str, found: Classified, check_peer: CheckPeer, checked: dict[str, PeerCheck | None]
) -> Classified:
    """A failed certificate verification told apart by our own check of the broker's certificate."""
    where = _address(text)
    if where is None or "certificate verify failed" not in text.lower():
        return found
    if "peer" not in checked:
        checked["peer"] = check_peer(*where)
    return tls_verify_failed(where[0], checked["peer"]) or found


def tls_verify_failed(host: str, check: PeerCheck | None) -> Classified | None:
    """The message of a failed verification of the broker certificate of `host`, from our own
    check of it, or None when that check says nothing conclusive (it passed, or could not run)."""
    if check is None or check.verify_code == 0:
        return None
    code, seen = check.verify_code, f"{check.address}: certificate verify failed: {check.verify_message}"
    if code in _HOSTNAME_CODES:
        names = ", ".join(check.names) if check.names else "names that could not be read"
        return Classified(
            Kind.TLS,
            f"{Kind.TLS}: {TlsCause.HOSTNAME} {host} ({seen}); the certificate carries {names} (its "
            f"subject alternative names): {_TLS_HOSTNAME_FIX.format(host=host)}",
            TlsCause.HOSTNAME,
        )
    if code in _EXPIRED_CODES:
        until = f"; the broker certificate's notAfter: {check.not_after}" if check.not_after else ""
        return Classified(
            Kind.TLS, f"{Kind.TLS}: {TlsCause.EXPIRED} ({seen}{until}); {_TLS_EXPIRED_FIX}", TlsCause.EXPIRED
        )
    if code in _UNTRUSTED_CODES:
        return Classified(
            Kind.TLS, f"{Kind.TLS}: {TlsCause.UNTRUSTED} ({seen}); {_TLS_UNTRUSTED_FIX}", TlsCause.UNTRUSTED
        )
    return Classified(Kind.TLS, f"{Kind.TLS}: {seen}; {_TLS_CA_FIX}")


def _client_refused(detail: str) -> Classified:
    return Classified(
        Kind.TLS,
        f"{Kind.TLS}: {TlsCause.CLIENT_REFUSED} ({detail}); {_TLS_CLIENT_FIX}",
        TlsCause.CLIENT_REFUSED,
    )


def _one(code: str, text: str) -> Classified | None:
    detail = _tidy(text)
    lower = detail.lower()
    if code == "_AUTHENTICATION":
        if "mechanism handshake failed" in lower and (
            "not valid in current sasl state" in lower or re.search(r"supported mechanisms:\s*$", lower)
        ):
            # The listener speaks no SASL: a SASL client on a PLAINTEXT or SSL listener.
            return Classified(
                Kind.PROTOCOL,
                f"{Kind.PROTOCOL}: the listener does not speak SASL ({detail}); {_PROTOCOL_FIX}",
            )
        if "unsupported sasl mechanism" in lower:
            return Classified(Kind.AUTHENTICATION, f"{Kind.AUTHENTICATION}: {detail}; {_MECH_FIX}")
        return Classified(Kind.AUTHENTICATION, f"{Kind.AUTHENTICATION}: {detail}; {_AUTH_FIX}")
    if code == "_SSL":
        if "wrong version number" in lower or "packet length too long" in lower or "http request" in lower:
            return Classified(
                Kind.PROTOCOL,
                f"{Kind.PROTOCOL}: the listener does not speak TLS ({detail}); {_PROTOCOL_FIX}",
            )
        if any(s in lower for s in ("certificate required", "unknown ca", "bad certificate", "alert")):
            return _client_refused(detail)
        return Classified(Kind.TLS, f"{Kind.TLS}: {detail}; {_TLS_CA_FIX}")
    if code == "_TRANSPORT" and "ssl routines" in lower and "alert" in lower:
        # The broker's TLS alert after the handshake (TLS 1.3): it refused our client certificate
        # ("alert bad certificate", "certificate required") or its CA ("unknown ca").
        return _client_refused(detail)
    if code == "_TRANSPORT" and (
        "connecting to a plaintext broker listener" in lower
        or "incorrect security.protocol configuration" in lower
    ):
        return Classified(
            Kind.PROTOCOL,
            f"{Kind.PROTOCOL}: TLS to a listener that does not speak it ({detail}); {_PROTOCOL_FIX}",
        )
    return None


# ------------------------------------------------------------------------------------ authorization
# Snapshot part → (operation, resource type) the principal needs, as kafka-acls names them.
_PART_ACL = {
    "broker_registrations": ("DESCRIBE", "CLUSTER"),
    "quorum": ("DESCRIBE", "CLUSTER"),
    "log_dirs": ("DESCRIBE", "CLUSTER"),
    "configs": ("DESCRIBE_CONFIGS", "TOPIC"),
    "offsets": ("DESCRIBE", "TOPIC"),
    "partitions": ("DESCRIBE", "TOPIC"),
    "groups": ("DESCRIBE", "GROUP"),
    "group": ("DESCRIBE", "GROUP"),
    "group_offsets": ("DESCRIBE", "GROUP"),
    "elect_leaders": ("ALTER", "CLUSTER"),
    "alter_consumer_group_offsets": ("READ", "GROUP"),
    "alter_share_group_offsets": ("READ", "GROUP"),
    "transactions": ("READ", "TOPIC"),
    "abort_transaction": ("ALTER", "CLUSTER"),
    "alter_partition_reassignments": ("ALTER", "CLUSTER"),
    "broker_throttles": ("DESCRIBE_CONFIGS", "CLUSTER"),
}
# Error code (librdkafka name or kafka-python class) → the resource type it is about.
_AUTHZ_CODES = {
    "TOPIC_AUTHORIZATION_FAILED": "TOPIC",
    "TopicAuthorizationFailedError": "TOPIC",
    "GROUP_AUTHORIZATION_FAILED": "GROUP",
    "GroupAuthorizationFailedError": "GROUP",
    "CLUSTER_AUTHORIZATION_FAILED": "CLUSTER",
    "ClusterAuthorizationFailedError": "CLUSTER",
}
_ERROR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_KAFKA_ACLS_FLAG = {"CLUSTER": "--cluster", "TOPIC": "--topic", "GROUP": "--group"}
# A call that needs another operation on a second resource type (OffsetCommit: READ on the topic too).
_SECOND_ACL = {
    ("alter_consumer_group_offsets", "TOPIC"): "READ",
    ("alter_share_group_offsets", "TOPIC"): "READ",
}


def authorization_denied(part: str, reason: str, resource: str | None = None) -> str | None:
    """A snapshot part's error as "authorization denied: needs OPERATION on RESOURCE …", or None
    when `reason` is no authorization failure. `part` is the snapshot's part name
    (`quorum`, `configs:<topic>`, `group:<id>`, …) or an admin call name (`elect_leaders`,
    `alter_consumer_group_offsets:<group>`); `resource` names the resource when the error is
    about another one than the part's (the topic of a group's offset commit)."""
    codes = error_codes(reason)
    resource_type = next((rt for code, rt in _AUTHZ_CODES.items() if code in codes), None)
    if resource_type is None:
        return None
    kind, _, name = part.partition(":")
    operation, expected = _PART_ACL.get(kind, ("DESCRIBE", resource_type))
    if expected != resource_type:  # the error code says which resource refused
        operation = _SECOND_ACL.get((kind, resource_type), "DESCRIBE")
        name = resource or name
    resource = "kafka-cluster" if resource_type == "CLUSTER" else (name or "*")
    flag = _KAFKA_ACLS_FLAG[resource_type]
    target = flag if resource_type == "CLUSTER" else f"{flag} {resource}"
    return (
        f"{Kind.AUTHORIZATION}: the principal lacks {operation} on {resource_type} {resource} "
        f"(grant it: kafka-acls --add --allow-principal User:<name> --operation "
        f"{operation.title().replace('_', '')} {target}; see the ACL table in docs/policy.md)"
    )


def error_codes(reason: str) -> frozenset[str]:
    """The words of `reason` that can be Kafka error codes, to match codes as whole names.

    A reason crosses the client process as text (`admin_api.describe_error`: librdkafka's code
    name, such as `TOPIC_AUTHORIZATION_FAILED`, or kafka-python's error class, such as
    `ClusterAuthorizationFailedError`, then the message). A code is matched as one whole word of
    it, never as part of a word or of the message's wording."""
    return frozenset(_ERROR_NAME.findall(reason))


def is_authorization_failure(reason: str) -> bool:
    """`reason` carries a Kafka authorization error code: any `*_AUTHORIZATION_FAILED`
    (librdkafka's names) or `*AuthorizationFailedError` (kafka-python's classes)."""
    return any(
        code.endswith(("_AUTHORIZATION_FAILED", "AuthorizationFailedError")) for code in error_codes(reason)
    )


def kind_of(message: str) -> Kind | None:
    """The kind of a message this module produced (by its leading phrase)."""
    for kind in Kind:
        if message.startswith(f"{kind}:"):
            return kind
    return None


def tls_cause(message: str) -> TlsCause | None:
    """The TLS cause of a message this module produced (by the phrase after `Kind.TLS`'s)."""
    for cause in TlsCause:
        if message.startswith(f"{Kind.TLS}: {cause}"):
            return cause
    return None
