"""Prometheus metrics of the operator: one registry, names documented in docs/observability.md.

Names follow Prometheus' rules: the unit as a suffix (`_seconds`), counters exposed as `_total`
(prometheus_client appends it), no label in a name. Label sets are read back through the public
collector API (`collect()`), never prometheus_client's private attributes.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.metrics import MetricWrapperBase

from kafka_health.collect.client_host import add_restart_listener

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
CERTIFICATE_EXPIRY = Gauge(
    "kafka_health_listener_certificate_expiry_timestamp_seconds",
    "Unix time the certificate chain a broker serves on the operator's TLS listener ends (earliest in the chain).",
    ["namespace", "policy", "broker"],
    registry=REGISTRY,
)
REASSIGNMENT_REMAINING = Gauge(
    "kafka_health_reassignment_remaining_bytes",
    "Bytes the new replicas of the partition reassignments in flight still have to copy (no series when none is in flight or no size was read).",
    ["namespace", "policy"],
    registry=REGISTRY,
)
REASSIGNMENT_ETA = Gauge(
    "kafka_health_reassignment_eta_seconds",
    "Seconds until the reassignments in flight have copied their new replicas, at the rate their lag shrank (no series while unknown).",
    ["namespace", "policy"],
    registry=REGISTRY,
)
CONSUMER_LAG_SECONDS = Gauge(
    "kafka_health_consumer_lag_seconds",
    "A consumer group's largest lag in seconds on a topic: how long ago the log end was where its committed offset is (interpolated over the history; at least this when the history is shorter); kind: the group's type (classic, consumer, share, streams, unknown).",
    ["namespace", "policy", "group", "topic", "kind"],
    registry=REGISTRY,
)
RESULTS = ("succeeded", "failed", "blocked", "withheld", "dry_run")
"""The `result` label of REMEDIATIONS: an action that ran (succeeded, failed); a one-shot request
given up without acting (blocked); an action a guardrail started to hold back (withheld), or that
DryRun mode planned without running (dry_run), counted once when it starts being held."""

REMEDIATIONS = Counter(
    "kafka_health_remediations",
    "Remediation actions by type and result (succeeded, failed, blocked, withheld, dry_run).",
    ["namespace", "policy", "action", "result"],
    registry=REGISTRY,
)
CLIENT_PROCESS_RESTARTS = Counter(
    "kafka_health_client_process_restarts",
    "Restarts of the Kafka client process after it died, by how it ended (SIGSEGV, SIGABRT, exit_1, lost, hung).",
    ["reason"],
    registry=REGISTRY,
)
SPARK_DRIVER_RESTARTS = Counter(
    "kafka_health_spark_driver_restarts",
    "New embedded Spark driver JVMs started after one exited, by how it ended (exit_3: out of heap, SIGKILL, exit_N).",
    ["reason"],
    registry=REGISTRY,
)


def serve(port: int, addr: str = "0.0.0.0") -> None:  # noqa: S104 - the metrics port is meant to be scraped
    """Expose /metrics on `port` (a daemon thread of prometheus_client)."""
    start_http_server(port, addr=addr, registry=REGISTRY)


LABELS: dict[str, tuple[str, ...]] = {
    "kafka_health_findings": ("namespace", "policy", "check", "severity"),
    "kafka_health_cycle_duration_seconds": ("namespace", "policy", "outcome"),
    "kafka_health_last_success_timestamp_seconds": ("namespace", "policy"),
    "kafka_health_healthy": ("namespace", "policy"),
    "kafka_health_degraded": ("namespace", "policy"),
    "kafka_health_listener_certificate_expiry_timestamp_seconds": ("namespace", "policy", "broker"),
    "kafka_health_reassignment_remaining_bytes": ("namespace", "policy"),
    "kafka_health_reassignment_eta_seconds": ("namespace", "policy"),
    "kafka_health_consumer_lag_seconds": ("namespace", "policy", "group", "topic", "kind"),
    "kafka_health_remediations": ("namespace", "policy", "action", "result"),
    "kafka_health_client_process_restarts": ("reason",),
    "kafka_health_spark_driver_restarts": ("reason",),
}
"""Each family's label names, in the order the metric was declared with."""


def count_remediation(namespace: str, policy: str, action: str, result: str) -> None:
    """One remediation outcome; `result` is one of RESULTS (docs/observability.md)."""
    if result not in RESULTS:
        raise ValueError(f"remediation result {result!r} is not one of {RESULTS}")
    REMEDIATIONS.labels(namespace, policy, action, result).inc()


def label_sets(metric: MetricWrapperBase) -> set[tuple[str, ...]]:
    """The label values of every child of `metric`, read through `collect()`."""
    out: set[tuple[str, ...]] = set()
    for family in metric.collect():
        names = LABELS[family.name]
        for sample in family.samples:
            out.add(tuple(sample.labels[n] for n in names))
    return out


def remove_series(metrics: Iterable[MetricWrapperBase], namespace: str, policy: str, **match: str) -> None:
    """Remove every child of `metrics` labelled with this policy (and `match`, when given)."""
    for metric in metrics:
        family = next(iter(metric.collect())).name
        names = LABELS[family]
        for values in label_sets(metric):
            labels = dict(zip(names, values, strict=True))
            wanted = {"namespace": namespace, "policy": policy, **match}
            if all(labels.get(k) == v for k, v in wanted.items()):
                metric.remove(*values)


def forget_policy(namespace: str, policy: str) -> None:
    """Drop every series of a deleted policy so dashboards don't show ghosts."""
    remove_series(
        (
            FINDINGS,
            LAST_SUCCESS,
            HEALTHY,
            DEGRADED,
            CERTIFICATE_EXPIRY,
            REASSIGNMENT_REMAINING,
            REASSIGNMENT_ETA,
            CONSUMER_LAG_SECONDS,
            CYCLE_SECONDS,
            REMEDIATIONS,
        ),
        namespace,
        policy,
    )


# collect tells of client process restarts through a hook: it sits below report (layers).
add_restart_listener(lambda how: CLIENT_PROCESS_RESTARTS.labels(reason=how).inc())
