"""`KafkaHealthPolicy` (`kafkahealth.io/v1alpha1`): the spec users write and the status we report.

These models are the single source of truth: `kafka_health.resources.crd` generates the CRD's
schema from them, and the CLI and the operator validate with them. Every cross-field rule is
declared twice, on purpose: as a CEL rule (`cel_rules`, so the API server rejects bad specs
before they are stored) and as a pydantic validator with the same message (so `kafka-health`
rejects them without a server). Field names are camelCase on the wire (Kubernetes style),
snake_case in Python.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from croniter import CroniterBadDateError, croniter
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError, core_schema

from kafka_health.models.reasons import RollWaitReason, WithheldReason

GROUP = "kafkahealth.io"
VERSION = "v1alpha1"
KIND = "KafkaHealthPolicy"
PLURAL = "kafkahealthpolicies"
SINGULAR = "kafkahealthpolicy"
SHORT_NAME = "khp"
API_VERSION = f"{GROUP}/{VERSION}"

# Annotations that kubectl users set instead of editing the spec.
ANNOTATION_APPROVE_PLAN = f"{GROUP}/approve-plan"
"""Value: the planId of status.pendingPlan. Approves exactly that plan."""
ANNOTATION_RESET_CIRCUIT_BREAKER = f"{GROUP}/reset-circuit-breaker"
"""Any new value closes an open circuit breaker (e.g. the current date and time)."""
ANNOTATION_ROLLING_RESTART = f"{GROUP}/rolling-restart"
"""Value: a request id. Requests a rolling restart of all brokers, once per id."""
ANNOTATION_ELECT_LEADERS = f"{GROUP}/elect-leaders"
"""Value: a request id. Requests a preferred leader election now, once per id."""

MAX_HISTORY = 50
"""status.history keeps at most this many actions (the newest)."""
MAX_TOP_FINDINGS = 50
MAX_REQUESTS = 100
MAX_WITHHELD = 50
MAX_PLAN_ENTRIES = 1000

INT16_MAX = 2**15 - 1
"""Kafka's replication factor is an int16."""
INT32_MAX = 2**31 - 1
"""Kafka's broker (node) ids and partition numbers are int32."""
INT64_MAX = 2**63 - 1
"""Offsets, lags and counts: a Kubernetes integer is an int64, and so is Spark's LongType."""
DURATION_MAX = "87600h"
"""The longest duration any field takes (10 years): far below the ~292 years where Go's and CEL's
durations overflow, and `now - byDuration` stays after 1970 (Kafka reads a negative timestamp
as LATEST or EARLIEST)."""


# --------------------------------------------------------------------------------------------
# Rule plumbing: one declaration gives the CEL rule (CRD) and the pydantic check.


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry. `field_path` (e.g. ".sasl") names the field in the error."""

    rule: str
    message: str
    field_path: str | None = None

    def as_schema(self) -> dict[str, str]:
        out = {"rule": self.rule, "message": self.message}
        if self.field_path:
            out["fieldPath"] = self.field_path
        return out


def _cel_schema_extra(schema: dict[str, Any], cls: type) -> None:
    rules: tuple[CelRule, ...] = getattr(cls, "cel_rules", ())
    if rules:
        schema["x-kubernetes-validations"] = [r.as_schema() for r in rules]


def spec_error(message: str, field_path: str | None = None) -> PydanticCustomError:
    """A validation error whose text is shown verbatim; `field_path` is appended to its location."""
    return PydanticCustomError("khp", message, {"field_path": field_path} if field_path else None)


def _fail(rule: CelRule) -> PydanticCustomError:
    return spec_error(rule.message, rule.field_path)


@dataclass(frozen=True)
class FieldCel:
    """A CEL rule on one field's own value (`self` is the value); the pydantic check is separate."""

    rule: CelRule
    max_length: int | None = None
    """For a string: its maxLength (the API server needs it to bound the rule's cost)."""

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out.setdefault("x-kubernetes-validations", []).append(self.rule.as_schema())
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        return out


@dataclass(frozen=True)
class Text:
    """A string with a pattern and a max length, checked with a message that says how to fix it."""

    pattern: str
    hint: str
    max_length: int = 253
    min_length: int = 1

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        compiled = re.compile(self.pattern)

        def check(value: str) -> str:
            if not (self.min_length <= len(value) <= self.max_length) or not compiled.fullmatch(value):
                raise spec_error(f"{value!r} is not valid: {self.hint}")
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out.update(pattern=self.pattern, maxLength=self.max_length, minLength=self.min_length)
        return out


# --------------------------------------------------------------------------------------------
# Durations: Go-style strings ("30s", "5m", "1h30m"), the format CEL's duration() parses.

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
DURATION_HINT = 'use a number and a unit, e.g. "30s", "5m", "1h30m" (units: ms, s, m, h)'


def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration ("1h30m", "500ms"); ValueError with the accepted format otherwise."""
    if not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration: {DURATION_HINT}")
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"{text!r} is too long: at most {DURATION_MAX}") from None


def format_duration(value: timedelta) -> str:
    """The inverse of parse_duration for whole seconds (used in messages)."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{seconds}s" if seconds else ""]
    return "".join(parts) or "0s"


@dataclass(frozen=True)
class DurationRule:
    """Format and bounds of a duration field, as a pydantic check and as CEL on the CRD."""

    minimum: str | None = None
    exclusive_minimum: bool = False
    maximum: str | None = DURATION_MAX
    whole_days: bool = False

    def _rules(self) -> list[tuple[CelRule, Callable[[timedelta], bool]]]:
        # A malformed string is reported by `pattern`; the guard keeps CEL from adding a
        # second, cryptic "type conversion error" for it.
        guard = f"!self.matches(r'{DURATION_PATTERN}') || "
        rules: list[tuple[CelRule, Callable[[timedelta], bool]]] = []
        if self.minimum is not None:
            low = parse_duration(self.minimum)
            if self.exclusive_minimum:
                rule = CelRule(
                    f"{guard}duration(self) > duration('{self.minimum}')", f"must be more than {self.minimum}"
                )
                rules.append((rule, lambda d: d > low))
            else:
                rule = CelRule(
                    f"{guard}duration(self) >= duration('{self.minimum}')", f"must be at least {self.minimum}"
                )
                rules.append((rule, lambda d: d >= low))
        if self.maximum is not None:
            high = parse_duration(self.maximum)
            rule = CelRule(
                f"{guard}duration(self) <= duration('{self.maximum}')", f"must be at most {self.maximum}"
            )
            rules.append((rule, lambda d: d <= high))
        if self.whole_days:
            rule = CelRule(
                f"{guard}duration(self).getMilliseconds() % 86400000 == 0",
                "must be a whole number of days (24h, 48h, ...): history is kept by UTC date",
            )
            rules.append((rule, lambda d: d.total_seconds() % 86400 == 0))
        return rules

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        rules = self._rules()

        def check(value: str) -> str:
            try:
                parsed = parse_duration(value)
            except ValueError as exc:
                raise spec_error(str(exc)) from None
            for rule, ok in rules:
                if not ok(parsed):
                    raise spec_error(f"{rule.message} (got {value!r})")
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out.update(pattern=DURATION_PATTERN, maxLength=32)
        rules = [r.as_schema() for r, _ in self._rules()]
        if rules:
            out["x-kubernetes-validations"] = rules
        return out


