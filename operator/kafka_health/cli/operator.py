"""`kafka-health operator`: run the controller.

The controller (kopf, aiohttp and the kubernetes package) is imported when the operator starts,
not when `kafka-health` does: about 3 s that `--help` and the other commands never need.
"""

from __future__ import annotations

import os
import re
import secrets
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from kafka_health._kits.paths import state_root
from kafka_health.models.policy import parse_duration


class LogFormat(StrEnum):
    text = "text"
    json = "json"


Namespaces = Annotated[
    list[str] | None, typer.Option("--namespace", "-n", help="Watch this namespace (repeatable).")
]
AllNamespaces = Annotated[bool, typer.Option("--all-namespaces", "-A", help="Watch every namespace.")]
MetricsPort = Annotated[int, typer.Option(help="Prometheus /metrics port (0: off).")]
HealthPort = Annotated[int, typer.Option(help="/healthz and /readyz port (0: off).")]
HistoryDir = Annotated[
    Path | None, typer.Option(envvar="KAFKA_HEALTH_HISTORY_DIR", help="Where snapshot history is kept.")
]
SparkMaster = Annotated[str | None, typer.Option(help="Spark master URL (default: embedded local[*]).")]
SparkRemote = Annotated[str | None, typer.Option(help="Spark Connect URL sc://host:port.")]
SparkDriverMemory = Annotated[
    str,
    typer.Option(
        help="JVM heap of the embedded Spark driver, e.g. 1g: enough for a policy of 10k or "
        "100k partitions with an hour of history (docs/diagnostics.md). Ignored with --spark-remote."
    ),
]
DiagnosisTimeout = Annotated[
    str,
    typer.Option(
        envvar="KAFKA_HEALTH_DIAGNOSIS_TIMEOUT",
        help="How long one cycle's diagnosis (its Spark work) may run, as a duration (90s, 10m): "
        "past it, its Spark jobs are cancelled and the policy reports DiagnosisTimedOut.",
    ),
]
Peering = Annotated[str, typer.Option(help="Kopf peering name: replicas sharing it never both act.")]
Standalone = Annotated[bool, typer.Option(help="No peering (a single replica, or tests).")]
Priority = Annotated[
    int | None,
    typer.Option(
        help="Peering priority; the highest live replica acts, the others stand by (default: random)."
    ),
]
LogFormatOpt = Annotated[LogFormat, typer.Option(help="text (for humans) or json (one object per line).")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v")]
Kubeconfig = Annotated[
    str | None,
    typer.Option(envvar="KUBECONFIG", help="Kubeconfig (default: in-cluster, then ~/.kube/config)."),
]
LockNamespace = Annotated[
    str | None,
    typer.Option(
        envvar="KAFKA_HEALTH_LOCK_NAMESPACE",
        help="Namespace of the per-Kafka-cluster action Leases; every operator install that may act "
        "on the same Kafka cluster must use the same one (default: POD_NAMESPACE, else the first "
        "--namespace, else default).",
    ),
]
LockTtl = Annotated[
    int,
    typer.Option(
        min=5,
        max=3600,
        help="Seconds a cluster Lease stays valid without renewal (renewed every third of it); keep "
        "it below Kopf's peering lifetime (60 s).",
    ),
]


def operator(
    namespace: Namespaces = None,
    all_namespaces: AllNamespaces = False,
    metrics_port: MetricsPort = 8080,
    health_port: HealthPort = 8081,
    history_dir: HistoryDir = None,
    spark_master: SparkMaster = None,
    spark_remote: SparkRemote = None,
    spark_driver_memory: SparkDriverMemory = "1g",
    diagnosis_timeout: DiagnosisTimeout = "10m",
    peering: Peering = "kafka-health",
    standalone: Standalone = False,
    priority: Priority = None,
    log_format: LogFormatOpt = LogFormat.text,
    verbose: Verbose = False,
    kubeconfig: Kubeconfig = None,
    lock_namespace: LockNamespace = None,
    lock_ttl: LockTtl = 30,
) -> None:
    """Run the operator: diagnose every KafkaHealthPolicy each interval and report in its status."""
    timeout = _checked(namespace, all_namespaces, spark_driver_memory, diagnosis_timeout)
    from kafka_health.controller.app import default_work_dir, run
    from kafka_health.controller.runtime import OperatorSettings

    settings = OperatorSettings(
        history_dir=history_dir or state_root() / "history",
        work_dir=Path(os.environ.get("KAFKA_HEALTH_WORK_DIR", str(default_work_dir()))),
        spark_master=spark_master,
        spark_remote=spark_remote,
        spark_driver_memory=spark_driver_memory.lower(),
        clusterwide=all_namespaces,
        lock_namespace=lock_namespace
        or os.environ.get("POD_NAMESPACE")
        or (namespace[0] if namespace else "default"),
        lock_ttl_seconds=lock_ttl,
        diagnosis_timeout_s=timeout,
    )
    run(
        namespaces=list(namespace or []),
        all_namespaces=all_namespaces,
        settings=settings,
        metrics_port=metrics_port,
        health_port=health_port,
        peering=peering,
        standalone=standalone,
        priority=priority if priority is not None else secrets.randbelow(1_000_000) + 1,
        log_format=log_format.value,
        verbose=verbose,
        kubeconfig=kubeconfig if kubeconfig and Path(kubeconfig).exists() else None,
    )


def _checked(
    namespace: list[str] | None, all_namespaces: bool, spark_driver_memory: str, diagnosis_timeout: str
) -> float:
    """The flags the controller cannot check itself, refused (exit 2, naming the flag) before it
    is loaded; returns the diagnosis timeout in seconds."""
    if not namespace and not all_namespaces:
        raise typer.BadParameter(
            "give --namespace NS (repeatable) or --all-namespaces", param_hint="--namespace"
        )
    if not re.fullmatch(r"[1-9][0-9]*[kmgt]", spark_driver_memory.lower()):
        raise typer.BadParameter("a JVM memory size such as 1g or 1536m", param_hint="--spark-driver-memory")
    try:
        timeout = parse_duration(diagnosis_timeout).total_seconds()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--diagnosis-timeout") from None
    if timeout < 1:
        raise typer.BadParameter("at least 1s", param_hint="--diagnosis-timeout")
    return timeout
