"""One policy's state between cycles: its Kafka client, its Spark windows and plans, what the
last cycle saw and reported, its roll driver, and the lock its status writes share.

Everything a single cycle needs besides this lives in the cycle's locals
(`controller/cycle.py`); this holds only what outlives one.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from kafka_health.collect.connection import ConnectionConfig
from kafka_health.collect.kafka_admin import KafkaAdmin, Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.controller.act_context import OnEvent, Stopped
from kafka_health.controller.cycle_report import Reported
from kafka_health.controller.roll_driver import RollDriver
from kafka_health.controller.runtime import Runtime
from kafka_health.k8s.client import K8sError
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import CurrentRemediation, KafkaHealthPolicySpec, KafkaHealthPolicyStatus
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import Decision
from kafka_health.remediate.broker_pods import BrokerPodsError, find_node_pods

if TYPE_CHECKING:
    from kafka_health_spark.reuse import ReusedPlans
    from kafka_health_spark.slot_windows import SlotWindows
    from kafka_health_spark.windows import HistoryWindows

FRESH_FOR = timedelta(seconds=5)
"""A cycle's snapshot younger than this counts as live for planning; older, planning reads again."""


@dataclass
class PolicyWorker:
    """The state one policy keeps between cycles."""

    runtime: Runtime
    namespace: str
    name: str
    admin: KafkaAdmin | None = None
    admin_key: str | None = None
    """Which connection settings `admin` was made with (a changed spec or Secret makes a new one)."""
    windows: HistoryWindows | SlotWindows | None = None
    """The history windows kept between cycles (read from Parquet once): as rows in the driver
    JVM beside the policy's reused plans, else as Spark frames."""
    plans: ReusedPlans | None = None
    """The policy's check plans, built once and run each cycle (`kafka_health_spark.reuse`)."""
    last_maintenance: datetime | None = None
    last_snapshot: ClusterSnapshot | None = None
    """The newest snapshot (a cycle's, or a live one read for planning)."""
    last_diagnosis: Diagnosis | None = None
    """The last diagnosis that remediation may act on (no problem, no blocker)."""
    remediation_seen: CurrentRemediation | None = None
    """status.currentRemediation as last read or written: a roll in flight makes the next cycle
    read status right before its snapshot (`planned_roll.roll_in_flight`)."""
    reported: Reported = field(default_factory=Reported)
    """What the last cycles reported (Events posted, slow or not): the next report's base."""
    roll: RollDriver | None = None
    busy: bool = False
    """A cycle abandoned mid-way still runs in its thread (it releases the worker when done)."""
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set when Kopf stops the policy's daemon (paused by peering, deleted, shutdown): no further step."""
    status_lock: threading.RLock = field(default_factory=threading.RLock)
    """Held for every read-modify-write of the policy's status (cycle and roll driver alike)."""

    @property
    def cluster_name(self) -> str:
        """The history key: per policy, so two policies on one cluster never double its samples."""
        return f"{self.namespace}.{self.name}"

    def close(self) -> None:
        self.stop_roll()
        if self.windows is not None:
            self.windows.invalidate()
        if self.plans is not None:
            self.plans.close()
            self.plans = None
        if self.admin is not None:
            self.admin.close()
            self.admin = None
            self.admin_key = None

    def admin_for(self, conn: ConnectionConfig, timeout_s: float) -> KafkaAdmin:
        """The policy's Kafka client, new when the connection settings changed."""
        key = hashlib.sha256(
            repr(sorted(conn.confluent().items())).encode() + str(timeout_s).encode()
        ).hexdigest()
        if self.admin is None or self.admin_key != key:
            self.close()
            self.admin = KafkaAdmin(conn, timeouts=Timeouts(metadata=min(6.0, timeout_s), request=timeout_s))
            self.admin_key = key
        return self.admin

    # ------------------------------------------------------------------ rolls
    def rolling(self) -> bool:
        """A roll driver is running for this policy (it alone plans and acts until it stops)."""
        return self.roll is not None and self.roll.alive()

    def start_roll(self, on_event: OnEvent, first: tuple[Decision, KafkaHealthPolicyStatus] | None) -> None:
        if self.rolling():
            return
        self.roll = RollDriver(self, on_event)
        self.roll.start(first)

    def stop_roll(self) -> None:
        """Stop the roll driver and wait for it (it persists its step first; nothing is half done)."""
        if self.roll is not None:
            self.roll.stop()

    def stop_acting(self) -> None:
        """Take no further remediation step (from the event loop, without waiting): the roll
        driver and any inline executor stop before their next step."""
        self.stopping.set()
        self.stop_roll_soon()

    def stop_roll_soon(self) -> None:
        """Ask the roll driver to stop without waiting (from the event loop)."""
        if self.roll is not None:
            self.roll.stopping.set()

    def guard(self) -> None:
        """Before an inline executor's next step: raise Stopped once the policy's work stopped."""
        if self.stopping.is_set():
            raise Stopped

    # ------------------------------------------------------------------ live reads for planning
    def broker_pods_ready(self, spec: KafkaHealthPolicySpec) -> dict[int, bool] | None:
        """Node id → pod Ready and not terminating, read live: the broker pods and, with
        controllerPods, the dedicated controllers' (None without brokerPods or when the pods cannot
        be read: the executor's own check before a delete then decides)."""
        pods_spec = spec.cluster.broker_pods
        if pods_spec is None:
            return None
        try:
            pods = find_node_pods(self.runtime.k8s, pods_spec, spec.cluster.controller_pods, self.namespace)
        except (BrokerPodsError, K8sError):
            return None
        return {bid: bp.pod.ready and not bp.pod.deleting for bid, bp in pods.items()}

    def live_snapshot(self) -> ClusterSnapshot | None:
        """The cycle's snapshot when it is fresh, else a new read: planning uses live state."""
        admin, snapshot = self.admin, self.last_snapshot
        if admin is None:
            return None
        if snapshot is not None and datetime.now(UTC) - snapshot.taken_at <= FRESH_FOR:
            return snapshot
        self.last_snapshot = collect_snapshot(admin, self.cluster_name, lambda: datetime.now(UTC))
        return self.last_snapshot
