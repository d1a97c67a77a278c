"""The cycle's seeing stages, in a worker thread: collect (credentials, the broker pods, a
snapshot from Kafka), history (the snapshot appended to Parquet), diagnose (Spark, under the
operator's --diagnosis-timeout).

Each returns a value; every expected failure is a `CycleOutcome` with a Problem, never an
exception, so one policy's trouble never reaches another's (`guarded`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from kafka_health._kits.deadline import DeadlineExceeded, run_with_deadline
from kafka_health.collect import security_errors
from kafka_health.collect.connection import redact
from kafka_health.collect.results import ZOOKEEPER_MODE
from kafka_health.collect.snapshot import collect_snapshot, zookeeper_mode
from kafka_health.controller.credentials import CredentialsError, connection_for, policy_material_dir
from kafka_health.controller.planned_roll import roll_in_flight
from kafka_health.controller.runtime import exit_reason
from kafka_health.diagnose.from_policy import for_policy, thresholds_for
from kafka_health.diagnose.run import run_diagnosis
from kafka_health.diagnose.unclean_stops import LastTermination, recovering_findings, unclean_stop_findings
from kafka_health.history.store import AppendResult, HistoryStore
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    CurrentRemediation,
    KafkaHealthPolicySpec,
    format_duration,
    parse_duration,
)
from kafka_health.models.policy.diagnostics import TimeLag
from kafka_health.models.reasons import DegradedReason, ProblemReason
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.remediate.broker_pods import BrokerPod, BrokerPodsError, find_broker_pods
from kafka_health.report.status import CycleOutcome, Problem
from kafka_health_spark import jobs, reuse
from kafka_health_spark.findings import sort_findings
from kafka_health_spark.session import OUT_OF_MEMORY_EXIT_CODE, lost_connection
from kafka_health_spark.slot_windows import SlotWindows
from kafka_health_spark.windows import HistoryWindows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_health.controller.worker import PolicyWorker
    from kafka_health_spark.reuse import ReusedPlans

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


@dataclass
class Collected:
    """What the collect stage read: the snapshot, and what blocks remediation only."""

    snapshot: ClusterSnapshot
    blockers: list[Problem]
    roll_before: CurrentRemediation | None
    """status.currentRemediation of a roll in flight, read right before the snapshot."""
    pods: dict[int, BrokerPod] = field(default_factory=dict)
    """The broker and controller pods the spec names (node id → pod), as found this cycle."""


@dataclass
class Seen:
    """What the seeing stages hand to the rest of the cycle."""

    outcome: CycleOutcome
    snapshot: ClusterSnapshot | None = None
    """The snapshot the diagnosis came from (worker.last_snapshot may be a newer, live one)."""
    roll_before: CurrentRemediation | None = None
    stage_seconds: tuple[tuple[str, float], ...] = ()
    """How long each seeing stage took, in order (the cycle's log line shows them)."""


@dataclass
class Secrets:
    """The values a failure's message must not show (filled by `collect` once it has them)."""

    values: list[str] = field(default_factory=list)


def guarded(worker: PolicyWorker, secrets: Secrets, stages: Callable[[], Seen]) -> Seen:
    """Run the seeing stages; a bug or an unexpected client error is reported, never raised."""
    try:
        return stages()
    except Exception as exc:  # never crash the daemon
        if worker.runtime.stopping.is_set():
            # Shutdown stopped Spark under a cycle that was still running: expected, no trace.
            log.info("cycle of %s/%s abandoned: the operator is stopping", worker.namespace, worker.name)
            return Seen(
                CycleOutcome(
                    problem=Problem(ProblemReason.CYCLE_FAILED, "the operator stopped during the cycle")
                )
            )
        # A lost connection to the driver may be its JVM exiting: give it time to be gone.
        exit_code = worker.runtime.spark_driver_exit(
            wait_s=DRIVER_EXIT_WAIT_S if lost_connection(exc) else 0.0
        )
        if exit_code is not None:
            return Seen(driver_lost(worker, exit_code))
        log.exception("cycle of %s/%s failed", worker.namespace, worker.name)
        message = redact(f"{exc.__class__.__name__}: {exc}", secrets.values)[:1000]
        return Seen(CycleOutcome(problem=Problem(ProblemReason.CYCLE_FAILED, message)))


def driver_lost(worker: PolicyWorker, exit_code: int) -> CycleOutcome:
    """The embedded Spark driver JVM exited under the cycle (any policy's work may have used
    up its heap); the next cycle starts a new one (`Runtime.spark`)."""
    worker.windows = None  # their frames lived in that JVM
    worker.plans = None  # so did their slots and plans
    how = (
        "ran out of heap (exit code 3): raise --spark-driver-memory (chart: spark.driverMemory)"
        if exit_code == OUT_OF_MEMORY_EXIT_CODE
        else f"ended ({exit_reason(exit_code)}): if the kernel killed it, raise the pod's memory limit"
    )
    log.error("cycle of %s/%s lost its Spark driver: %s", worker.namespace, worker.name, how)
    return CycleOutcome(
        problem=Problem(
            ProblemReason.SPARK_DRIVER_LOST,
            f"The embedded Spark driver JVM {how}. The next cycle starts a new one.",
        )
    )


# ---------------------------------------------------------------------------------------- collect
def collect(worker: PolicyWorker, spec: KafkaHealthPolicySpec, secrets: Secrets) -> Collected | CycleOutcome:
    """Credentials from the policy's Secrets, the broker pods found, one snapshot from Kafka."""
    rt = worker.runtime
    try:
        conn = connection_for(
            spec.cluster,
            worker.namespace,
            rt.k8s.read_secret_value,
            policy_material_dir(rt.settings.work_dir, worker.namespace, worker.name),
        )
    except CredentialsError as exc:
        return CycleOutcome(problem=Problem(exc.reason, str(exc)))
    secrets.values = conn.secrets
    blockers, pods = _node_pods(worker, spec)
    timeout_s = parse_duration(str(spec.cluster.request_timeout)).total_seconds()
    admin = worker.admin_for(conn, timeout_s)
    roll_before = roll_in_flight(
        rt.k8s, worker.namespace, worker.name, rolling=worker.rolling(), base=worker.remediation_seen
    )
    hanging = spec.diagnostics.checks.hanging_transactions
    snapshot = collect_snapshot(
        admin,
        worker.cluster_name,
        lambda: datetime.now(UTC),
        transactions_older_than=(
            timedelta(minutes=hanging.max_transaction_timeout_minutes) if hanging.enabled else None
        ),
        exact_lag=spec.diagnostics.checks.consumer_lag.time_lag is TimeLag.EXACT,
    )
    worker.last_snapshot = snapshot
    unusable = _unusable(snapshot, conn.bootstrap_servers, secrets)
    if unusable is not None:
        return CycleOutcome(problem=unusable)
    denied = [
        f"{m.part}: {m.reason}"
        for m in snapshot.missing
        if security_errors.kind_of(m.reason) is security_errors.Kind.AUTHORIZATION
    ]
    if denied:
        message = "; ".join(denied[:3]) + (f" (and {len(denied) - 3} more)" if len(denied) > 3 else "")
        blockers.append(Problem(DegradedReason.KAFKA_AUTHORIZATION_DENIED, message[:1000]))
    return Collected(snapshot=snapshot, blockers=blockers, roll_before=roll_before, pods=pods)


def _node_pods(
    worker: PolicyWorker, spec: KafkaHealthPolicySpec
) -> tuple[list[Problem], dict[int, BrokerPod]]:
    """The broker and controller pods the spec names, and those that cannot be found (a
    blocker: remediation is blocked)."""
    blockers: list[Problem] = []
    pods: dict[int, BrokerPod] = {}
    for spec_field, pods_spec in (
        ("spec.cluster.brokerPods", spec.cluster.broker_pods),
        ("spec.cluster.controllerPods", spec.cluster.controller_pods),
    ):
        if pods_spec is not None:
            try:
                pods |= find_broker_pods(worker.runtime.k8s, pods_spec, worker.namespace, field=spec_field)
            except BrokerPodsError as exc:
                blockers.append(Problem(exc.reason, str(exc)))
    return blockers, pods


def last_terminations(pods: dict[int, BrokerPod]) -> list[LastTermination]:
    """How each node's containers last ended inside its current pod (kafka_health.diagnose.unclean_stops)."""
    return [
        LastTermination(
            broker=node,
            pod=bp.pod.name,
            container=t.container,
            exit_code=t.exit_code,
            reason=t.reason,
            grace_period_seconds=bp.pod.grace_period_seconds,
            restart_count=t.restart_count,
            finished_at=t.finished_at,
        )
        for node, bp in sorted(pods.items())
        for t in bp.pod.terminations
    ]


def _unusable(snapshot: ClusterSnapshot, bootstrap: str, secrets: Secrets) -> Problem | None:
    """Why the snapshot cannot be diagnosed at all: metadata unread (named by its security
    cause), or a ZooKeeper-mode cluster."""
    if not snapshot.reachable:
        reason = next((m.reason for m in snapshot.missing if m.part == "metadata"), "no answer")
        kind = security_errors.tls_cause(reason) or security_errors.kind_of(reason)
        return Problem(
            _SECURITY_PROBLEMS.get(kind, ProblemReason.KAFKA_UNREACHABLE)
            if kind is not None
            else ProblemReason.KAFKA_UNREACHABLE,
            redact(f"Cannot read metadata from {bootstrap}: {reason}", secrets.values)[:1000],
        )
    if zookeeper_mode(snapshot):
        return Problem(
            ProblemReason.KAFKA_ZOOKEEPER_MODE_UNSUPPORTED,
            redact(f"{bootstrap}: {ZOOKEEPER_MODE}", secrets.values)[:1000],
        )
    return None


# ---------------------------------------------------------------------------------------- history
def record_history(worker: PolicyWorker, snapshot: ClusterSnapshot) -> AppendResult:
    """The snapshot appended to the history store (its changes only)."""
    return HistoryStore(worker.runtime.settings.history_dir).append(snapshot)


def _maintain(worker: PolicyWorker, spec: KafkaHealthPolicySpec, now: datetime) -> bool:
    """Hourly: drop history past its retention and compact the day's small files (True: it ran)."""
    if worker.last_maintenance is not None and now - worker.last_maintenance < MAINTENANCE_EVERY:
        return False
    worker.last_maintenance = now
    store = HistoryStore(worker.runtime.settings.history_dir)
    keep = parse_duration(str(spec.diagnostics.history_retention))
    started = time.monotonic()
    store.apply_retention(max(1, int(keep.total_seconds() // 86400)), now, cluster=worker.cluster_name)
    store.compact(worker.cluster_name)
    log.info("history maintenance of %s took %.2fs", worker.cluster_name, time.monotonic() - started)
    return True


# ---------------------------------------------------------------------------------------- diagnose
def diagnose(
    worker: PolicyWorker, spec: KafkaHealthPolicySpec, collected: Collected, written: AppendResult
) -> CycleOutcome:
    """Spark over the snapshot and the policy's history windows, cancelled past the deadline;
    the policy's view of it (its checks, its words, its incidents)."""
    rt = worker.runtime
    snapshot = collected.snapshot
    spark = rt.spark()
    plans = _plans_for(worker, spark)
    windows = _windows_for(worker, spark, in_slots=plans is not None)
    tag = f"kafka-health-{uuid.uuid4().hex}"

    def run() -> Diagnosis:
        with jobs.tagged(spark, tag):  # what the deadline cancels
            windows.record(written.tables, snapshot.taken_at)
            if _maintain(worker, spec, snapshot.taken_at):
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
            run,
            deadline_s=rt.settings.diagnosis_timeout_s,
            cancel=lambda: _cancel(spark, tag, plans),
            grace_s=CANCEL_GRACE_S,
            name=f"diagnose-{worker.namespace}/{worker.name}",
        )
    except DeadlineExceeded as exc:
        return timed_out(worker, exc, windows)
    running = {n: bp.pod.name for n, bp in collected.pods.items() if bp.pod.running and not bp.pod.deleting}
    unclean = unclean_stop_findings(last_terminations(collected.pods), snapshot.taken_at)
    unclean += recovering_findings(snapshot.brokers, running)
    if unclean:
        diagnosis = diagnosis.model_copy(update={"findings": sort_findings([*diagnosis.findings, *unclean])})
    diagnosis = for_policy(diagnosis, spec, snapshot)  # its checks, its roll's words, its incidents
    return CycleOutcome(diagnosis=diagnosis, remediation_blockers=tuple(collected.blockers))


def _cancel(spark: SparkSession, tag: str, plans: ReusedPlans | None) -> None:
    """Cancel the cycle's Spark jobs, and stop its reused plans, which run without jobs."""
    jobs.cancel(spark, tag)
    if plans is not None:
        plans.interrupt("the diagnosis ran past its deadline")


def _windows_for(
    worker: PolicyWorker, spark: SparkSession, *, in_slots: bool
) -> HistoryWindows | SlotWindows:
    """The policy's kept windows, new when there are none or the session is a new one (the
    last driver JVM exited, and its rows with it): rows in the JVM that the reused plans
    read (`in_slots`), else Spark frames."""
    kind = SlotWindows if in_slots else HistoryWindows
    kept = worker.windows
    if kept is None or kept.spark is not spark or type(kept) is not kind:
        if kept is not None and kept.spark is spark:
            kept.invalidate()  # (a JVM that exited took the rows with it)
        kept = worker.windows = kind(spark, str(worker.runtime.settings.history_dir), worker.cluster_name)
    return kept


def _plans_for(worker: PolicyWorker, spark: SparkSession) -> ReusedPlans | None:
    """The policy's reused plans, new when there are none or the session is a new one; None
    where the session cannot reuse plans (Spark Connect, a cluster master, no plan jar)."""
    if worker.plans is None or worker.plans.spark is not spark:
        worker.plans = reuse.ReusedPlans(spark) if reuse.available(spark) else None
    return worker.plans


def timed_out(
    worker: PolicyWorker, exc: DeadlineExceeded, windows: HistoryWindows | SlotWindows
) -> CycleOutcome:
    """A diagnosis past its deadline: its windows may be half-recorded, so they go (read from
    the history store again next cycle); a driver that did not stop fails the liveness probe."""
    worker.windows = None
    plans, worker.plans = worker.plans, None  # a cancelled cycle may have half-filled its slots
    if exc.stuck:
        worker.runtime.mark_unresponsive(
            f"the diagnosis of {worker.namespace}/{worker.name} did not stop within {CANCEL_GRACE_S:g}s of its cancel"
        )
    else:
        windows.invalidate()
        if plans is not None:
            plans.close()
    log.warning("diagnosis of %s/%s %s", worker.namespace, worker.name, exc)
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
