"""Why a secured cluster refused us: authentication, authorization, TLS, or the wrong protocol.

Pure functions, no client library imported. Two sources:
- connection errors: librdkafka's error callback (`error_cb`) reports each failed connection
  with an error code: `_AUTHENTICATION` (SASL: wrong password, unknown user, unsupported
  mechanism; and a SASL handshake the listener does not expect), `_SSL` (TLS handshake: unknown
  CA, host name mismatch, a client certificate the broker refused), `_TRANSPORT` (among others
  a TLS client on a PLAINTEXT listener, which librdkafka recognises, and the broker's TLS alert
  refusing a missing or untrusted client certificate under mTLS). The code decides the
  kind; the text only refines it (which of the SASL or TLS cases it is), and is kept, secrets
  redacted, as the detail. A CA that did not sign the broker certificate and a host name the
  certificate does not name cannot be told apart: librdkafka reports both as `certificate verify
  failed: broker certificate could not be verified, verify that ssl.ca.location …` (it leaves out
  OpenSSL's verify result), so that message names both fixes (`_TLS_CA_FIX`).
- per-call errors: Kafka's `*_AUTHORIZATION_FAILED` codes (`TOPIC_AUTHORIZATION_FAILED`,
  kafka-python's `ClusterAuthorizationFailedError`, …) on a part of a snapshot, turned into
  the operation and resource the principal lacks.

Each classified message starts with a fixed phrase (`kind_of` reads it back), names the
setting to fix in both places it can live (the policy's Secret / spec field, and the
`--command-config` key), and never contains a secret: the callers redact the detail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    AUTHENTICATION = "authentication failed"
    AUTHORIZATION = "authorization denied"
    TLS = "TLS handshake failed"
    PROTOCOL = "security protocol mismatch"


@dataclass(frozen=True)
class Classified:
    kind: Kind
    message: str  # starts with the kind's phrase; includes the fix


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
_TLS_CLIENT_FIX = (
    "the broker refused the client certificate: check spec.cluster.security.tls.certificate/key "
    "(or ssl.keystore.location in --command-config) and that the broker trusts its CA"
)
_PROTOCOL_FIX = (
    "set the security protocol of the listener the bootstrap servers point at: "
    "spec.cluster.security.protocol, or security.protocol in --command-config"
)


def _tidy(text: str) -> str:
    """librdkafka's text without the timing suffix and the `proto://host:port/id: ` prefix kept once."""
    text = re.sub(r"\s*\(after \d+ms in state [A-Z_]+(?:, \d+ identical error\(s\) suppressed)?\)", "", text)
    return text.strip()


def classify_connection_errors(errors: Iterable[tuple[str, str]]) -> Classified | None:
    """The most telling connection error among `(code name, text)` pairs from librdkafka's
    error callback (e.g. `("_AUTHENTICATION", "sasl_ssl://h:9093/bootstrap: SASL authentication
    error: ...")`), or None when none of them is a security failure."""
    best: Classified | None = None
    rank = {Kind.PROTOCOL: 0, Kind.AUTHENTICATION: 1, Kind.TLS: 2}
    for code, text in errors:
        found = _one(code, text)
        if found is not None and (best is None or rank[found.kind] < rank[best.kind]):
            best = found
    return best


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
            return Classified(Kind.TLS, f"{Kind.TLS}: {detail}; {_TLS_CLIENT_FIX}")
        return Classified(Kind.TLS, f"{Kind.TLS}: {detail}; {_TLS_CA_FIX}")
    if code == "_TRANSPORT" and "ssl routines" in lower and "alert" in lower:
        # The broker's TLS alert after the handshake (TLS 1.3): it refused our client certificate
        # ("alert bad certificate", "certificate required") or its CA ("unknown ca").
        return Classified(Kind.TLS, f"{Kind.TLS}: {detail}; {_TLS_CLIENT_FIX}")
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
_KAFKA_ACLS_FLAG = {"CLUSTER": "--cluster", "TOPIC": "--topic", "GROUP": "--group"}
# A call that needs another operation on a second resource type (OffsetCommit: READ on the topic too).
_SECOND_ACL = {("alter_consumer_group_offsets", "TOPIC"): "READ"}


def authorization_denied(part: str, reason: str, resource: str | None = None) -> str | None:
    """A snapshot part's error as "authorization denied: needs OPERATION on RESOURCE …", or None
    when `reason` is no authorization failure. `part` is the snapshot's part name
    (`quorum`, `configs:<topic>`, `group:<id>`, …) or an admin call name (`elect_leaders`,
    `alter_consumer_group_offsets:<group>`); `resource` names the resource when the error is
    about another one than the part's (the topic of a group's offset commit)."""
    resource_type = next((rt for code, rt in _AUTHZ_CODES.items() if code in reason), None)
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


def kind_of(message: str) -> Kind | None:
    """The kind of a message this module produced (by its leading phrase)."""
    for kind in Kind:
        if message.startswith(f"{kind}:"):
            return kind
    return None
