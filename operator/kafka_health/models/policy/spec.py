"""spec: which Kafka cluster to watch, how to diagnose it, and what remediation is allowed."""

from __future__ import annotations

from pydantic import Field, model_validator

from kafka_health.models.policy.base import SpecModel, section
from kafka_health.models.policy.cluster import ClusterSpec
from kafka_health.models.policy.diagnostics import DiagnosticsSpec
from kafka_health.models.policy.remediation import RemediationSpec
from kafka_health.models.policy.rules import CelRule, rule_error

_PODS_FOR_RESTART = CelRule(
    "!has(self.remediation) || !has(self.remediation.rollingRestart) "
    "|| !has(self.remediation.rollingRestart.requests) "
    "|| size(self.remediation.rollingRestart.requests) == 0 || has(self.cluster.brokerPods)",
    "rolling restart requests need cluster.brokerPods (a statefulSet or podSelector)",
    ".cluster.brokerPods",
)


class KafkaHealthPolicySpec(SpecModel):
    """Which Kafka cluster to watch, how to diagnose it, and what remediation is allowed."""

    cel_rules = (_PODS_FOR_RESTART,)

    cluster: ClusterSpec = Field(description="The Kafka cluster: bootstrap servers, security, broker pods.")
    diagnostics: DiagnosticsSpec = section(DiagnosticsSpec, "Diagnosis schedule, history and checks.")
    remediation: RemediationSpec = section(RemediationSpec, "Remediation mode, guardrails and requests.")

    @model_validator(mode="after")
    def _pods_for_restart(self) -> KafkaHealthPolicySpec:
        if self.remediation.rolling_restart.requests and self.cluster.broker_pods is None:
            raise rule_error(_PODS_FOR_RESTART)
        return self
