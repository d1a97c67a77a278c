"""One policy's diagnosis cycle: spec → credentials → collect → history → diagnose → outcome.

Runs in a worker thread (Kafka and Spark calls block). Returns a `CycleOutcome`; it never
raises for a problem the policy should report (bad reference, unreachable cluster), so one
policy's trouble never reaches another's.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kafka_health._kits.deadline import DeadlineExceeded, run_with_deadline
from kafka_health.collect import security_errors
from kafka_health.collect.connection import ConnectionConfig, redact
from kafka_health.collect.kafka_admin import KafkaAdmin, Timeouts
from kafka_health.collect.results import ZOOKEEPER_MODE
from kafka_health.collect.snapshot import collect_snapshot, zookeeper_mode
from kafka_health.controller.cluster_lease import LeaseLost, read_lock
from kafka_health.controller.credentials import CredentialsError, connection_for, policy_material_dir
from kafka_health.controller.planned_roll import roll_in_flight, with_planned
from kafka_health.controller.roll_driver import Stopped
from kafka_health.controller.runtime import Runtime, exit_reason
from kafka_health.diagnose.from_policy import for_policy, thresholds_for
from kafka_health.diagnose.run import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.k8s.client import K8sError
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ActionType,
    CurrentRemediation,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    LastDiagnosis,
    PolicyError,
    epoch_millis_at_or_after,
    format_duration,
    parse_duration,
    parse_spec,
    parse_status,
)
from kafka_health.models.reasons import DegradedReason, ProblemReason
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import Decision, Verdict, cluster_key
from kafka_health.remediate.broker_pods import BrokerPodsError, find_broker_pods, find_node_pods
from kafka_health.report.status import CycleOutcome, Problem, status_after_cycle, status_patch
from kafka_health_spark import jobs
from kafka_health_spark.session import OUT_OF_MEMORY_EXIT_CODE, lost_connection

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_health.controller.roll_driver import RollDriver
    from kafka_health_spark.reuse import ReusedPlans
    from kafka_health_spark.slot_windows import SlotWindows
    from kafka_health_spark.windows import HistoryWindows

log = logging.getLogger(__name__)

MAINTENANCE_EVERY = timedelta(hours=1)
# A metadata read refused for a security reason (collect/security_errors.py) is not "unreachable".
_SECURITY_PROBLEMS = {
    security_errors.Kind.AUTHENTICATION: ProblemReason.KAFKA_AUTHENTICATION_FAILED,
    security_errors.Kind.TLS: ProblemReason.KAFKA_TLS_HANDSHAKE_FAILED,
    security_errors.Kind.PROTOCOL: ProblemReason.KAFKA_SECURITY_PROTOCOL_MISMATCH,
    security_errors.TlsCause.UNTRUSTED: ProblemReason.KAFKA_TLS_UNTRUSTED_CERTIFICATE,
    security_errors.TlsCause.HOSTNAME: ProblemReason.KAFKA_TLS_HOSTNAME_MISMATCH,
    security_errors.TlsCause.EXPIRED: ProblemReason.KAFKA_TLS_CERTIFICATE_EXPIRED,
    security_errors.TlsCause.CLIENT_REFUSED: ProblemReason.KAFKA_TLS_CLIENT_CERTIFICATE_REFUSED,
}
CANCEL_GRACE_S = 60.0
"""How long a cancelled diagnosis may take to stop before the driver is taken to be wedged."""
DRIVER_EXIT_WAIT_S = 10.0
"""How long a cycle that lost its connection to the Spark driver waits to see the JVM exit."""
FRESH_FOR = timedelta(seconds=5)
"""A cycle's snapshot younger than this counts as live for planning; older, planning reads again."""

OnEvent = Callable[[str, str, str], None]


