"""spec.cluster: the Kafka cluster, its security (Secrets by reference) and how brokers map to pods."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from kafka_health.models.policy.base import SpecModel, section
from kafka_health.models.policy.constants import INT32_MAX
from kafka_health.models.policy.durations import RequestTimeout
from kafka_health.models.policy.rules import CelRule, FieldCel, rule_error, spec_error
from kafka_health.models.policy.text import (
    LABEL_KEY_CHECK,
    LABEL_VALUE_CHECK,
    HostPort,
    LabelKey,
    LabelValue,
    NamespaceName,
    ObjectName,
    SecretKey,
)


class SecretKeyRef(SpecModel):
    """A key of a Secret in the policy's namespace. Secrets are only ever referenced, never inlined."""

    name: ObjectName = Field(description="Name of the Secret (in the policy's namespace).")
    key: SecretKey = Field(description="Key within the Secret's data.")


class SecurityProtocol(StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


class SaslMechanism(StrEnum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


class Sasl(SpecModel):
    """SASL credentials, read from Secrets when connecting."""

    mechanism: SaslMechanism = Field(SaslMechanism.SCRAM_SHA_512, description="SASL mechanism.")
    username: SecretKeyRef = Field(description="Secret key holding the SASL username.")
    password: SecretKeyRef = Field(description="Secret key holding the SASL password.")


class Tls(SpecModel):
    """TLS settings; certificates and keys are PEM, read from Secrets."""

    cel_rules = (
        CelRule(
            "has(self.certificate) == has(self.key)",
            "set both certificate and key for client TLS authentication, or neither",
            ".certificate",
        ),
    )

    ca: SecretKeyRef | None = Field(
        None,
        description="Secret key holding the CA bundle (PEM) that signed the brokers' certificates. "
        "Absent: the system trust store.",
    )
    certificate: SecretKeyRef | None = Field(
        None, description="Secret key holding the client certificate (PEM), for mutual TLS."
    )
    key: SecretKeyRef | None = Field(
        None, description="Secret key holding the client private key (PEM), for mutual TLS."
    )
    verify_hostname: bool = Field(
        True,
        description="Check that the broker certificate matches the host name (ssl.endpoint.identification.algorithm).",
    )

    @model_validator(mode="after")
    def _cert_and_key(self) -> Tls:
        if (self.certificate is None) != (self.key is None):
            raise rule_error(self.cel_rules[0])
        return self


_SASL_PROTOCOLS = (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
_TLS_PROTOCOLS = (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


class Security(SpecModel):
    """How to authenticate to and encrypt traffic with the brokers."""

    cel_rules = (
        CelRule(
            "(has(self.protocol) && self.protocol in ['SASL_PLAINTEXT', 'SASL_SSL']) == has(self.sasl)",
            "sasl is required when protocol is SASL_PLAINTEXT or SASL_SSL, and only then",
            ".sasl",
        ),
        CelRule(
            "!has(self.tls) || (has(self.protocol) && self.protocol in ['SSL', 'SASL_SSL'])",
            "tls settings need protocol SSL or SASL_SSL",
            ".tls",
        ),
    )

    protocol: SecurityProtocol = Field(SecurityProtocol.PLAINTEXT, description="Kafka security.protocol.")
    sasl: Sasl | None = Field(None, description="SASL credentials; required for the SASL_* protocols.")
    tls: Tls | None = Field(None, description="TLS settings for the SSL and SASL_SSL protocols.")

    @model_validator(mode="after")
    def _consistent(self) -> Security:
        if (self.protocol in _SASL_PROTOCOLS) != (self.sasl is not None):
            raise rule_error(self.cel_rules[0])
        if self.tls is not None and self.protocol not in _TLS_PROTOCOLS:
            raise rule_error(self.cel_rules[1])
        return self


class BrokerIdSource(StrEnum):
    ORDINAL = "Ordinal"
    LABEL = "Label"


class BrokerIdMapping(SpecModel):
    """How a pod's Kafka broker id is found."""

    cel_rules = (
        CelRule(
            "!has(self.source) || self.source != 'Label' || has(self.label)",
            "label is required when source is Label",
            ".label",
        ),
    )

    source: BrokerIdSource = Field(
        BrokerIdSource.ORDINAL,
        description="Ordinal: broker id = the number that ends the pod name + ordinalOffset (a "
        "StatefulSet's ordinal, kafka-3; the node id of a Strimzi pod, <cluster>-<pool>-<id>). "
        "Label: broker id = the value of the pod label named by `label`.",
    )
    ordinal_offset: int = Field(
        0,
        ge=0,
        le=INT32_MAX,
        description="Added to the number that ends the pod name to get the broker id (source Ordinal).",
    )
    label: LabelKey | None = Field(None, description="Pod label whose value is the broker id (source Label).")

    @model_validator(mode="after")
    def _label(self) -> BrokerIdMapping:
        if self.source is BrokerIdSource.LABEL and self.label is None:
            raise rule_error(self.cel_rules[0])
        return self


_LABEL_KEY_PATTERN = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_LABEL_KEYS_RULE = CelRule(
    f"self.all(k, size(k) <= 316 && k.matches(r'{_LABEL_KEY_PATTERN}'))",
    "every key must be a label key, e.g. 'app.kubernetes.io/instance' or 'broker-id'",
)


class PodSelector(SpecModel):
    """Pods whose labels include all of matchLabels."""

    match_labels: Annotated[dict[str, LabelValue], FieldCel(_LABEL_KEYS_RULE)] = Field(
        description="Label key/value pairs every broker pod carries.",
        min_length=1,
        max_length=64,
    )

    @field_validator("match_labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            LABEL_KEY_CHECK.validate_python(key)
            LABEL_VALUE_CHECK.validate_python(label)
        return value


class BrokerPods(SpecModel):
    """Where the broker pods are, for rolling restarts: a StatefulSet or a pod label selector."""

    cel_rules = (
        CelRule(
            "has(self.statefulSet) != has(self.podSelector)",
            "set exactly one of statefulSet or podSelector",
            ".statefulSet",
        ),
    )

    namespace: NamespaceName | None = Field(
        None, description="Namespace of the broker pods. Absent: the policy's namespace."
    )
    stateful_set: ObjectName | None = Field(None, description="Name of the brokers' StatefulSet.")
    pod_selector: PodSelector | None = Field(None, description="Label selector matching the broker pods.")
    broker_id: BrokerIdMapping = section(BrokerIdMapping, "How each pod's broker id is found.")

    @model_validator(mode="after")
    def _one_source(self) -> BrokerPods:
        if (self.stateful_set is None) == (self.pod_selector is None):
            raise rule_error(self.cel_rules[0])
        return self


class ClusterSpec(SpecModel):
    """The Kafka cluster this policy watches."""

    bootstrap_servers: list[HostPort] = Field(
        description="Bootstrap servers, one host:port per item.",
        min_length=1,
        max_length=64,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    security: Security = section(Security, "TLS and SASL settings (credentials from Secrets).")
    broker_pods: BrokerPods | None = Field(
        None, description="How brokers map to pods. Required for rolling restarts; not needed to diagnose."
    )
    controller_pods: BrokerPods | None = Field(
        None,
        description="How dedicated KRaft controllers (controller-only nodes) map to pods, the same way as "
        "brokerPods (their own StatefulSet or pod selector; node ids by ordinal + offset or label). Set: a "
        "rolling restart without a broker list restarts them too, first, one at a time, each only while the "
        "other caught-up voters keep a majority, the active controller last of them. Absent: controllers are "
        "never restarted (a request naming one is refused).",
    )
    request_timeout: RequestTimeout = Field(
        "15s", description="Upper bound of every Kafka admin call made for this cluster (1s to 5m)."
    )

    @field_validator("bootstrap_servers")
    @classmethod
    def _unique_servers(cls, value: list[str]) -> list[str]:
        for index, server in enumerate(value):
            if server in value[:index]:
                raise spec_error(f"{server!r} is listed twice: list each server once", f"[{index}]")
        return value
