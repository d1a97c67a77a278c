"""One policy's diagnosis cycle: spec → credentials → collect → history → diagnose → outcome.

Runs in a worker thread (Kafka and Spark calls block). Returns a `CycleOutcome`; it never
raises for a problem the policy should report (bad reference, unreachable cluster), so one
policy's trouble never reaches another's.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kafka_health.collect.connection import ConnectionConfig, redact
from kafka_health.collect.kafka_admin import KafkaAdmin, Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.controller.credentials import CredentialsError, connection_for
from kafka_health.controller.runtime import Runtime
from kafka_health.diagnose.from_policy import enabled, thresholds_for
from kafka_health.diagnose.run import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    PolicyError,
    parse_duration,
    parse_spec,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.remediate.broker_pods import BrokerPodsError, find_broker_pods
from kafka_health.report.status import CycleOutcome, Problem

log = logging.getLogger(__name__)

MAINTENANCE_EVERY = timedelta(hours=1)


@dataclass
class PolicyWorker:
    """The state one policy keeps between cycles (a connection, what Events were posted)."""

    runtime: Runtime
    namespace: str
    name: str
    admin: KafkaAdmin | None = None
    admin_key: str | None = None
    finding_keys: set[str] | None = None
    last_maintenance: datetime | None = None
    secrets: list[str] = field(default_factory=list)
    last_snapshot: ClusterSnapshot | None = None
    busy: bool = False  # a cycle abandoned mid-way still runs in its thread

    @property
    def cluster_name(self) -> str:
        """The history key: per policy, so two policies on one cluster never double its samples."""
        return f"{self.namespace}.{self.name}"

    def close(self) -> None:
        if self.admin is not None:
            self.admin.close()
            self.admin = None
            self.admin_key = None

    # ------------------------------------------------------------------ steps
    def _admin_for(self, conn: ConnectionConfig, timeout_s: float) -> KafkaAdmin:
        key = hashlib.sha256(
            repr(sorted(conn.confluent().items())).encode() + str(timeout_s).encode()
        ).hexdigest()
        if self.admin is None or self.admin_key != key:
            self.close()
            self.admin = KafkaAdmin(conn, timeouts=Timeouts(metadata=min(6.0, timeout_s), request=timeout_s))
            self.admin_key = key
        return self.admin

    def run(self, raw_spec: dict[str, Any]) -> CycleOutcome:
        """One cycle (blocking). Every expected failure becomes an outcome with a Problem."""
        try:
            spec = parse_spec(raw_spec)
        except PolicyError as exc:
            return CycleOutcome(problem=Problem("InvalidSpec", "; ".join(exc.messages)[:2000]))
        try:
            return self._run(spec)
        except Exception as exc:  # a bug or an unexpected client error: report, never crash the daemon
            log.exception("cycle of %s/%s failed", self.namespace, self.name)
            message = redact(f"{exc.__class__.__name__}: {exc}", self.secrets)[:1000]
            return CycleOutcome(problem=Problem("CycleFailed", message))

    def _run(self, spec: KafkaHealthPolicySpec) -> CycleOutcome:
        rt = self.runtime
        try:
            conn = connection_for(
                spec.cluster,
                self.namespace,
                rt.k8s.read_secret_value,
                rt.settings.work_dir / self.namespace / self.name,
            )
        except CredentialsError as exc:
            return CycleOutcome(problem=Problem(exc.reason, str(exc)))
        self.secrets = conn.secrets
        blockers: list[Problem] = []
        if spec.cluster.broker_pods is not None:
            try:
                find_broker_pods(rt.k8s, spec.cluster.broker_pods, self.namespace)
            except BrokerPodsError as exc:
                blockers.append(Problem(exc.reason, str(exc)))
        timeout_s = parse_duration(str(spec.cluster.request_timeout)).total_seconds()
        admin = self._admin_for(conn, timeout_s)
        snapshot = collect_snapshot(admin, self.cluster_name, lambda: datetime.now(UTC))
        self.last_snapshot = snapshot
        if not snapshot.reachable:
            reason = next((m.reason for m in snapshot.missing if m.part == "metadata"), "no answer")
            return CycleOutcome(
                problem=Problem(
                    "KafkaUnreachable",
                    redact(f"Cannot read metadata from {conn.bootstrap_servers}: {reason}", self.secrets)[
                        :1000
                    ],
                ),
            )
        store = HistoryStore(rt.settings.history_dir)
        store.append(snapshot)
        self._maintain(store, spec, snapshot.taken_at)
        diagnosis = run_diagnosis(
            snapshot, rt.settings.history_dir, thresholds_for(spec.diagnostics.checks), rt.spark()
        )
        diagnosis = _only_enabled(diagnosis, spec)
        return CycleOutcome(diagnosis=diagnosis, remediation_blockers=tuple(blockers))

    def _maintain(self, store: HistoryStore, spec: KafkaHealthPolicySpec, now: datetime) -> None:
        """Hourly: drop history past its retention and compact the day's small files."""
        if self.last_maintenance is not None and now - self.last_maintenance < MAINTENANCE_EVERY:
            return
        self.last_maintenance = now
        keep = parse_duration(str(spec.diagnostics.history_retention))
        started = time.monotonic()
        store.apply_retention(max(1, int(keep.total_seconds() // 86400)), now, cluster=self.cluster_name)
        store.compact(self.cluster_name)
        log.info("history maintenance of %s took %.2fs", self.cluster_name, time.monotonic() - started)

    def remediate(
        self,
        metadata: dict[str, Any],
        raw_spec: dict[str, Any],
        status: KafkaHealthPolicyStatus,
        diagnosis: Diagnosis,
        persist: Callable[[KafkaHealthPolicyStatus], None],
        on_event: Callable[[str, str, str], None],
    ) -> KafkaHealthPolicyStatus:
        """Plan on this cycle's live snapshot and, when the decision acts, run its executor (blocking)."""
        from kafka_health.controller.remediation import ActContext, act, decide

        spec = parse_spec(raw_spec)
        admin = self.admin
        snapshot = self.last_snapshot
        if admin is None or snapshot is None:
            return status

        def offsets_for_times(
            ts: datetime, partitions: list[tuple[str, int]]
        ) -> dict[tuple[str, int], int | None]:
            return dict(admin.offsets_for_times(partitions, int(ts.timestamp() * 1000)).values)

        now = datetime.now(UTC)
        decision, status = decide(
            metadata=metadata,
            spec=spec,
            status=status,
            snapshot=snapshot,
            diagnosis=diagnosis,
            now=now,
            offsets_for_times=offsets_for_times,
        )
        if not decision.acts:
            return status
        persist(status)
        ctx = ActContext(
            metadata=metadata,
            spec=spec,
            snapshot=snapshot,
            admin=admin,
            k8s=self.runtime.k8s,
            persist=persist,
            clock=lambda: datetime.now(UTC),
            on_event=on_event,
        )
        return act(decision, status, ctx)


def _only_enabled(diagnosis: Diagnosis, spec: KafkaHealthPolicySpec) -> Diagnosis:
    kept = [f for f in diagnosis.findings if enabled(f, spec.diagnostics.checks)]
    return diagnosis.model_copy(update={"findings": kept})
