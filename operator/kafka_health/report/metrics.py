"""Prometheus metrics of the operator: one registry, names documented in docs/observability.md."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry(auto_describe=True)

FINDINGS = Gauge(
    "kafka_health_findings",
    "Findings of the latest diagnosis, by check and severity.",
    ["namespace", "policy", "check", "severity"],
    registry=REGISTRY,
)
CYCLE_SECONDS = Histogram(
    "kafka_health_cycle_duration_seconds",
    "Duration of a collect → diagnose → report cycle.",
    ["namespace", "policy", "outcome"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300),
    registry=REGISTRY,
)
LAST_SUCCESS = Gauge(
    "kafka_health_last_success_timestamp_seconds",
    "Unix time of the last cycle that read the cluster and diagnosed it.",
    ["namespace", "policy"],
    registry=REGISTRY,
)
HEALTHY = Gauge(
    "kafka_health_healthy",
    "1 when the latest diagnosis found nothing of warning or worse, else 0.",
    ["namespace", "policy"],
    registry=REGISTRY,
)
DEGRADED = Gauge(
    "kafka_health_degraded",
    "1 when the policy cannot do its job (cluster unreachable, bad reference, halted remediation).",
    ["namespace", "policy"],
    registry=REGISTRY,
)
REMEDIATIONS = Counter(
    "kafka_health_remediations",
    "Remediation actions by type and result (succeeded, failed, withheld, dry_run).",
    ["namespace", "policy", "action", "result"],
    registry=REGISTRY,
)
CLIENT_PROCESS_RESTARTS = Counter(
    "kafka_health_client_process_restarts",
    "Restarts of the Kafka client process after it died, by how it ended (SIGSEGV, SIGABRT, exit_1, lost, hung).",
    ["reason"],
    registry=REGISTRY,
)


def serve(port: int, addr: str = "0.0.0.0") -> None:  # noqa: S104 - the metrics port is meant to be scraped
    """Expose /metrics on `port` (a daemon thread of prometheus_client)."""
    start_http_server(port, addr=addr, registry=REGISTRY)


def forget_policy(namespace: str, policy: str) -> None:
    """Drop every series of a deleted policy so dashboards don't show ghosts."""
    for metric in (FINDINGS, LAST_SUCCESS, HEALTHY, DEGRADED, CYCLE_SECONDS, REMEDIATIONS):
        for labels in list(metric._metrics):  # prometheus_client keeps children keyed by label values
            if labels[:2] == (namespace, policy):
                metric.remove(*labels)
