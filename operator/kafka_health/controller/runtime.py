"""Process-wide resources of the operator: settings, the Kubernetes client, one SparkSession.

Created once at start-up and shared by every policy's worker. The SparkSession starts lazily
in a worker thread (a cold start takes ~10 s) under a lock, so the first cycles of several
policies never start two JVMs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_health.controller.cluster_lease import LockSettings, default_replica
from kafka_health.k8s.client import K8s
from kafka_health.plan.cluster_lock import DEFAULT_LOCK_TTL

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
    _spark: Any = None
    _spark_lock: threading.Lock = field(default_factory=threading.Lock)

    def spark(self) -> SparkSession:
        """The process's SparkSession (blocking; call from a worker thread)."""
        with self._spark_lock:
            if self._spark is None:
                from kafka_health_spark.session import get_session

                self._spark = get_session(
                    master=self.settings.spark_master,
                    remote=self.settings.spark_remote,
                    app_name="kafka-health-operator",
                    driver_memory=self.settings.spark_driver_memory,
                )
            return self._spark

    def stop(self) -> None:
        self.stopping.set()
        with self._spark_lock:
            if self._spark is not None:
                from kafka_health_spark.session import stop_session

                stop_session()
                self._spark = None


_RUNTIME: Runtime | None = None


def install(runtime: Runtime) -> None:
    global _RUNTIME
    _RUNTIME = runtime


def current() -> Runtime:
    if _RUNTIME is None:
        raise RuntimeError("the operator runtime is not installed (start with `kafka-health operator`)")
    return _RUNTIME