Duration = Annotated[str, DurationRule()]
PositiveDuration = Annotated[str, DurationRule(minimum="0s", exclusive_minimum=True)]
RequestTimeout = Annotated[str, DurationRule(minimum="1s", maximum="5m")]
"""librdkafka takes socket.timeout.ms in 10..300000 only (a larger value fails every cycle)."""
RetentionDuration = Annotated[str, DurationRule(minimum="24h", whole_days=True)]
IntervalDuration = Annotated[str, DurationRule(minimum="10s")]
WindowDuration = Annotated[str, DurationRule(minimum="0s", exclusive_minimum=True, maximum="24h")]

RequestId = Annotated[
    str,
    Text(
        r"^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$",
        "lower-case letters, digits, '-', '.', '_', starting and ending with a letter or digit, "
        "at most 63 characters (e.g. 2024-06-01-kernel-upgrade)",
        max_length=63,
    ),
]
ObjectName = Annotated[
    str,
    Text(
        r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        "a Kubernetes object name: lower-case letters, digits, '-' and '.'",
    ),
]
SecretKey = Annotated[str, Text(r"^[-._a-zA-Z0-9]+$", "a Secret data key: letters, digits, '-', '_', '.'")]
LabelKey = Annotated[
    str,
    Text(
        r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        "a label key, e.g. 'app.kubernetes.io/instance' or 'broker-id'",
        max_length=316,
    ),
]
LabelValue = Annotated[
    str,
    Text(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$", "a label value (at most 63 characters)", 63, 0),
]
_LABEL_KEY: TypeAdapter[str] = TypeAdapter(LabelKey)
_LABEL_VALUE: TypeAdapter[str] = TypeAdapter(LabelValue)
TopicName = Annotated[
    str,
    Text(
        r"^[a-zA-Z0-9._-]*[a-zA-Z0-9_-][a-zA-Z0-9._-]*$",
        "a Kafka topic name: letters, digits, '.', '_', '-', at most 249 characters, not only dots "
        "(Kafka refuses '.' and '..')",
        249,
    ),
]
NamespaceName = Annotated[
    str,
    Text(
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        "a namespace name: lower-case letters, digits and '-', at most 63 characters (no '.')",
        63,
    ),
]
BrokerId = Annotated[int, Field(ge=0, le=INT32_MAX)]
PORT_PATTERN = r"([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
"""1-65535 and nothing else: librdkafka takes a larger number modulo 65536 and dials that port."""
HostPort = Annotated[
    str,
    Text(
        r"^(\[[0-9a-fA-F:.]+\]|[^\s:,\[\]/]+):" + PORT_PATTERN + "$",
        "one host:port per list item, port 1-65535, e.g. 'kafka-0.kafka:9092' (not a comma-separated string)",
    ),
]
CRON_PATTERN = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$"
CronExpression = Annotated[
    str,
    Text(
        CRON_PATTERN,
        "a 5-field cron expression 'minute hour day-of-month month day-of-week' "
        "(e.g. '0 2 * * *' for 02:00 daily) or @daily/@weekly/...",
        max_length=128,
    ),
]
TimeZoneName = Annotated[
    str,
    Text(
        r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$",
        "an IANA time zone name, e.g. 'Europe/Berlin' or 'UTC'",
        64,
    ),
]


# --------------------------------------------------------------------------------------------
# Bases


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        json_schema_extra=_cel_schema_extra,
    )
    cel_rules: ClassVar[tuple[CelRule, ...]] = ()


class _StatusModel(_Model):
    """Status is written by the operator: tolerate fields a newer or older operator wrote."""

    model_config = ConfigDict(extra="ignore")


def section(model: type[BaseModel], description: str) -> Any:
    """A nested object that is always present: defaults to {} on the API server, model() here."""
    return Field(default_factory=model, description=description, json_schema_extra={"default": {}})


# --------------------------------------------------------------------------------------------
# spec.cluster


class SecretKeyRef(_Model):
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


class Sasl(_Model):
    """SASL credentials, read from Secrets when connecting."""

    mechanism: SaslMechanism = Field(SaslMechanism.SCRAM_SHA_512, description="SASL mechanism.")
    username: SecretKeyRef = Field(description="Secret key holding the SASL username.")
    password: SecretKeyRef = Field(description="Secret key holding the SASL password.")


class Tls(_Model):
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
            raise _fail(self.cel_rules[0])
        return self


