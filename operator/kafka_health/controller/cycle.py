"""One policy's cycle, start to end, in a worker thread (Kafka, Spark and the Kubernetes API
block):

    parse the spec once → collect → history → diagnose → plan → act → report

`run_cycle` is the whole of it. Each stage returns a value: the seeing stages a `Seen`
(`controller/observe.py`), planning and acting the status to write (`controller/remediation.py`;
a roll goes to its driver, `controller/roll_driver.py`), the report a `CycleReport` of Events
and metric updates (`controller/cycle_report.py`) that the Kopf handler applies on the event
loop. The status is written here, under the policy's status lock, because the roll driver
writes the same object from its own thread: the read, the diagnosis, the plan and the write
happen with no driver write in between.

A cycle never raises for a problem the policy should report (bad reference, unreachable
cluster): that is a Problem in the outcome, so one policy's trouble never reaches another's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.controller.act_context import ActContext, OnEvent, Stopped
from kafka_health.controller.cluster_lease import LeaseLost, read_lock
from kafka_health.controller.cycle_report import CycleReport, log_cycle, report_cycle
from kafka_health.controller.observe import Secrets, Seen, collect, diagnose, guarded, record_history
from kafka_health.controller.planned_roll import with_planned
from kafka_health.controller.remediation import act, decide
from kafka_health.controller.status_writer import StatusWriter
from kafka_health.controller.worker import PolicyWorker
from kafka_health.k8s.client import K8sError
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ActionType,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    LastDiagnosis,
    PolicyError,
    epoch_millis_at_or_after,
    parse_duration,
    parse_spec,
)
from kafka_health.models.reasons import ProblemReason
from kafka_health.plan import Verdict, cluster_key
from kafka_health.report.status import CycleOutcome, Problem, status_after_cycle

__all__ = ["CycleGate", "PolicyWorker", "interval_seconds", "remediate_now", "run_cycle"]

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_INTERVAL = timedelta(seconds=60)
DEFAULT_TOP_FINDINGS = 10


@dataclass
class CycleGate:
    """Between a cycle's thread and its daemon: a cycle stopped while it still sees is dropped
    (its result is not reported); one already settling (writing status, acting) is awaited,
    and its executors stop before their next step."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: bool = False
    settling: bool = False

    def enter_settling(self) -> bool:
        """From the cycle's thread: False once the daemon stopped (report nothing)."""
        with self._lock:
            self.settling = not self.stopped
            return self.settling

    def stop(self) -> bool:
        """From the daemon: True when the cycle is settling already (await it)."""
        with self._lock:
            self.stopped = True
            return self.settling


@dataclass(frozen=True)
class Settled:
    """What planning and acting left: the outcome as reported (a roll's planned restarts
    applied) and the status written, with its lastDiagnosis."""

    outcome: CycleOutcome
    status: KafkaHealthPolicyStatus | None
    last_diagnosis: LastDiagnosis | None


def run_cycle(
    worker: PolicyWorker,
    raw_spec: Mapping[str, Any],
    *,
    generation: int | None,
    on_event: OnEvent,
    gate: CycleGate | None = None,
) -> CycleReport | None:
    """One cycle (blocking). None: nothing to report (stopped mid-way, the policy unreadable)."""
    started = time.monotonic()
    spec = parse(raw_spec)
    seen = see(worker, spec)
    if gate is not None and not gate.enter_settling():
        return None  # stopped while it saw: the daemon has gone; the result is dropped
    duration_s = time.monotonic() - started
    valid = spec if isinstance(spec, KafkaHealthPolicySpec) else None
    try:
        with worker.status_lock:
            settled = settle(worker, valid, seen, generation=generation, on_event=on_event)
    except K8sError as exc:
        log.warning("cannot read %s/%s: %s", worker.namespace, worker.name, exc)
        return None
    log_cycle(worker.namespace, worker.name, settled.outcome, duration_s, seen.stage_seconds)
    report = report_cycle(
        worker.reported,
        settled.outcome,
        written=settled.last_diagnosis,
        duration_s=duration_s,
        interval=_interval(valid) or DEFAULT_INTERVAL,
        now=datetime.now(UTC),
        unix_now=time.time(),
        status=settled.status,
    )
    worker.reported = report.reported
    return report


