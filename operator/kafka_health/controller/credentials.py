"""`spec.cluster` → a `ConnectionConfig`, reading credentials from Secrets.

Secret values go only into the returned config (whose repr redacts them) and into 0600 files
in a private directory (TLS material: both Kafka clients want file paths). Errors name the
Secret and key, never a value.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from kafka_health.collect.connection import ConnectionConfig
from kafka_health.models.policy import ClusterSpec, SecretKeyRef, SecurityProtocol
from kafka_health.models.reasons import ProblemReason

ReadSecret = Callable[[str, str, str], str]
"""(namespace, name, key) → value; raises K8sError (status 404) when missing."""


class CredentialsError(RuntimeError):
    """A referenced Secret or key is missing or unreadable; `reason` is the condition reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _read(read_secret: ReadSecret, namespace: str, ref: SecretKeyRef, field: str) -> str:
    try:
        return read_secret(namespace, ref.name, ref.key)
    except Exception as exc:
        status = getattr(exc, "status", None)
        reason = ProblemReason.SECRET_NOT_FOUND if status == 404 else ProblemReason.SECRET_UNREADABLE
        raise CredentialsError(
            reason,
            f"{field}: cannot read key {ref.key!r} of Secret {namespace}/{ref.name} ({status or exc.__class__.__name__})",
        ) from None


def _write_private(workdir: Path, name: str, content: str) -> str:
    workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = workdir / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(content)
    return str(path)


def connection_for(
    cluster: ClusterSpec, namespace: str, read_secret: ReadSecret, workdir: Path
) -> ConnectionConfig:
    """The connection settings of a policy's cluster (raises CredentialsError for a bad reference)."""
    security = cluster.security
    conf: dict[str, str] = {
        "bootstrap.servers": ",".join(str(s) for s in cluster.bootstrap_servers),
        "security.protocol": security.protocol.value,
    }
    if security.sasl is not None:
        sasl = security.sasl
        conf["sasl.mechanism"] = sasl.mechanism.value
        conf["sasl.username"] = _read(
            read_secret, namespace, sasl.username, "spec.cluster.security.sasl.username"
        )
        conf["sasl.password"] = _read(
            read_secret, namespace, sasl.password, "spec.cluster.security.sasl.password"
        )
    if security.tls is not None and security.protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
        tls = security.tls
        # One directory per policy; file names carry a hash so a rotated Secret gets new files.
        for field, ref, option in (
            ("ca", tls.ca, "ssl.ca.location"),
            ("certificate", tls.certificate, "ssl.certificate.location"),
            ("key", tls.key, "ssl.key.location"),
        ):
            if ref is None:
                continue
            value = _read(read_secret, namespace, ref, f"spec.cluster.security.tls.{field}")
            digest = hashlib.sha256(value.encode()).hexdigest()[:12]
            conf[option] = _write_private(workdir, f"{field}-{digest}.pem", value)
        # librdkafka verifies the broker's host name by default; verifyHostname=false turns it off.
        conf["ssl.endpoint.identification.algorithm"] = "https" if tls.verify_hostname else "none"
    return ConnectionConfig.from_dict(conf)
