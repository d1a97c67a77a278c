"""How to reach one Kafka cluster, in librdkafka's option names, mapped to both clients.

The operator reads bootstrap servers and security settings from the policy (secrets from
Kubernetes Secrets) and hands them over as one dict with librdkafka's names. confluent-kafka
takes them as they are; kafka-python (what confluent-kafka lacks: log dirs, the quorum, ELR) gets the
same settings under its own names, so the two clients can never disagree on how to connect.
Secret values never appear in `repr`, logs or exception messages (see `redact`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# GSSAPI and OAUTHBEARER need per-client callbacks/tickets that these two clients configure differently.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# librdkafka name → kafka-python keyword argument.
_KAFKA_PYTHON_NAMES = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",  # https → True, none → False
}
SECRET_KEYS = frozenset({"sasl.password", "ssl.key.password"})
REDACTED = "***"


class ConnectionConfigError(ValueError):
    """The connection settings are unusable; the message names keys, never secret values."""


@dataclass(frozen=True)
class ConnectionConfig:
    """Bootstrap servers plus optional TLS/SASL settings (librdkafka names)."""

    bootstrap_servers: str
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, conf: Mapping[str, Any]) -> ConnectionConfig:
        unknown = sorted(set(conf) - set(_KAFKA_PYTHON_NAMES))
        if unknown:
            known = ", ".join(sorted(_KAFKA_PYTHON_NAMES))
            raise ConnectionConfigError(f"unsupported connection settings {unknown}; supported: {known}")
        servers = str(conf.get("bootstrap.servers") or "").strip()
        if not servers:
            raise ConnectionConfigError("bootstrap.servers is required")
        options = {k: str(v) for k, v in conf.items() if k != "bootstrap.servers" and v is not None}
        if "security.protocol" in options:
            options["security.protocol"] = options["security.protocol"].upper()
            if options["security.protocol"] not in PROTOCOLS:
                raise ConnectionConfigError(f"security.protocol must be one of {', '.join(PROTOCOLS)}")
        if "ssl.endpoint.identification.algorithm" in options:
            algorithm = options["ssl.endpoint.identification.algorithm"].lower() or "none"
            if algorithm not in ("https", "none"):
                raise ConnectionConfigError("ssl.endpoint.identification.algorithm must be https or none")
            options["ssl.endpoint.identification.algorithm"] = algorithm
        if "sasl.mechanism" in options:
            options["sasl.mechanism"] = options["sasl.mechanism"].upper()
            if options["sasl.mechanism"] not in SASL_MECHANISMS:
                raise ConnectionConfigError(f"sasl.mechanism must be one of {', '.join(SASL_MECHANISMS)}")
        return cls(bootstrap_servers=servers, options=options)

    def __repr__(self) -> str:
        shown = {k: (REDACTED if k in SECRET_KEYS else v) for k, v in self.options.items()}
        return f"ConnectionConfig(bootstrap_servers={self.bootstrap_servers!r}, options={shown!r})"

    @property
    def secrets(self) -> list[str]:
        """The secret values, for scrubbing text that leaves this package."""
        return [v for k, v in self.options.items() if k in SECRET_KEYS and v]

    @property
    def uses_tls(self) -> bool:
        """The client speaks TLS to the brokers (security.protocol SSL or SASL_SSL)."""
        return self.options.get("security.protocol", "PLAINTEXT").endswith("SSL")

    def confluent(self) -> dict[str, str]:
        """Options for confluent-kafka (librdkafka) clients."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.options}

    def kafka_python(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python clients."""
        kwargs: dict[str, Any] = {"bootstrap_servers": self.bootstrap_servers.split(",")}
        for key, value in self.options.items():
            if key == "ssl.endpoint.identification.algorithm":
                kwargs[_KAFKA_PYTHON_NAMES[key]] = value == "https"
                continue
            kwargs[_KAFKA_PYTHON_NAMES[key]] = value
        return kwargs


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value replaced (exception text can echo what a client was given)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text