def parse(raw_spec: Mapping[str, Any]) -> KafkaHealthPolicySpec | Problem:
    """The spec, parsed once per cycle; an invalid one is the cycle's Problem."""
    try:
        return parse_spec(dict(raw_spec))
    except PolicyError as exc:
        return Problem(ProblemReason.INVALID_SPEC, "; ".join(exc.messages)[:2000])


def see(worker: PolicyWorker, spec: KafkaHealthPolicySpec | Problem) -> Seen:
    """collect → history → diagnose; any failure is the outcome's Problem."""
    if isinstance(spec, Problem):
        return Seen(CycleOutcome(problem=spec))
    secrets = Secrets()

    def stages() -> Seen:
        took = _StageClock()
        collected = took("collect", collect, worker, spec, secrets)
        if isinstance(collected, CycleOutcome):
            return Seen(collected, stage_seconds=took.seconds())
        written = took("history", record_history, worker, collected.snapshot)
        outcome = took("diagnose", diagnose, worker, spec, collected, written)
        return Seen(
            outcome,
            snapshot=collected.snapshot,
            roll_before=collected.roll_before,
            stage_seconds=took.seconds(),
        )

    return guarded(worker, secrets, stages)


class _StageClock:
    """Runs a stage and keeps how long it took."""

    def __init__(self) -> None:
        self._seconds: list[tuple[str, float]] = []

    def __call__(self, name: str, stage: Callable[..., T], *args: Any) -> T:
        started = time.monotonic()
        try:
            return stage(*args)
        finally:
            self._seconds.append((name, time.monotonic() - started))

    def seconds(self) -> tuple[tuple[str, float], ...]:
        return tuple(self._seconds)


def settle(
    worker: PolicyWorker,
    spec: KafkaHealthPolicySpec | None,
    seen: Seen,
    *,
    generation: int | None,
    on_event: OnEvent,
) -> Settled:
    """The status as stored now (an executor's last step may be newer than the watch event:
    a stale status would make the planner resume a step already done), the diagnosis applied,
    remediation planned and acted on, all written. The caller holds the status lock."""
    k8s = worker.runtime.k8s
    stored = k8s.read_policy(worker.namespace, worker.name)
    if stored is None:  # deleted meanwhile
        return Settled(seen.outcome, None, worker.reported.last_diagnosis)
    writer = StatusWriter(k8s, worker.namespace, worker.name)
    previous = writer.read_from(stored)
    outcome = with_planned(seen.outcome, seen.roll_before, previous.current_remediation, seen.snapshot)
    status = status_after_cycle(
        previous,
        outcome,
        now=datetime.now(UTC),
        generation=generation,
        top_n=spec.diagnostics.top_findings if spec is not None else DEFAULT_TOP_FINDINGS,
        interval=_interval(spec),
    )
    written = status.last_diagnosis if outcome.diagnosis is not None else None
    try:
        if spec is not None and outcome.diagnosis is not None and remediable(outcome):
            worker.last_diagnosis = outcome.diagnosis
            if not worker.rolling():
                metadata = dict(stored.get("metadata") or {})
                after = act_safely(worker, metadata, spec, status, outcome.diagnosis, writer, on_event)
                if after is None:
                    return Settled(outcome, None, written)
                status = after
        writer.write(status)
        return Settled(outcome, status, written)
    finally:
        worker.remediation_seen = writer.base


def remediable(outcome: CycleOutcome) -> bool:
    """A diagnosis remediation may act on: no problem, nothing blocking remediation."""
    return outcome.problem is None and not outcome.remediation_blockers


def act_safely(
    worker: PolicyWorker,
    metadata: dict[str, Any],
    spec: KafkaHealthPolicySpec,
    status: KafkaHealthPolicyStatus,
    diagnosis: Diagnosis,
    writer: StatusWriter,
    on_event: OnEvent,
) -> KafkaHealthPolicyStatus | None:
    """plan → act; None when nothing more may be written (the Lease lost, the work stopped)."""
    try:
        return plan_and_act(worker, metadata, spec, status, diagnosis, writer.write, on_event)
    except LeaseLost as exc:
        # Another replica acts on the cluster now, from status: write nothing.
        log.warning("remediation of %s/%s stopped: %s", worker.namespace, worker.name, exc)
        return None
    except Stopped:
        # Paused or stopping between two steps: the step under way is in status; the next
        # active replica records the interruption and plans again.
        log.info("remediation of %s/%s stopped before its next step", worker.namespace, worker.name)
        return None
    except Exception:
        log.exception(
            "remediation of %s/%s failed; status keeps the diagnosis", worker.namespace, worker.name
        )
        return status