@dataclass
class PolicyWorker:
    """The state one policy keeps between cycles (a connection, what Events were posted)."""

    runtime: Runtime
    namespace: str
    name: str
    admin: KafkaAdmin | None = None
    admin_key: str | None = None
    finding_keys: set[str] | None = None
    slow: bool | None = None
    """Whether the last reported cycle was slow (None: none reported yet); SlowCycle is posted on
    the change to slow."""
    last_reported: LastDiagnosis | None = None
    """status.lastDiagnosis as the latest cycle wrote it (None when it diagnosed nothing)."""
    last_maintenance: datetime | None = None
    secrets: list[str] = field(default_factory=list)
    last_snapshot: ClusterSnapshot | None = None
    last_diagnosis: Diagnosis | None = None
    busy: bool = False  # a cycle abandoned mid-way still runs in its thread
    roll: RollDriver | None = None
    windows: HistoryWindows | SlotWindows | None = None
    """The history windows kept between cycles (read from Parquet once): as rows in the driver
    JVM beside the policy's reused plans, else as Spark frames."""
    plans: ReusedPlans | None = None
    """The policy's check plans, built once and run each cycle (`kafka_health_spark.reuse`)."""
    status_lock: threading.RLock = field(default_factory=threading.RLock)
    status_version: str | None = None
    """resourceVersion of the status the cycle read (its writes are compare-and-swap on it)."""
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set when Kopf stops the policy's daemon (paused by peering, deleted, shutdown): no further step."""
    status_base: CurrentRemediation | None = None
    """status.currentRemediation as this cycle read or last wrote it."""
    status_stale: bool = False
    """Another process wrote remediation progress since the cycle read it: the cycle writes no more."""
    """Held for every read-modify-write of the policy's status (cycle and roll driver alike)."""
    roll_before: CurrentRemediation | None = None
    """status.currentRemediation of a roll in flight, read right before the cycle's snapshot."""
    cycle_snapshot: ClusterSnapshot | None = None
    """The snapshot the cycle's diagnosis came from (last_snapshot may be a newer, live one)."""

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
            return CycleOutcome(problem=Problem(ProblemReason.INVALID_SPEC, "; ".join(exc.messages)[:2000]))
        try:
            return self._run(spec)
        except Exception as exc:  # a bug or an unexpected client error: report, never crash the daemon
            if self.runtime.stopping.is_set():
                # Shutdown stopped Spark under a cycle that was still running: expected, no trace.
                log.info("cycle of %s/%s abandoned: the operator is stopping", self.namespace, self.name)
                return CycleOutcome(
                    problem=Problem(ProblemReason.CYCLE_FAILED, "the operator stopped during the cycle")
                )
            # A lost connection to the driver may be its JVM exiting: give it time to be gone.
            exit_code = self.runtime.spark_driver_exit(
                wait_s=DRIVER_EXIT_WAIT_S if lost_connection(exc) else 0.0
            )
            if exit_code is not None:
                return self._driver_lost(exit_code)
            log.exception("cycle of %s/%s failed", self.namespace, self.name)
            message = redact(f"{exc.__class__.__name__}: {exc}", self.secrets)[:1000]
            return CycleOutcome(problem=Problem(ProblemReason.CYCLE_FAILED, message))

    def _driver_lost(self, exit_code: int) -> CycleOutcome:
        """The embedded Spark driver JVM exited under the cycle (any policy's work may have used
        up its heap); the next cycle starts a new one (`Runtime.spark`)."""
        self.windows = None  # their frames lived in that JVM
        self.plans = None  # so did their slots and plans
        how = (
            "ran out of heap (exit code 3): raise --spark-driver-memory (chart: spark.driverMemory)"
            if exit_code == OUT_OF_MEMORY_EXIT_CODE
            else f"ended ({exit_reason(exit_code)}): if the kernel killed it, raise the pod's memory limit"
        )
        log.error("cycle of %s/%s lost its Spark driver: %s", self.namespace, self.name, how)
        return CycleOutcome(
            problem=Problem(
                ProblemReason.SPARK_DRIVER_LOST,
                f"The embedded Spark driver JVM {how}. The next cycle starts a new one.",
            )
        )

    def _run(self, spec: KafkaHealthPolicySpec) -> CycleOutcome:
        rt = self.runtime
        try:
            conn = connection_for(
                spec.cluster,
                self.namespace,
                rt.k8s.read_secret_value,
                policy_material_dir(rt.settings.work_dir, self.namespace, self.name),
            )
        except CredentialsError as exc:
            return CycleOutcome(problem=Problem(exc.reason, str(exc)))
        self.secrets = conn.secrets
        blockers: list[Problem] = []
        for spec_field, pods_spec in (
            ("spec.cluster.brokerPods", spec.cluster.broker_pods),
            ("spec.cluster.controllerPods", spec.cluster.controller_pods),
        ):
            if pods_spec is not None:
                try:
                    find_broker_pods(rt.k8s, pods_spec, self.namespace, field=spec_field)
                except BrokerPodsError as exc:
                    blockers.append(Problem(exc.reason, str(exc)))
        timeout_s = parse_duration(str(spec.cluster.request_timeout)).total_seconds()
        admin = self._admin_for(conn, timeout_s)
        self.roll_before = roll_in_flight(
            rt.k8s, self.namespace, self.name, rolling=self.rolling(), base=self.status_base
        )
        snapshot = collect_snapshot(admin, self.cluster_name, lambda: datetime.now(UTC))
        self.last_snapshot = self.cycle_snapshot = snapshot
        if not snapshot.reachable:
            reason = next((m.reason for m in snapshot.missing if m.part == "metadata"), "no answer")
            kind = security_errors.tls_cause(reason) or security_errors.kind_of(reason)
            return CycleOutcome(
                problem=Problem(
                    _SECURITY_PROBLEMS.get(kind, ProblemReason.KAFKA_UNREACHABLE)
                    if kind is not None
                    else ProblemReason.KAFKA_UNREACHABLE,
                    redact(f"Cannot read metadata from {conn.bootstrap_servers}: {reason}", self.secrets)[
                        :1000
                    ],
                ),
            )
        if zookeeper_mode(snapshot):
            return CycleOutcome(
                problem=Problem(
                    ProblemReason.KAFKA_ZOOKEEPER_MODE_UNSUPPORTED,
                    redact(f"{conn.bootstrap_servers}: {ZOOKEEPER_MODE}", self.secrets)[:1000],
                )
            )
        denied = [
            f"{m.part}: {m.reason}"
            for m in snapshot.missing
            if security_errors.kind_of(m.reason) is security_errors.Kind.AUTHORIZATION
        ]
        if denied:
            message = "; ".join(denied[:3]) + (f" (and {len(denied) - 3} more)" if len(denied) > 3 else "")
            blockers.append(Problem(DegradedReason.KAFKA_AUTHORIZATION_DENIED, message[:1000]))
        store = HistoryStore(rt.settings.history_dir)
        written = store.append(snapshot)
        spark = rt.spark()
        plans = self._plans_for(spark)
        windows = self._windows_for(spark, in_slots=plans is not None)
        tag = f"kafka-health-{uuid.uuid4().hex}"

        def diagnose() -> Diagnosis:
            with jobs.tagged(spark, tag):  # what the deadline cancels
                windows.record(written.tables, snapshot.taken_at)
                if self._maintain(store, spec, snapshot.taken_at):
                    windows.invalidate()  # retention and compaction rewrote the files: read them again
                return run_diagnosis(
                    snapshot,
                    rt.settings.history_dir,
                    thresholds_for(spec.diagnostics.checks),
                    spark,
                    windows=windows,
                    plans=plans,
                )

        try:
            diagnosis = run_with_deadline(
                diagnose,
                deadline_s=rt.settings.diagnosis_timeout_s,
                cancel=lambda: self._cancel(spark, tag, plans),
                grace_s=CANCEL_GRACE_S,
                name=f"diagnose-{self.namespace}/{self.name}",
            )
        except DeadlineExceeded as exc:
            return self._timed_out(exc, windows)
        diagnosis = for_policy(diagnosis, spec, snapshot)  # its checks, its roll's words, its incidents
        return CycleOutcome(diagnosis=diagnosis, remediation_blockers=tuple(blockers))

    @staticmethod
    def _cancel(spark: SparkSession, tag: str, plans: ReusedPlans | None) -> None:
        """Cancel the cycle's Spark jobs, and stop its reused plans, which run without jobs."""
        jobs.cancel(spark, tag)
        if plans is not None:
            plans.interrupt("the diagnosis ran past its deadline")

    def _windows_for(self, spark: SparkSession, *, in_slots: bool) -> HistoryWindows | SlotWindows:
        """The policy's kept windows, new when there are none or the session is a new one (the
        last driver JVM exited, and its rows with it): rows in the JVM that the reused plans
        read (`in_slots`), else Spark frames."""
        from kafka_health_spark.slot_windows import SlotWindows
        from kafka_health_spark.windows import HistoryWindows

        kind = SlotWindows if in_slots else HistoryWindows
        if self.windows is None or self.windows.spark is not spark or type(self.windows) is not kind:
            if self.windows is not None and self.windows.spark is spark:
                self.windows.invalidate()  # (a JVM that exited took the rows with it)
            self.windows = kind(spark, str(self.runtime.settings.history_dir), self.cluster_name)
        return self.windows

    def _plans_for(self, spark: SparkSession) -> ReusedPlans | None:
        """The policy's reused plans, new when there are none or the session is a new one; None
        where the session cannot reuse plans (Spark Connect, a cluster master, no plan jar)."""
        from kafka_health_spark import reuse

        if self.plans is None or self.plans.spark is not spark:
            self.plans = reuse.ReusedPlans(spark) if reuse.available(spark) else None
        return self.plans

    def _timed_out(self, exc: DeadlineExceeded, windows: HistoryWindows | SlotWindows) -> CycleOutcome:
        """A diagnosis past its deadline: its windows may be half-recorded, so they go (read from
        the history store again next cycle); a driver that did not stop fails the liveness probe."""
        self.windows = None
        plans, self.plans = self.plans, None  # a cancelled cycle may have half-filled its slots
        if exc.stuck:
            self.runtime.mark_unresponsive(
                f"the diagnosis of {self.namespace}/{self.name} did not stop within {CANCEL_GRACE_S:g}s of its cancel"
            )
        else:
            windows.invalidate()
            if plans is not None:
                plans.close()
        log.warning("diagnosis of %s/%s %s", self.namespace, self.name, exc)
        return CycleOutcome(
            problem=Problem(
                ProblemReason.DIAGNOSIS_TIMED_OUT,
                f"The diagnosis ran past the operator's --diagnosis-timeout of "
                f"{format_duration(timedelta(seconds=exc.deadline_s))}, and its Spark jobs were cancelled"
                + (
                    f"; they had not stopped {CANCEL_GRACE_S:g}s later, so the operator reports itself "
                    "unhealthy (/healthz) to be restarted."
                    if exc.stuck
                    else "."
                )
                + " A cluster this size may need a longer --diagnosis-timeout or a larger --spark-driver-memory.",
            )
        )

    def _maintain(self, store: HistoryStore, spec: KafkaHealthPolicySpec, now: datetime) -> bool:
        """Hourly: drop history past its retention and compact the day's small files (True: it ran)."""
        if self.last_maintenance is not None and now - self.last_maintenance < MAINTENANCE_EVERY:
            return False
        self.last_maintenance = now
        keep = parse_duration(str(spec.diagnostics.history_retention))
        started = time.monotonic()
        store.apply_retention(max(1, int(keep.total_seconds() // 86400)), now, cluster=self.cluster_name)
        store.compact(self.cluster_name)
        log.info("history maintenance of %s took %.2fs", self.cluster_name, time.monotonic() - started)
        return True

    # ------------------------------------------------------------------ after the diagnosis
    def finish_cycle(
        self,
        raw_spec: dict[str, Any],
        outcome: CycleOutcome,
        *,
        generation: int | None,
        top_n: int,
        on_event: OnEvent,
    ) -> CycleOutcome:
        """Report the cycle in status and remediate (blocking), under the policy's status lock:
        the stored status is read, the diagnosis applied, remediation planned, and all written,
        with no roll-driver write in between. Returns the outcome as reported (a roll's planned
        restarts applied), for the cycle's Events."""
        ns, name = self.namespace, self.name
        k8s = self.runtime.k8s
        persist = self.write_status
        with self.status_lock:
            # The status as stored now: an executor's last step may be newer than the watch event
            # (a stale status would make the planner resume a step already done).
            stored = k8s.read_policy(ns, name)
            if stored is None:
                return outcome  # deleted meanwhile
            self.status_read(stored)
            previous = parse_status(stored.get("status"))
            outcome = with_planned(
                outcome, self.roll_before, previous.current_remediation, self.cycle_snapshot
            )
            new_status = status_after_cycle(
                previous,
                outcome,
                now=datetime.now(UTC),
                generation=generation,
                top_n=top_n,
                interval=_interval(raw_spec),
            )
            self.last_reported = new_status.last_diagnosis if outcome.diagnosis is not None else None
            if outcome.diagnosis is not None and outcome.problem is None and not outcome.remediation_blockers:
                self.last_diagnosis = outcome.diagnosis
                if not self.rolling():
                    metadata = dict(stored.get("metadata") or {})
                    try:
                        new_status = self.remediate(
                            metadata, raw_spec, new_status, outcome.diagnosis, persist, on_event
                        )
                    except LeaseLost as exc:
                        # Another replica acts on the cluster now, from status: write nothing.
                        log.warning("remediation of %s/%s stopped: %s", ns, name, exc)
                        return outcome
                    except Stopped:
                        # Paused or stopping between two steps: the step under way is in status;
                        # the next active replica records the interruption and plans again.
                        log.info("remediation of %s/%s stopped before its next step", ns, name)
                        return outcome
                    except Exception:
                        log.exception("remediation of %s/%s failed; status keeps the diagnosis", ns, name)
            persist(new_status)
        return outcome

    def remediate_now(self, raw_spec: dict[str, Any], on_event: OnEvent) -> None:
        """Plan and act between cycles (the user changed a request, an approval, the mode): on
        live state, with the last diagnosis; nothing before the first cycle connected."""
        if self.admin is None or self.rolling():
            return
        try:
            parse_spec(raw_spec)
        except PolicyError:
            return  # the cycle reports InvalidSpec
        with self.status_lock:
            stored = self.runtime.k8s.read_policy(self.namespace, self.name)
            if stored is None or self.rolling():
                return
            self.status_read(stored)
            status = parse_status(stored.get("status"))
            metadata = dict(stored.get("metadata") or {})
            try:
                after = self.remediate(
                    metadata, raw_spec, status, self.last_diagnosis, self.write_status, on_event
                )
            except LeaseLost as exc:
                log.warning("remediation of %s/%s stopped: %s", self.namespace, self.name, exc)
                return
            except Stopped:
                log.info("remediation of %s/%s stopped before its next step", self.namespace, self.name)
                return
            self.write_status(after)

    def status_read(self, stored: dict[str, Any]) -> None:
        """The status this cycle's writes build on: its resourceVersion makes them compare-and-swap."""
        self.status_version = (stored.get("metadata") or {}).get("resourceVersion")
        self.status_base = parse_status(stored.get("status")).current_remediation
        self.status_stale = False

    def write_status(self, status: KafkaHealthPolicyStatus) -> None:
        """Write status now (the caller holds `status_lock`; inline executors call this after every
        step), as a compare-and-swap on the version read. When the policy changed since: written
        again over the new version if the remediation in flight is still the one this cycle read
        (a spec edit, Kopf's own annotations); dropped, with the cycle's later writes, when another
        replica's remediation progress is there (two replicas briefly active around a peering
        change): never laid over newer progress. The next cycle reads again."""
        if self.status_stale:
            return
        k8s = self.runtime.k8s
        for _ in range(3):
            try:
                self.status_version = k8s.patch_policy_status(
                    self.namespace, self.name, status_patch(status), self.status_version
                )
                self.status_base = status.current_remediation
                return
            except K8sError as exc:
                if exc.status != 409:
                    if exc.status != 404:
                        log.warning("status of %s/%s not written: %s", self.namespace, self.name, exc)
                    return
            try:
                stored = k8s.read_policy(self.namespace, self.name)
            except K8sError as exc:
                log.warning("status of %s/%s not written: %s", self.namespace, self.name, exc)
                return
            if stored is None:
                return
            if parse_status(stored.get("status")).current_remediation != self.status_base:
                break
            self.status_version = (stored.get("metadata") or {}).get("resourceVersion")
        self.status_stale = True
        log.info(
            "status of %s/%s: another writer's remediation progress is newer; not written this cycle",
            self.namespace,
            self.name,
        )

    # ------------------------------------------------------------------ rolls
    def rolling(self) -> bool:
        """A roll driver is running for this policy (it alone plans and acts until it stops)."""
        return self.roll is not None and self.roll.alive()

    def start_roll(self, on_event: OnEvent, first: tuple[Decision, KafkaHealthPolicyStatus] | None) -> None:
        from kafka_health.controller.roll_driver import RollDriver

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

    def guard(self) -> None:
        """Before an inline executor's next step: raise Stopped once the policy's work stopped."""
        if self.stopping.is_set():
            raise Stopped

    def stop_roll_soon(self) -> None:
        """Ask the roll driver to stop without waiting (from the event loop)."""
        if self.roll is not None:
            self.roll.stopping.set()

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

    def remediate(
        self,
        metadata: dict[str, Any],
        raw_spec: dict[str, Any],
        status: KafkaHealthPolicyStatus,
        diagnosis: Diagnosis | None,
        persist: Callable[[KafkaHealthPolicyStatus], None],
        on_event: OnEvent,
    ) -> KafkaHealthPolicyStatus:
        """Plan on live state and act: elections and offset resets here (short), a roll through
        its driver (started here, running beside the cycles until the roll ends)."""
        from kafka_health.controller.remediation import ActContext, act, decide

        spec = parse_spec(raw_spec)
        lock_settings = self.runtime.settings.lock
        admin = self.admin
        snapshot = self.live_snapshot()
        if admin is None or snapshot is None:
            return status

        def offsets_for_times(
            ts: datetime, partitions: list[tuple[str, int]]
        ) -> dict[tuple[str, int], int | None]:
            return dict(admin.offsets_for_times(partitions, epoch_millis_at_or_after(ts)).values)

        now = datetime.now(UTC)
        in_flight = status.current_remediation
        decision, status = decide(
            metadata=metadata,
            spec=spec,
            status=status,
            snapshot=snapshot,
            diagnosis=diagnosis,
            now=now,
            offsets_for_times=offsets_for_times,
            broker_pods_ready=self.broker_pods_ready(spec),
            lock=read_lock(self.runtime.k8s, lock_settings, cluster_key(spec.cluster, snapshot)),
            replica=lock_settings.replica,
        )
        rolling = in_flight is not None and in_flight.action is ActionType.ROLLING_RESTART
        starting = (
            decision.verdict is Verdict.ACT
            and decision.action is not None
            and decision.action.action is ActionType.ROLLING_RESTART
        )
        if rolling or starting:
            # The roll goes at the cluster's pace in its driver; a roll held by a choice (paused,
            # window) makes the driver stop at once, and the next cycle tries again.
            persist(status)
            self.start_roll(on_event, (decision, status) if starting and not rolling else None)
            return status
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
            lock=lock_settings,
            guard=self.guard,
        )
        return act(decision, status, ctx)


def _interval(raw_spec: dict[str, Any]) -> timedelta | None:
    """spec.diagnostics.interval (None when the spec is invalid: that cycle reports InvalidSpec)."""
    try:
        return parse_duration(parse_spec(raw_spec).diagnostics.interval)
    except PolicyError:
        return None
