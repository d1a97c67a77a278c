"""Process-wide resources of the operator: settings, the Kubernetes client, one SparkSession.

Created once at start-up and shared by every policy's worker. The SparkSession starts lazily
in a worker thread (a cold start takes ~10 s) under a lock, so the first cycles of several
policies never start two JVMs. An embedded driver JVM that has exited (out of heap, killed) is
replaced by a new one at the next cycle that asks for the session. A driver that does not answer
a cancel (`mark_unresponsive`) fails the liveness probe, so Kubernetes restarts the pod.
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_health.controller.cluster_lease import LockSettings, default_replica
from kafka_health.k8s.client import K8s
from kafka_health.plan.cluster_lock import DEFAULT_LOCK_TTL
from kafka_health.report import metrics
from kafka_health_spark.session import discard_exited_session, driver_exit, get_session, stop_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_DIAGNOSIS_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class OperatorSettings:
    history_dir: Path
    work_dir: Path
    spark_master: str | None = None
    spark_remote: str | None = None
    spark_driver_memory: str = "1g"
    clusterwide: bool = False
    lock_namespace: str = "default"
    """Where the per-Kafka-cluster action Leases live (every install acting on a cluster must share it)."""
    lock_ttl_seconds: int = int(DEFAULT_LOCK_TTL.total_seconds())
    replica: str = field(default_factory=default_replica)
    """This process in the cluster Leases' holder (Kopf's peering id: POD_ID, else host and pid)."""
    diagnosis_timeout_s: float = DEFAULT_DIAGNOSIS_TIMEOUT_S
    """How long a cycle's diagnosis (its Spark work) may run before its jobs are cancelled."""

    @property
    def lock(self) -> LockSettings:
        return LockSettings(
            namespace=self.lock_namespace, replica=self.replica, ttl=timedelta(seconds=self.lock_ttl_seconds)
        )


@dataclass
class Runtime:
    settings: OperatorSettings
    k8s: K8s
    ready: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set before Spark stops at shutdown: a cycle still running then fails, and that is no bug."""
    unresponsive: str | None = None
    """Why the Spark driver is taken to be wedged (set once, never cleared): /healthz fails."""
    _spark: Any = None
    _spark_lock: threading.Lock = field(default_factory=threading.Lock)

    def spark(self) -> SparkSession:
        """The process's SparkSession (blocking; call from a worker thread). A new one when the
        embedded driver JVM of the last one has exited."""
        with self._spark_lock:
            exited = self.spark_driver_exit()
            if exited is not None:
                reason = exit_reason(exited)
                log.error("the Spark driver JVM exited (%s); starting a new one", reason)
                metrics.SPARK_DRIVER_RESTARTS.labels(reason).inc()
                discard_exited_session()
                self._spark = None
            if self._spark is None:
                self._spark = get_session(
                    master=self.settings.spark_master,
                    remote=self.settings.spark_remote,
                    app_name="kafka-health-operator",
                    driver_memory=self.settings.spark_driver_memory,
                )
            return self._spark

    def spark_driver_exit(self, *, wait_s: float = 0.0) -> int | None:
        """The exit code of the embedded driver JVM once it has exited (negative: its signal);
        `wait_s` waits that long for one that may be exiting."""
        if self._spark is None:
            return None
        return driver_exit(self._spark, wait_s=wait_s)

    def mark_unresponsive(self, why: str) -> None:
        """The driver did not end work it was told to cancel: only a restart frees it."""
        if self.unresponsive is None:
            log.error("the Spark driver is unresponsive (%s): the liveness probe fails from now on", why)
            self.unresponsive = why

    def stop(self) -> None:
        self.stopping.set()
        with self._spark_lock:
            if self._spark is not None:
                stop_session()
                self._spark = None


def exit_reason(code: int | None) -> str:
    """A driver JVM's exit as a metric label: exit_3 (out of heap), SIGKILL (e.g. the kernel's
    OOM killer), exit_N."""
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal_{-code}"
    return f"exit_{code}"


_RUNTIME: Runtime | None = None


def install(runtime: Runtime) -> None:
    global _RUNTIME
    _RUNTIME = runtime


def current() -> Runtime:
    if _RUNTIME is None:
        raise RuntimeError("the operator runtime is not installed (start with `kafka-health operator`)")
    return _RUNTIME