def plan_and_act(
    worker: PolicyWorker,
    metadata: dict[str, Any],
    spec: KafkaHealthPolicySpec,
    status: KafkaHealthPolicyStatus,
    diagnosis: Diagnosis | None,
    persist: Callable[[KafkaHealthPolicyStatus], None],
    on_event: OnEvent,
) -> KafkaHealthPolicyStatus:
    """Plan on live state and act: elections and offset resets here (short), a roll through
    its driver (started here, running beside the cycles until the roll ends)."""
    admin = worker.admin
    snapshot = worker.live_snapshot()
    if admin is None or snapshot is None:
        return status
    lock_settings = worker.runtime.settings.lock
    in_flight = status.current_remediation
    decision, status = decide(
        metadata=metadata,
        spec=spec,
        status=status,
        snapshot=snapshot,
        diagnosis=diagnosis,
        now=datetime.now(UTC),
        offsets_for_times=_offsets_for_times(admin),
        broker_pods_ready=worker.broker_pods_ready(spec),
        lock=read_lock(worker.runtime.k8s, lock_settings, cluster_key(spec.cluster, snapshot)),
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
        worker.start_roll(on_event, (decision, status) if starting and not rolling else None)
        return status
    if not decision.acts:
        return status
    persist(status)
    ctx = ActContext(
        metadata=metadata,
        spec=spec,
        snapshot=snapshot,
        admin=admin,
        k8s=worker.runtime.k8s,
        persist=persist,
        clock=lambda: datetime.now(UTC),
        on_event=on_event,
        lock=lock_settings,
        guard=worker.guard,
    )
    return act(decision, status, ctx)


def remediate_now(worker: PolicyWorker, raw_spec: Mapping[str, Any], on_event: OnEvent) -> None:
    """Plan and act between cycles (the user changed a request, an approval, the mode): on
    live state, with the last diagnosis; nothing before the first cycle connected."""
    if worker.admin is None or worker.rolling():
        return
    spec = parse(raw_spec)
    if isinstance(spec, Problem):
        return  # the cycle reports InvalidSpec
    with worker.status_lock:
        stored = worker.runtime.k8s.read_policy(worker.namespace, worker.name)
        if stored is None or worker.rolling():
            return
        writer = StatusWriter(worker.runtime.k8s, worker.namespace, worker.name)
        status = writer.read_from(stored)
        metadata = dict(stored.get("metadata") or {})
        try:
            after = plan_and_act(
                worker, metadata, spec, status, worker.last_diagnosis, writer.write, on_event
            )
        except LeaseLost as exc:
            log.warning("remediation of %s/%s stopped: %s", worker.namespace, worker.name, exc)
            return
        except Stopped:
            log.info("remediation of %s/%s stopped before its next step", worker.namespace, worker.name)
            return
        finally:
            worker.remediation_seen = writer.base
        writer.write(after)
        worker.remediation_seen = writer.base


def interval_seconds(raw_spec: Mapping[str, Any], *, rolling: bool = False) -> float:
    """spec.diagnostics.interval in seconds, for the daemon's wait (60 when the spec is invalid);
    while a roll is in flight, rollingRestart.diagnosisInterval when that is longer (the roll's
    brokers get the CPU; the roll re-checks safety on live state by itself)."""
    spec = parse(raw_spec)
    valid = spec if isinstance(spec, KafkaHealthPolicySpec) else None
    seconds = (_interval(valid) or DEFAULT_INTERVAL).total_seconds()
    if rolling and valid is not None:
        during = parse_duration(valid.remediation.rolling_restart.diagnosis_interval).total_seconds()
        seconds = max(seconds, during)
    return seconds


def _interval(spec: KafkaHealthPolicySpec | None) -> timedelta | None:
    """spec.diagnostics.interval (None when the spec is invalid: that cycle reports InvalidSpec)."""
    return parse_duration(spec.diagnostics.interval) if spec is not None else None


def _offsets_for_times(
    admin: KafkaAdmin,
) -> Callable[[datetime, list[tuple[str, int]]], dict[tuple[str, int], int | None]]:
    """The offsets at or after a time, read from Kafka (for offset resets to a timestamp)."""

    def offsets_for_times(
        ts: datetime, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int | None]:
        return dict(admin.offsets_for_times(partitions, epoch_millis_at_or_after(ts)).values)

    return offsets_for_times