_SASL_PROTOCOLS = (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
_TLS_PROTOCOLS = (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)


class Security(_Model):
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
            raise _fail(self.cel_rules[0])
        if self.tls is not None and self.protocol not in _TLS_PROTOCOLS:
            raise _fail(self.cel_rules[1])
        return self


class BrokerIdSource(StrEnum):
    ORDINAL = "Ordinal"
    LABEL = "Label"


class BrokerIdMapping(_Model):
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
            raise _fail(self.cel_rules[0])
        return self


_LABEL_KEY_PATTERN = r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_LABEL_KEYS_RULE = CelRule(
    f"self.all(k, size(k) <= 316 && k.matches(r'{_LABEL_KEY_PATTERN}'))",
    "every key must be a label key, e.g. 'app.kubernetes.io/instance' or 'broker-id'",
)


class PodSelector(_Model):
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
            _LABEL_KEY.validate_python(key)
            _LABEL_VALUE.validate_python(label)
        return value


class BrokerPods(_Model):
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
            raise _fail(self.cel_rules[0])
        return self


class ClusterSpec(_Model):
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


# --------------------------------------------------------------------------------------------
# spec.diagnostics


class Check(_Model):
    """A check that has no thresholds."""

    enabled: bool = Field(True, description="Run this check.")


class LeaderImbalanceCheck(Check):
    """Partitions not led by their preferred replica, per broker, and leader-count skew."""

    threshold_percent: int = Field(
        10,
        ge=0,
        le=100,
        description="Warn when a broker is preferred leader of more than this % of partitions it does not lead.",
    )
    skew_percent: int = Field(
        50,
        ge=0,
        le=1000,
        description="Warn when leader counts across live brokers spread (most minus fewest leaders) by "
        "more than this % of the mean leaders per broker; a spread of 2 is always tolerated.",
    )


class WindowedCheck(Check):
    """A check over the samples of a sliding window of history."""

    window: PositiveDuration = Field("15m", description="How much history the check looks at.")


class LeaderFlappingCheck(WindowedCheck):
    """Leadership changes per partition and ISR churn per broker over the window."""

    max_leader_changes: int = Field(
        3,
        ge=1,
        le=INT32_MAX,
        description="Warn when a partition changes leader this many times or more in the window.",
    )
    max_isr_changes: int = Field(
        10,
        ge=1,
        le=INT32_MAX,
        description="Warn when a broker drops out of partitions' ISRs at this many separate samples or more "
        "in the window.",
    )


class ConsumerLagCheck(WindowedCheck):
    """Consumer lag per group and partition, with a Burrow-style status over the window."""

    cel_rules = (
        CelRule(
            "!has(self.warningLag) || !has(self.criticalLag) || self.warningLag < self.criticalLag",
            "warningLag must be below criticalLag",
            ".warningLag",
        ),
    )

    warning_lag: int = Field(
        10_000,
        ge=0,
        le=INT64_MAX,
        description="Until the history holds 3 samples of a group partition (a new policy), a lag of this many "
        "messages makes a warning; with more samples, the Burrow-style status over them decides "
        "(docs/diagnostics.md).",
    )
    critical_lag: int = Field(
        1_000_000,
        ge=1,
        le=INT64_MAX,
        description="A lag of this many messages or more makes a critical finding (status CRITICAL_LAG), "
        "whatever its trend, unless the partition is already STALL, STOP or REWIND.",
    )

    @model_validator(mode="after")
    def _order(self) -> ConsumerLagCheck:
        if self.warning_lag >= self.critical_lag:
            raise _fail(self.cel_rules[0])
        return self


class RebalanceStormCheck(WindowedCheck):
    """A group seen rebalancing in many samples of the window."""

    min_percent: int = Field(
        30,
        ge=1,
        le=100,
        description="Warn when the group is seen rebalancing in at least this % of the window's samples "
        "(and in at least 3 of them).",
    )


class DiskUsageCheck(Check):
    """Disk usage per broker and time to full."""

    cel_rules = (
        CelRule(
            "!has(self.warningPercent) || !has(self.criticalPercent) || self.warningPercent < self.criticalPercent",
            "warningPercent must be below criticalPercent",
            ".warningPercent",
        ),
    )

    warning_percent: int = Field(80, ge=1, le=100, description="Used % of a log dir that makes a warning.")
    critical_percent: int = Field(
        90, ge=1, le=100, description="Used % of a log dir that makes a critical finding."
    )
    time_to_full_warning: PositiveDuration = Field(
        "24h", description="Warn when a log dir will be full within this time at its growth rate."
    )

    @model_validator(mode="after")
    def _order(self) -> DiskUsageCheck:
        if self.warning_percent >= self.critical_percent:
            raise _fail(self.cel_rules[0])
        return self


class DurabilityCheck(Check):
    """Topic settings that risk data loss."""

    min_replication_factor: int = Field(
        3, ge=1, le=INT16_MAX, description="Warn on topics with fewer replicas."
    )
    min_insync_replicas: int = Field(
        2, ge=1, le=INT16_MAX, description="Warn on topics whose min.insync.replicas is lower."
    )


class QuorumCheck(Check):
    """KRaft quorum: a leader exists and voters keep up; brokers missing from the cluster."""

    max_voter_lag: int = Field(
        1000, ge=0, le=INT64_MAX, description="Warn when a voter is more records behind the leader."
    )


class Checks(_Model):
    """Per-check toggles and thresholds."""

    offline_partitions: Check = section(Check, "Partitions without a leader.")
    under_replicated: Check = section(Check, "Partitions whose ISR is smaller than the replica set.")
    min_isr: Check = section(Check, "Partitions under or at min.insync.replicas.")
    leader_imbalance: LeaderImbalanceCheck = section(
        LeaderImbalanceCheck, "Leaders off their preferred replica."
    )
    leader_flapping: LeaderFlappingCheck = section(LeaderFlappingCheck, "Leader and ISR churn.")
    consumer_lag: ConsumerLagCheck = section(ConsumerLagCheck, "Consumer group lag.")
    rebalance_storm: RebalanceStormCheck = section(RebalanceStormCheck, "Groups that keep rebalancing.")
    disk_usage: DiskUsageCheck = section(DiskUsageCheck, "Log dir usage and time to full.")
    durability: DurabilityCheck = section(DurabilityCheck, "Replication factor, min ISR, unclean election.")
    quorum: QuorumCheck = section(QuorumCheck, "KRaft quorum health and missing brokers.")


_WINDOWED = ("leaderFlapping", "consumerLag", "rebalanceStorm")
_DEFAULT_WINDOW = "15m"


def _window_of(check: str) -> str:
    return (
        f"(has(self.checks.{check}) && has(self.checks.{check}.window) "
        f"? self.checks.{check}.window : '{_DEFAULT_WINDOW}')"
    )


_ONE_WINDOW = CelRule(
    f"!has(self.checks) || ({_window_of(_WINDOWED[0])} == {_window_of(_WINDOWED[1])} "
    f"&& {_window_of(_WINDOWED[1])} == {_window_of(_WINDOWED[2])})",
    "checks.leaderFlapping.window, checks.consumerLag.window and checks.rebalanceStorm.window are one "
    "history window: set all three to the same value (e.g. '15m')",
    ".checks",
)
_WINDOW_IN_RETENTION = CelRule(
    "!has(self.checks) || !has(self.checks.leaderFlapping) || !has(self.checks.leaderFlapping.window) "
    f"|| !self.checks.leaderFlapping.window.matches(r'{DURATION_PATTERN}') "
    "|| !has(self.historyRetention) || !self.historyRetention.matches(r'" + DURATION_PATTERN + "') "
    "|| duration(self.checks.leaderFlapping.window) <= duration(self.historyRetention)",
    "the checks' window must not be longer than historyRetention (history older than that is deleted)",
    ".checks",
)


class DiagnosticsSpec(_Model):
    """How often and how deeply the cluster is diagnosed."""

    cel_rules = (_ONE_WINDOW, _WINDOW_IN_RETENTION)

    interval: IntervalDuration = Field("60s", description="Time between diagnosis cycles (at least 10s).")
    history_retention: RetentionDuration = Field(
        "168h",
        description="How long snapshot history is kept, in whole days (e.g. 168h = 7 days): history is "
        "stored and deleted by UTC date.",
    )
    top_findings: int = Field(
        10, ge=0, le=MAX_TOP_FINDINGS, description="How many of the worst findings status.topFindings shows."
    )
    checks: Checks = section(Checks, "Per-check toggles and thresholds.")

    @model_validator(mode="after")
    def _windows(self) -> DiagnosticsSpec:
        c = self.checks
        windows = {c.leader_flapping.window, c.consumer_lag.window, c.rebalance_storm.window}
        if len(windows) != 1:
            raise _fail(_ONE_WINDOW)
        if parse_duration(c.leader_flapping.window) > parse_duration(self.history_retention):
            raise _fail(_WINDOW_IN_RETENTION)
        return self


# --------------------------------------------------------------------------------------------
# spec.remediation


class Mode(StrEnum):
    OBSERVE = "Observe"
    DRY_RUN = "DryRun"
    ENFORCE = "Enforce"


class ActionType(StrEnum):
    PREFERRED_LEADER_ELECTION = "PreferredLeaderElection"
    ROLLING_RESTART = "RollingRestart"
    OFFSET_RESET = "OffsetReset"


_RANDOM_CRON_FIELD = re.compile(r"(?<![A-Za-z])[RHrh](?![A-Za-z])")
"""croniter's 'R' (random) and 'H' (hashed) values; not inside names such as MAR or THU."""


class MaintenanceWindow(_Model):
    """A recurring window: opens at each time the cron schedule fires and stays open for `duration`."""

    name: RequestId | None = Field(None, description="A name for messages (e.g. 'nightly').")
    schedule: CronExpression = Field(
        description="When the window opens: 5-field cron 'minute hour day-of-month month day-of-week', "
        "evaluated in timeZone."
    )
    duration: WindowDuration = Field(
        description="How long the window stays open (more than 0s, at most 24h)."
    )
    time_zone: TimeZoneName = Field(
        "UTC", description="IANA time zone of the schedule, e.g. 'Europe/Berlin'. DST is handled."
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        if not croniter.is_valid(value) or (not value.startswith("@") and len(value.split()) != 5):
            raise spec_error(
                f"{value!r} is not a valid cron schedule: use 5 fields 'minute hour day-of-month month "
                "day-of-week' with values in range (e.g. '0 2 * * *', '30 1 * * SAT')"
            )
        if _RANDOM_CRON_FIELD.search(value):
            raise spec_error(
                f"{value!r} uses 'R' or 'H' (a random or hashed value, a croniter extension): the window "
                "would open at a different time at every evaluation; write the minute and hour, e.g. '17 2 * * *'"
            )
        try:
            # From a leap year's first day: a schedule that fires at all fires within 8 years.
            croniter(value, datetime(2000, 1, 1)).get_next(datetime)
        except CroniterBadDateError:
            raise spec_error(
                f"{value!r} never fires (a day that no month has, e.g. 30 February or 31 April): "
                "the window would never open"
            ) from None
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise spec_error(
                f"{value!r} is not an IANA time zone: use e.g. 'UTC', 'Europe/Berlin', 'America/New_York'"
            ) from None
        return value


class RateLimit(_Model):
    """At most maxActions of this type per `per`, and `cooldown` after each one ends."""

    max_actions: int = Field(1, ge=1, le=MAX_HISTORY, description="Actions of this type allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field(
        "0s", description="Minimum time between the end of one action of this type and the next."
    )


class ElectionRateLimit(RateLimit):
    """Rate limit of preferred leader elections."""

    max_actions: int = Field(6, ge=1, le=MAX_HISTORY, description="Elections allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("5m", description="Minimum time between the end of one election and the next.")


class RestartRateLimit(RateLimit):
    """Rate limit of rolling restarts."""

    max_actions: int = Field(2, ge=1, le=MAX_HISTORY, description="Rolling restarts allowed per `per`.")
    per: PositiveDuration = Field("24h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("30m", description="Minimum time between the end of one roll and the next.")


class OffsetResetRateLimit(RateLimit):
    """Rate limit of offset resets."""

    max_actions: int = Field(10, ge=1, le=MAX_HISTORY, description="Offset resets allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("0s", description="Minimum time between the end of one reset and the next.")


class RateLimits(_Model):
    """Rate limits and cooldowns per action type (counted from status.history)."""

    preferred_leader_election: ElectionRateLimit = section(ElectionRateLimit, "Preferred leader elections.")
    rolling_restart: RestartRateLimit = section(RestartRateLimit, "Rolling restarts.")
    offset_reset: OffsetResetRateLimit = section(OffsetResetRateLimit, "Offset resets.")

    def for_action(self, action: ActionType) -> RateLimit:
        return {
            ActionType.PREFERRED_LEADER_ELECTION: self.preferred_leader_election,
            ActionType.ROLLING_RESTART: self.rolling_restart,
            ActionType.OFFSET_RESET: self.offset_reset,
        }[action]


class CircuitBreaker(_Model):
    """Stops all automatic actions after consecutive failures, until the spec changes or
    the annotation kafkahealth.io/reset-circuit-breaker gets a new value."""

    max_failures: int = Field(
        3, ge=1, le=MAX_HISTORY, description="Consecutive failed actions that open the breaker."
    )


class PreferredLeaderElection(_Model):
    """Moves leadership back to preferred replicas when leaders are imbalanced."""

    enabled: bool = Field(True, description="Elect preferred leaders automatically when imbalanced.")
    imbalance_threshold: int = Field(
        10,
        ge=0,
        le=100,
        description="Act when, for some broker, more than this % of the partitions it is preferred leader of "
        "are led by another broker (Kafka's leader.imbalance.per.broker.percentage).",
    )
    batch_size: int = Field(50, ge=1, le=10_000, description="Partitions per ElectLeaders request.")
    require_maintenance_window: bool = Field(False, description="Elect only inside a maintenance window.")


class RestartTimeouts(_Model):
    """How long to wait after each broker restart before halting the roll."""

    pod_ready: PositiveDuration = Field("10m", description="For the new pod to become Ready.")
    broker_registered: PositiveDuration = Field(
        "5m", description="For the broker to register with the cluster again."
    )
    urp_zero: PositiveDuration = Field("15m", description="For under-replicated partitions to return to 0.")
    safe_to_restart: PositiveDuration = Field(
        "15m",
        description="Between brokers: for the next broker to become safe to restart (every restart safety "
        "rule passes and every broker pod is Ready), counted from when the roll started waiting. "
        "On timeout the roll halts (Degraded, RemediationHalted).",
    )


class RollingRestartRequest(_Model):
    """One rolling restart, done once per id (commit a new id to roll again)."""

    id: RequestId = Field(description="Unique id of this request; the result is reported under it.")
    brokers: list[BrokerId] | None = Field(
        None,
        description="Node ids to restart: brokers, and dedicated controllers when spec.cluster.controllerPods "
        "is set. Absent: all brokers (and all dedicated controllers with controllerPods).",
        min_length=1,
        max_length=1000,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    reason: str | None = Field(None, max_length=1024, description="Why (shown in status and Events).")

    @field_validator("brokers")
    @classmethod
    def _unique(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) != len(value):
            raise spec_error("list each broker id once")
        return value


def _unique_ids(items: Iterable[RollingRestartRequest | OffsetResetRequest]) -> None:
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item.id in seen:
            raise spec_error(
                f"duplicate id {item.id!r}: every request needs its own id (commit a new id to repeat an action)",
                f"[{index}]",
            )
        seen.add(item.id)


_REQUEST_LIST: dict[str, Any] = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"]}


class NeverSafePartitions(StrEnum):
    """What a roll does about partitions that can never roll safely (RF <= min.insync.replicas)."""

    REFUSE = "Refuse"
    """The roll does not start (nor restart a broker holding one); withheld as NeverSafePartitions."""
    PROCEED = "Proceed"
    """The roll goes ahead; status and the RollStarted Event name the partitions that will be
    unavailable to acks=all producers while their broker restarts."""


class RollingRestart(_Model):
    """Rolling broker restarts: one broker at a time, each gated by the restart safety rules."""

    require_maintenance_window: bool = Field(
        True, description="Restart only inside a maintenance window (none defined: never)."
    )
    timeouts: RestartTimeouts = section(RestartTimeouts, "Timeouts after each broker restart.")
    pause_between_brokers: Duration = Field(
        "30s", description="Wait after a broker is healthy before the next."
    )
    post_roll_preferred_election: bool = Field(
        True, description="After the last broker, elect preferred leaders for the restarted brokers."
    )
    never_safe_partitions: NeverSafePartitions = Field(
        NeverSafePartitions.REFUSE,
        description="Partitions whose replication factor is <= min.insync.replicas can never roll safely: "
        "while a broker holding one restarts, acks=all producers to it fail (RF 1: it is offline). "
        "Refuse (default): the roll does not start while a broker to restart holds one. "
        "Proceed: roll anyway; status and the RollStarted Event name them.",
    )
    requests: list[RollingRestartRequest] | None = Field(
        None, max_length=MAX_REQUESTS, description="Restart requests by id.", json_schema_extra=_REQUEST_LIST
    )

    @field_validator("requests")
    @classmethod
    def _ids(cls, value: list[RollingRestartRequest] | None) -> list[RollingRestartRequest] | None:
        _unique_ids(value or [])
        return value


class TopicPartitionRef(_Model):
    """One partition of a topic."""

    topic: TopicName = Field(description="Topic name.")
    partition: int = Field(ge=0, le=INT32_MAX, description="Partition number.")


STRATEGIES = ("earliest", "latest", "toDatetime", "byDuration", "shiftBy", "toOffset")
_STRATEGY_RULE = CelRule(
    " + ".join(
        f"({cond} ? 1 : 0)"
        for cond in (
            "has(self.earliest) && self.earliest",
            "has(self.latest) && self.latest",
            "has(self.toDatetime)",
            "has(self.byDuration)",
            "has(self.shiftBy)",
            "has(self.toOffset)",
        )
    )
    + " == 1",
    "set exactly one strategy: earliest: true, latest: true, toDatetime, byDuration, shiftBy or toOffset",
)
_TARGET_RULE = CelRule(
    "(has(self.topics) ? size(self.topics) : 0) + (has(self.partitions) ? size(self.partitions) : 0) > 0",
    "name what to reset: topics (all their partitions) and/or partitions",
)


_SHIFT_RULE = CelRule("self != 0", "shiftBy: 0 changes nothing: use a positive or negative number")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_millis_at_or_after(ts: datetime) -> int:
    """The Kafka timestamp (ms since 1970) of the first whole millisecond at or after `ts`.
    "The first offset at or after a time" finer than a millisecond must not start a millisecond
    early (truncating would); integer arithmetic, so no float rounding either."""
    return -((EPOCH - ts) // timedelta(milliseconds=1))


_EPOCH_RULE = CelRule(
    "timestamp(self) >= timestamp('1970-01-01T00:00:00Z')",
    "must be 1970-01-01T00:00:00Z or later (Kafka reads an earlier, negative timestamp as 'latest' or "
    "'earliest')",
)


class OffsetResetRequest(_Model):
    """One consumer-group offset reset, done once per id, only while the group is Empty."""

    cel_rules = (_STRATEGY_RULE, _TARGET_RULE)

    id: RequestId = Field(description="Unique id of this request; the result is reported under it.")
    group: str = Field(min_length=1, max_length=255, description="Consumer group id.")
    topics: list[TopicName] | None = Field(
        None,
        max_length=1000,
        description="Reset every partition of these topics.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    partitions: list[TopicPartitionRef] | None = Field(
        None,
        max_length=10_000,
        description="Reset these partitions.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["topic", "partition"],
        },
    )
    earliest: bool | None = Field(None, description="Strategy: to the log start offset (set true).")
    latest: bool | None = Field(None, description="Strategy: to the log end offset (set true).")
    to_datetime: Annotated[AwareDatetime, FieldCel(_EPOCH_RULE, max_length=64)] | None = Field(
        None,
        description="Strategy: to the first offset at or after this RFC 3339 time (e.g. 2024-06-01T00:00:00Z).",
    )
    by_duration: PositiveDuration | None = Field(
        None, description="Strategy: to the first offset at or after (now - byDuration), e.g. '2h'."
    )
    shift_by: Annotated[int, FieldCel(_SHIFT_RULE), Field(ge=-INT64_MAX, le=INT64_MAX)] | None = Field(
        None, description="Strategy: move the committed offset by this many (negative: back). Not 0."
    )
    to_offset: int | None = Field(None, ge=0, le=INT64_MAX, description="Strategy: to this offset.")
    empty_group_timeout: PositiveDuration = Field(
        "30m", description="How long to wait for the group to become Empty before reporting Blocked."
    )

    @field_validator("to_datetime")
    @classmethod
    def _after_epoch(cls, value: datetime | None) -> datetime | None:
        if value is not None and value < EPOCH:
            raise _fail(_EPOCH_RULE)
        return value

    @field_validator("shift_by")
    @classmethod
    def _shift(cls, value: int | None) -> int | None:
        if value == 0:
            raise _fail(_SHIFT_RULE)
        return value

    @field_validator("topics")
    @classmethod
    def _unique_topics(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise spec_error("list each topic once")
        return value

    @model_validator(mode="after")
    def _strategy_and_target(self) -> OffsetResetRequest:
        if len(self.strategies()) != 1:
            raise _fail(_STRATEGY_RULE)
        if not (self.topics or self.partitions):
            raise _fail(_TARGET_RULE)
        return self

    def strategies(self) -> list[str]:
        values = {
            "earliest": self.earliest is True,
            "latest": self.latest is True,
            "toDatetime": self.to_datetime is not None,
            "byDuration": self.by_duration is not None,
            "shiftBy": self.shift_by is not None,
            "toOffset": self.to_offset is not None,
        }
        return [name for name in STRATEGIES if values[name]]

    @property
    def strategy(self) -> str:
        return self.strategies()[0]


class OffsetResets(_Model):
    """Consumer-group offset resets by id."""

    require_maintenance_window: bool = Field(False, description="Reset only inside a maintenance window.")
    requests: list[OffsetResetRequest] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Offset reset requests by id.",
        json_schema_extra=_REQUEST_LIST,
    )

    @field_validator("requests")
    @classmethod
    def _ids(cls, value: list[OffsetResetRequest] | None) -> list[OffsetResetRequest] | None:
        _unique_ids(value or [])
        return value


class RemediationSpec(_Model):
    """What the operator may do about findings, and the guardrails around it."""

    mode: Mode = Field(
        Mode.OBSERVE,
        description="Observe: diagnose only. DryRun: plan and show plans in status, act on nothing. "
        "Enforce: act, within the guardrails.",
    )
    paused: bool = Field(False, description="Start no action and take no further step of one in flight.")
    maintenance_windows: list[MaintenanceWindow] | None = Field(
        None, max_length=20, description="When actions that require a window may run (any window open)."
    )
    require_approval: bool = Field(
        False,
        description="Post each plan in status.pendingPlan and act only once it is approved: by the "
        "annotation kafkahealth.io/approve-plan=<planId> or by approvedPlanId.",
    )
    approved_plan_id: Annotated[str, Text(r"^[a-z0-9-]+$", "a planId from status.pendingPlan", 63)] | None = (
        Field(None, description="GitOps approval: the planId (from status.pendingPlan) that may run.")
    )
    rate_limits: RateLimits = section(RateLimits, "Rate limits and cooldowns per action type.")
    circuit_breaker: CircuitBreaker = section(CircuitBreaker, "Stop acting after repeated failures.")
    preferred_leader_election: PreferredLeaderElection = section(
        PreferredLeaderElection, "Automatic preferred leader election."
    )
    rolling_restart: RollingRestart = section(RollingRestart, "Rolling broker restarts by request.")
    offset_resets: OffsetResets = section(OffsetResets, "Consumer-group offset resets by request.")


_PODS_FOR_RESTART = CelRule(
    "!has(self.remediation) || !has(self.remediation.rollingRestart) "
    "|| !has(self.remediation.rollingRestart.requests) "
    "|| size(self.remediation.rollingRestart.requests) == 0 || has(self.cluster.brokerPods)",
    "rolling restart requests need cluster.brokerPods (a statefulSet or podSelector)",
    ".cluster.brokerPods",
)


class KafkaHealthPolicySpec(_Model):
    """Which Kafka cluster to watch, how to diagnose it, and what remediation is allowed."""

    cel_rules = (_PODS_FOR_RESTART,)

    cluster: ClusterSpec = Field(description="The Kafka cluster: bootstrap servers, security, broker pods.")
    diagnostics: DiagnosticsSpec = section(DiagnosticsSpec, "Diagnosis schedule, history and checks.")
    remediation: RemediationSpec = section(RemediationSpec, "Remediation mode, guardrails and requests.")

    @model_validator(mode="after")
    def _pods_for_restart(self) -> KafkaHealthPolicySpec:
        if self.remediation.rolling_restart.requests and self.cluster.broker_pods is None:
            raise _fail(_PODS_FOR_RESTART)
        return self


# --------------------------------------------------------------------------------------------
# status


class ConditionType(StrEnum):
    READY = "Ready"
    HEALTHY = "Healthy"
    REMEDIATING = "Remediating"
    DEGRADED = "Degraded"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


ConditionReason = Annotated[
    str,
    Text(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", "CamelCase, e.g. 'ClusterUnreachable'", 1024),
]


class Condition(_StatusModel):
    """A Kubernetes-style condition."""

    type: ConditionType = Field(description="Ready, Healthy, Remediating or Degraded.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: ConditionReason = Field(description="Machine-readable CamelCase reason.")
    message: str = Field("", max_length=32768, description="Human-readable details.")
    last_transition_time: AwareDatetime = Field(
        description="When status last changed (kept while unchanged)."
    )
    observed_generation: int | None = Field(
        None, ge=0, description="The spec generation this condition is about."
    )


class Health(StrEnum):
    HEALTHY = "Healthy"
    WARNING = "Warning"
    CRITICAL = "Critical"
    UNKNOWN = "Unknown"


class LastDiagnosis(_StatusModel):
    """Counts of the latest diagnosis."""

    at: AwareDatetime = Field(
        description="When the snapshot was taken: everything this diagnosis reports is as of this time."
    )
    duration_seconds: float | None = Field(
        None,
        ge=0,
        description="How long the cycle took, from the snapshot to this status (reading the cluster, "
        "diagnosing it, reporting).",
    )
    diagnose_seconds: float | None = Field(None, ge=0, description="Of which diagnosing (Spark).")
    interval_seconds: float | None = Field(
        None, ge=0, description="spec.diagnostics.interval the cycle ran under, in seconds."
    )
    slow: bool | None = Field(
        None,
        description="The cycle took longer than the interval (durationSeconds > intervalSeconds): its "
        "findings are older than one interval when reported. Ready has reason SlowCycle meanwhile.",
    )
    total: int = Field(0, ge=0, description="Number of findings.")
    critical: int = Field(0, ge=0, description="Critical findings.")
    warning: int = Field(0, ge=0, description="Warnings.")
    info: int = Field(0, ge=0, description="Informational findings.")
    incidents: int = Field(0, ge=0, description="Number of incidents (the findings grouped by root cause).")
    missing: list[str] | None = Field(
        None, max_length=100, description="Parts of the cluster state that could not be read."
    )


class FindingSummary(_StatusModel):
    """One of the worst findings."""

    check: str = Field(description="Check id, e.g. 'under_replicated'.")
    severity: Literal["info", "warning", "critical"] = Field(description="info, warning or critical.")
    subject: str = Field(description="What it is about, e.g. 'partition/topic=orders/partition=3'.")
    message: str = Field(description="One sentence a person can act on.")
    remediation: str | None = Field(None, description="The remediation it suggests, if any.")
    evidence: dict[str, str] | None = Field(None, description="The numbers behind it, as strings.")
    observed_at: AwareDatetime | None = Field(
        None, description="The time of the snapshot it was found in (lastDiagnosis.at): it is as of then."
    )


MAX_TOP_INCIDENTS = 10


class IncidentSummary(_StatusModel):
    """One of the worst incidents: findings grouped by root cause (docs/diagnostics.md#incidents)."""

    id: str = Field(
        max_length=300, description="Stable while the cause persists: '<kind>:<root>', e.g. 'broker_down:2'."
    )
    severity: Literal["info", "warning", "critical"] = Field(description="The worst of its findings.")
    title: str = Field(max_length=1024, description="The cause and its reach, in one line.")
    remediation: str = Field(
        max_length=1024, description="What the operator would do about it, or why it will not act."
    )
    findings: int = Field(0, ge=0, description="How many findings it groups.")
    partitions: int = Field(0, ge=0, description="How many partitions it affects.")
    groups: int = Field(0, ge=0, description="How many consumer groups it affects.")


class RemediationStep(StrEnum):
    """status.currentRemediation.step: where the executor in flight is (one enum for every action).

    Rolling restart, per broker: CheckingSafety → DeletingPod → WaitingPodReady →
    WaitingBrokerRegistered → WaitingUrpZero, then WaitingForSafety between brokers (the pause,
    the wait for the next broker to be safe) and Done after the last one. Preferred leader
    election: Electing. Offset reset: ResettingOffsets."""

    WAITING_FOR_SAFETY = "WaitingForSafety"
    """Rolling restart, between brokers: waiting for the next broker to be safe to restart (the pause
    between brokers, or the live re-check refused it); nothing is being touched."""
    CHECKING_SAFETY = "CheckingSafety"
    DELETING_POD = "DeletingPod"
    WAITING_POD_READY = "WaitingPodReady"
    WAITING_BROKER_REGISTERED = "WaitingBrokerRegistered"
    WAITING_URP_ZERO = "WaitingUrpZero"
    DONE = "Done"
    ELECTING = "Electing"
    RESETTING_OFFSETS = "ResettingOffsets"


_LEGACY_STEPS = {"WaitingSafe": RemediationStep.WAITING_FOR_SAFETY}
"""Step values earlier versions persisted, read as today's (status written before the enum)."""
_LEGACY_POD_UID = re.compile(r"podUid=([0-9a-fA-F-]+)")


class CurrentRemediation(_StatusModel):
    """The action in flight; written after every step so a restarted operator resumes it."""

    action: ActionType = Field(description="PreferredLeaderElection, RollingRestart or OffsetReset.")
    id: str = Field(description="The request id (or the plan id for automatic actions).")
    plan_id: str = Field(description="The plan being carried out.")
    step: RemediationStep = Field(description="The executor's current step, e.g. WaitingPodReady.")
    started_at: AwareDatetime = Field(description="When the action started.")
    step_started_at: AwareDatetime | None = Field(None, description="When the current step started.")
    step_deadline: AwareDatetime | None = Field(
        None,
        description="When the current step times out (a wait of a rolling restart: its timeouts.* counted "
        "from stepStartedAt); the roll halts if the step has not finished by then.",
    )
    brokers_planned: list[int] | None = Field(
        None, description="Rolling restart: the brokers to restart, in order."
    )
    brokers_done: list[int] | None = Field(
        None, description="Rolling restart: brokers restarted and healthy again."
    )
    current_broker: int | None = Field(None, description="Rolling restart: the broker being restarted now.")
    pod_uid: str | None = Field(
        None,
        description="Rolling restart: the uid of the broker's pod being replaced (recorded before the delete, "
        "which carries it as a precondition).",
    )
    waiting_since: AwareDatetime | None = Field(
        None,
        description="Rolling restart: between brokers, when the roll started waiting for the next broker "
        "to become safe to restart (timeouts.safeToRestart counts from it).",
    )
    waiting_reason: RollWaitReason | None = Field(
        None, description="Rolling restart: WaitingForSafety or WaitingForBrokerReady while waiting."
    )
    never_safe_partitions: list[str] | None = Field(
        None,
        max_length=100,
        description="Rolling restart: partitions (RF <= min.insync.replicas) that are unavailable to acks=all "
        "producers while their broker restarts (neverSafePartitions: Proceed), the first 100.",
    )
    never_safe_count: int | None = Field(
        None, ge=0, description="Rolling restart: how many such partitions there are in all."
    )
    last_broker_finished_at: AwareDatetime | None = Field(
        None,
        description="Rolling restart: when the last broker became healthy (pauseBetweenBrokers counts from it).",
    )
    message: str | None = Field(
        None, description="Details of the step (for people: no state is read back from it)."
    )

    @field_validator("step", mode="before")
    @classmethod
    def _legacy_step(cls, value: object) -> object:
        return _LEGACY_STEPS.get(value, value) if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _legacy_pod_uid(cls, data: object) -> object:
        """Migration only: a roll persisted before `podUid` existed kept the uid in its message
        (`podUid=<uid>`); read it into the field once. Nothing else is parsed from messages."""
        if isinstance(data, dict) and not data.get("podUid") and not data.get("pod_uid"):
            match = _LEGACY_POD_UID.search(str(data.get("message") or ""))
            if match:
                return {**data, "podUid": match.group(1)}
        return data


class PendingPlan(_StatusModel):
    """A plan waiting for approval (spec.remediation.requireApproval)."""

    plan_id: str = Field(
        description="Approve it with this id (annotation or spec.remediation.approvedPlanId)."
    )
    action: ActionType = Field(description="What would run.")
    id: str | None = Field(None, description="The request id, for requested actions.")
    summary: str = Field(description="One line: what the plan does.")
    details: list[str] | None = Field(None, max_length=100, description="The plan's lines (first 100).")
    created_at: AwareDatetime = Field(description="When the plan was first posted.")


class ActionOutcome(StrEnum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class ActionRecord(_StatusModel):
    """One action taken (rate limits, cooldowns and the circuit breaker count these)."""

    action: ActionType = Field(description="The action type.")
    id: str | None = Field(None, description="Request id, for requested actions.")
    plan_id: str = Field(description="The plan carried out.")
    outcome: ActionOutcome = Field(description="Running, Succeeded or Failed.")
    started_at: AwareDatetime = Field(description="When it started.")
    finished_at: AwareDatetime | None = Field(None, description="When it ended.")
    message: str | None = Field(None, description="What happened.")
    generation: int = Field(
        0, ge=0, description="The spec generation it ran under (a spec change resets the circuit breaker)."
    )
    breaker_reset: str | None = Field(
        None, description="The reset-circuit-breaker annotation value in force when it ran."
    )


class RequestState(StrEnum):
    PENDING = "Pending"
    PLANNED = "Planned"
    WAITING = "Waiting"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    BLOCKED = "Blocked"

    @property
    def terminal(self) -> bool:
        """A request in a terminal state is never acted on again (once per id)."""
        return self in (RequestState.SUCCEEDED, RequestState.FAILED, RequestState.BLOCKED)


class RestartBegun(_StatusModel):
    """A broker whose restart began (its pod deleted) but was not confirmed healthy when its roll
    halted. The next roll resumes it with its health check, not a second restart, while the
    broker's pod is no longer the one deleted (`plan.restart_resume.resume_step`)."""

    broker: int = Field(description="The node id whose restart began.")
    pod_uid: str = Field(description="The uid of the pod the roll deleted.")


class RollingRestartResult(_StatusModel):
    """The outcome of one rolling restart request."""

    id: str = Field(description="The request id.")
    state: RequestState = Field(description="Pending, Planned, Running, Succeeded or Failed.")
    brokers_done: list[int] | None = Field(None, description="Brokers restarted so far.")
    started_at: AwareDatetime | None = Field(None, description="When the roll started.")
    finished_at: AwareDatetime | None = Field(None, description="When the roll ended.")
    message: str | None = Field(None, description="Details, e.g. why it halted.")
    restart_begun: RestartBegun | None = Field(
        None,
        description="A halted roll: the broker in flight, restart begun (pod deleted), not confirmed healthy. "
        "A new request that names it checks its health instead of restarting it again, while its pod is "
        "not the one deleted.",
    )


class OffsetResetEntry(_StatusModel):
    """One partition of an offset reset plan: current → target."""

    topic: str = Field(description="Topic.")
    partition: int = Field(description="Partition.")
    current: int | None = Field(None, description="Committed offset before the reset (absent: none).")
    target: int | None = Field(
        None, description="Offset after the reset (absent: cannot be computed, see note)."
    )
    log_start: int | None = Field(None, description="Earliest offset when planned.")
    log_end: int | None = Field(None, description="Latest offset when planned.")
    clamped: bool = Field(
        False, description="The strategy's offset was outside [logStart, logEnd] and was clamped."
    )
    note: str | None = Field(None, description="Why the target was adjusted or cannot be computed.")


class OffsetResetResult(_StatusModel):
    """The plan and outcome of one offset reset request."""

    id: str = Field(description="The request id.")
    state: RequestState = Field(
        description="Pending, Planned (dry run / awaiting approval), Waiting (group not Empty), "
        "Running, Succeeded, Failed or Blocked (group stayed active past emptyGroupTimeout)."
    )
    group: str = Field(description="The consumer group.")
    plan: list[OffsetResetEntry] | None = Field(
        None, max_length=MAX_PLAN_ENTRIES, description="Per partition: current → target."
    )
    waiting_since: AwareDatetime | None = Field(
        None, description="When it began waiting for the group to be Empty."
    )
    saved_offsets: str | None = Field(
        None, description="ConfigMap holding the offsets before the reset (for rollback)."
    )
    finished_at: AwareDatetime | None = Field(None, description="When it was applied, failed or blocked.")
    message: str | None = Field(None, description="Details.")


class WithheldAction(_StatusModel):
    """An action the operator would take but did not, and why."""

    action: ActionType = Field(description="The action type.")
    id: str | None = Field(None, description="The request id, for requested actions.")
    reason: WithheldReason = Field(description="Why it was withheld (CamelCase).")
    message: str = Field(description="The reason in words, with what would let it run.")
    since: AwareDatetime | None = Field(None, description="Withheld for this reason since.")
    retry_at: AwareDatetime | None = Field(None, description="When it may run at the earliest, if known.")


class KafkaHealthPolicyStatus(_StatusModel):
    """What the operator saw and did. Written by the operator only."""

    observed_generation: int | None = Field(None, ge=0, description="The spec generation last processed.")
    health: Health = Field(
        Health.UNKNOWN, description="Healthy, Warning, Critical or Unknown (worst finding)."
    )
    conditions: list[Condition] | None = Field(
        None,
        max_length=8,
        description="Ready, Healthy, Remediating, Degraded.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    last_diagnosis: LastDiagnosis | None = Field(None, description="Counts of the latest diagnosis.")
    top_incidents: list[IncidentSummary] | None = Field(
        None,
        max_length=MAX_TOP_INCIDENTS,
        description=f"The worst incidents of the latest diagnosis (at most {MAX_TOP_INCIDENTS}; "
        "lastDiagnosis.incidents counts all).",
    )
    top_findings: list[FindingSummary] | None = Field(
        None, max_length=MAX_TOP_FINDINGS, description="The worst findings of the latest diagnosis."
    )
    remediation_summary: str | None = Field(
        None, max_length=256, description="One line: what remediation is doing or why it waits."
    )
    current_remediation: CurrentRemediation | None = Field(None, description="The action in flight.")
    pending_plan: PendingPlan | None = Field(None, description="The plan awaiting approval.")
    history: list[ActionRecord] | None = Field(
        None, max_length=MAX_HISTORY, description=f"The last {MAX_HISTORY} actions, oldest first."
    )
    rolling_restarts: list[RollingRestartResult] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Results of rolling restart requests, by id.",
        json_schema_extra=_REQUEST_LIST,
    )
    offset_resets: list[OffsetResetResult] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Plans and results of offset reset requests, by id.",
        json_schema_extra=_REQUEST_LIST,
    )
    withheld: list[WithheldAction] | None = Field(
        None, max_length=MAX_WITHHELD, description="Actions not taken, each with its reason."
    )
    kopf: dict[str, Any] | None = Field(
        None,
        description="Kopf's own bookkeeping (handler progress); opaque.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )


def append_history(history: list[ActionRecord] | None, record: ActionRecord) -> list[ActionRecord]:
    """The history with `record` added, trimmed to the newest MAX_HISTORY."""
    return [*(history or []), record][-MAX_HISTORY:]


class KafkaHealthPolicy(_Model):
    """The whole resource, as read from the API server or a YAML file."""

    api_version: Literal["kafkahealth.io/v1alpha1"] = Field(
        "kafkahealth.io/v1alpha1", description="kafkahealth.io/v1alpha1"
    )
    kind: Literal["KafkaHealthPolicy"] = Field("KafkaHealthPolicy", description="KafkaHealthPolicy")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Standard object metadata.")
    spec: KafkaHealthPolicySpec = Field(description="What to watch and what may be done.")
    status: KafkaHealthPolicyStatus | None = Field(None, description="What the operator saw and did.")


# --------------------------------------------------------------------------------------------
# Errors that name the field and the fix


def _path(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


_GENERIC = {
    "missing": "required: set this field",
    "extra_forbidden": "unknown field: check the spelling and case (kubectl explain kafkahealthpolicy.spec)",
}


def error_messages(exc: ValidationError, root: str = "spec") -> list[str]:
    """One 'spec.path.to[0].field: what is wrong and how to fix it' line per error."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        path = _path([root, *loc]) if root else _path(loc)
        extra = (err.get("ctx") or {}).get("field_path")
        if extra:
            path += extra
        message = _GENERIC.get(err["type"], err["msg"])
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        lines.append(f"{path}: {message}")
    return lines


class PolicyError(ValueError):
    """An invalid spec; `messages` name each field and the fix."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("invalid KafkaHealthPolicy spec:\n  " + "\n  ".join(messages))
        self.messages = messages


def parse_spec(spec: dict[str, Any]) -> KafkaHealthPolicySpec:
    """Validate a spec as the API server would; PolicyError with one line per problem otherwise."""
    try:
        return KafkaHealthPolicySpec.model_validate(spec)
    except ValidationError as exc:
        raise PolicyError(error_messages(exc)) from None


def parse_status(status: dict[str, Any] | None) -> KafkaHealthPolicyStatus:
    """The status as last written (empty when none)."""
    return KafkaHealthPolicyStatus.model_validate(status or {})
