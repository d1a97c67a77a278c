"""The rolling-restart executor: restarts ONE broker per call, resumable from status.

Design (docs/design.md, "Safety rules"; docs/remediation-rolling-restart.md), for one broker:

    CheckingSafety → DeletingPod → WaitingPodReady → WaitingBrokerRegistered → WaitingUrpZero → Done

`restart_broker` runs that as the numbered steps of `broker_restart.py`: two acting steps
(CheckingSafety on a fresh LIVE snapshot, DeletingPod with the pod's uid recorded first) and a
table of waits, {step: (ready predicate, timeout field, next step)}, driven by one wait helper
that raises `StepFailed(step, reason)`. Every step is written through `persist` BEFORE it acts,
so an operator restarted mid-step resumes at that step (`current`) and never restarts a broker
twice; each wait's timeout counts from the step's persisted start (a resume gets no fresh
timeout). A timeout or a failure returns outcome `failed`: the caller halts the roll (Degraded,
an Event) and touches no other broker. A restart an earlier, halted roll began (`restartBegun`)
is checked for health, not repeated. Dedicated controllers' pods are found with
`controller_pods` (their own StatefulSet or selector); every step is the same for them.

`run_roll` loops over the nodes for the CLI, tests and bench: one at a time, in
`order_brokers` order (dedicated controllers first) recomputed before each node, pausing between
brokers, halting on the first failure, then (optionally) a preferred leader election for the
restarted brokers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import (
    ActionType,
    BrokerPods,
    CurrentRemediation,
    RemediationStep,
    RequestState,
    RestartBegun,
    RestartTimeouts,
    RollingRestartResult,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.decision import RestartStep
from kafka_health.plan.restart_resume import begun_for
from kafka_health.plan.restart_safety import (
    MAX_VOTER_LAG,
    MAX_VOTER_LAG_MS,
    check_restart_safety,
    controller_only_nodes,
    order_brokers,
)
from kafka_health.plan.roll_batches import BatchBy, plan_batches
from kafka_health.remediate.batch_restart import restart_batch, resume_batch
from kafka_health.remediate.broker_restart import POLL_SECONDS as POLL_SECONDS
from kafka_health.remediate.broker_restart import WAITS as WAITS
from kafka_health.remediate.broker_restart import BrokerRestart, RollEnv, drive
from kafka_health.remediate.broker_restart import BrokerRestartOutcome as BrokerRestartOutcome
from kafka_health.remediate.broker_restart import OutcomeKind as OutcomeKind
from kafka_health.remediate.broker_restart import StepFailed as StepFailed
from kafka_health.remediate.leader_election import ElectionOutcome
from kafka_health.remediate.roll_checks import broker_registered as broker_registered
from kafka_health.remediate.roll_checks import fully_replicated as fully_replicated
from kafka_health.remediate.roll_checks import is_controller
from kafka_health.remediate.roll_checks import node_back as node_back
from kafka_health.remediate.roll_checks import pod_uid_of as pod_uid_of
from kafka_health.remediate.roll_checks import pods_one_at_a_time as pods_one_at_a_time
from kafka_health.remediate.roll_end import finish_roll as finish_roll  # the roll's end: roll_end.py
from kafka_health.remediate.roll_end import halted_result as halted_result
from kafka_health.remediate.roll_end import roll_record as roll_record

Clock = Callable[[], datetime]
Sleep = Callable[[float], None]
Persist = Callable[[CurrentRemediation], None]
log = logging.getLogger(__name__)

Step = RemediationStep
"""The executor's steps (status.currentRemediation.step): the one step enum of every executor."""


def _now_utc() -> datetime:
    return datetime.now(UTC)


# ============================================================================ one broker
def restart_broker(
    step: RestartStep | None,
    *,
    k8s: K8s,
    admin: KafkaAdmin,
    pods_spec: BrokerPods,
    namespace: str,
    timeouts: RestartTimeouts,
    current: CurrentRemediation | None,
    persist: Persist,
    clock: Clock = _now_utc,
    sleep: Sleep = time.sleep,
    plan_id: str | None = None,
    cluster_name: str = "kafka",
    max_voter_lag: int = MAX_VOTER_LAG,
    max_voter_lag_ms: int = MAX_VOTER_LAG_MS,
    refuse_never_safe: bool = False,
    guard: Callable[[], None] = lambda: None,
    controller_pods: BrokerPods | None = None,
    begun: RestartBegun | None = None,
    drain_leadership: bool = False,
) -> BrokerRestartOutcome:
    """Restart one broker of a roll, or continue the one in flight (the steps: `broker_restart.py`).

    - Verdict ACT: `step` is the planner's RestartStep; `current` is status.currentRemediation
      (None for the first broker of a roll; `plan_id` then names the plan).
    - Verdict RESUME with `current.current_broker` set: `step` may be None; the broker, the
      step reached and the pod uid come from `current`.

    `guard()` runs right before the pod delete (the one step that touches the cluster); it raises
    (the operator's LeaseLost, the roll driver's Stopped) to stop the roll there, nothing half done.
    `controller_pods`: where the dedicated controllers' pods are (None: no controller in the roll).
    `begun`: a restart an earlier, halted roll began (its pod deleted, not confirmed healthy):
    when it names this broker and its pod is no longer the one deleted, the broker is not
    restarted again: it starts at WaitingPodReady, its health check (`resume_step`).
    """
    broker, at, base = _in_flight(step, current, plan_id, clock())
    planned = list(base.brokers_planned or ([] if step is None else list(step.done) + list(step.order)))
    done = list(base.brokers_done or [])
    env = RollEnv(
        k8s=k8s,
        admin=admin,
        pods_spec=pods_spec,
        namespace=namespace,
        timeouts=timeouts,
        persist=persist,
        clock=clock,
        sleep=sleep,
        cluster_name=cluster_name,
        max_voter_lag=max_voter_lag,
        max_voter_lag_ms=max_voter_lag_ms,
        refuse_never_safe=refuse_never_safe,
        guard=guard,
        controller_pods=controller_pods,
        drain_leadership=drain_leadership,
    )
    role = "controller" if is_controller(k8s, controller_pods, namespace, broker) else "broker"
    run = BrokerRestart(
        env=env,
        broker=broker,
        who=f"{role} {broker}",
        state=base,
        planned=planned,
        done=done,
        old_uid=pod_uid_of(base) if at is not Step.CHECKING_SAFETY else None,
        drains=drain_leadership and role == "broker",
    )
    remaining = [b for b in planned if b not in done] or [broker]
    return drive(run, at, remaining=remaining, begun=begun)


def _in_flight(
    step: RestartStep | None, current: CurrentRemediation | None, plan_id: str | None, now: datetime
) -> tuple[int, RemediationStep, CurrentRemediation]:
    """(the broker, the step to start at, the state to build on): the broker in flight at its
    persisted step, else the planner's next broker at CheckingSafety (a new roll's state made)."""
    if current is not None and current.current_broker is not None:
        if step is not None and step.next_broker != current.current_broker:
            raise ValueError(
                f"step names broker {step.next_broker} but broker {current.current_broker} is in flight"
            )
        return current.current_broker, Step(current.step), current
    if step is None:
        raise ValueError("restart_broker needs a RestartStep when no broker is in flight")
    if current is not None:
        return step.next_broker, Step.CHECKING_SAFETY, current
    base = CurrentRemediation(
        action=ActionType.ROLLING_RESTART,
        id=step.request_id,
        plan_id=plan_id or f"roll-{step.request_id}",
        step=Step.CHECKING_SAFETY,
        started_at=now,
        brokers_planned=list(step.done) + list(step.order),
        brokers_done=list(step.done),
        never_safe_partitions=list(step.never_safe) or None,
        never_safe_count=step.never_safe_count or None,
    )
    return step.next_broker, Step.CHECKING_SAFETY, base


# ============================================================================ the whole roll
@dataclass
class RollReport:
    """What `run_roll` did: the result to record under the request id, and each broker's outcome."""

    result: RollingRestartResult
    outcomes: list[BrokerRestartOutcome] = field(default_factory=list)
    election: ElectionOutcome | None = None
    current: CurrentRemediation | None = None

    @property
    def ok(self) -> bool:
        return self.result.state is RequestState.SUCCEEDED


def live_snapshot(admin: KafkaAdmin, cluster_name: str = "kafka", clock: Clock = _now_utc) -> ClusterSnapshot:
    return collect_snapshot(admin, cluster_name, clock)


def next_step(
    snapshot: ClusterSnapshot,
    request_id: str,
    planned: Sequence[int],
    done: Sequence[int],
    *,
    post_roll_election: bool = True,
    max_voter_lag: int = MAX_VOTER_LAG,
    max_voter_lag_ms: int = MAX_VOTER_LAG_MS,
) -> RestartStep | None:
    """The planner's rule for the next broker (order recomputed on live state); None when all are done."""
    remaining = [b for b in planned if b not in done]
    if not remaining:
        return None
    order = order_brokers(snapshot, remaining)
    safety = check_restart_safety(
        snapshot, order[0], remaining=order, max_voter_lag=max_voter_lag, max_voter_lag_ms=max_voter_lag_ms
    )
    return RestartStep(
        request_id=request_id,
        order=order,
        done=list(done),
        next_broker=order[0],
        safety=safety,
        post_roll_election=post_roll_election,
    )


def run_roll(
    request_id: str,
    brokers: Sequence[int] | None,
    *,
    k8s: K8s,
    admin: KafkaAdmin,
    pods_spec: BrokerPods,
    namespace: str,
    timeouts: RestartTimeouts | None = None,
    pause: timedelta = timedelta(seconds=30),
    post_roll_election: bool = True,
    election_batch_size: int = 100,
    current: CurrentRemediation | None = None,
    persist: Persist = lambda _c: None,
    clock: Clock = _now_utc,
    sleep: Sleep = time.sleep,
    cluster_name: str = "kafka",
    on_broker: Callable[[BrokerRestartOutcome], None] | None = None,
    guard: Callable[[], None] = lambda: None,
    controller_pods: BrokerPods | None = None,
    refuse_never_safe: bool = False,
    begun: Sequence[RestartBegun] = (),
    drain_leadership: bool = False,
    max_concurrent: int = 1,
    batch_by: BatchBy = "Rack",
) -> RollReport:
    """Restart `brokers` (node ids; None: every broker in the metadata, and with
    `controller_pods` every dedicated controller too) one at a time; halt on the first failure.
    `guard()` runs right before each pod delete and each election batch (the CLI's cluster Lease).
    `refuse_never_safe`: the live re-check before each node refuses one holding a partition with
    RF <= min.insync.replicas (the CLI's `--never-safe refuse`). `begun`: restarts an earlier,
    halted roll began: those brokers get their health check, not a second restart (`restart_broker`).
    `max_concurrent` > 1: brokers go in batches (`plan.roll_batches`, `batch_by` Rack or None),
    each checked again live and restarted together (`batch_restart.restart_batch`); a batch the
    live check refuses goes one broker at a time.

    With `current` (a persisted roll), continue it: the broker in flight first, without deleting
    its pod again, then the brokers not yet done. An `unsafe` live re-check halts the roll
    (state Blocked) without touching anything: this standalone loop does not wait for safety.
    """
    started = current.started_at if current is not None else clock()
    snapshot = collect_snapshot(admin, cluster_name, clock)
    planned, done = _roll_nodes(snapshot, brokers, current, controller_pods)
    report = _running(request_id, done, started, current)
    nodes = {x.id for x in snapshot.brokers} | controller_only_nodes(snapshot)
    if unknown := [b for b in planned if b not in nodes]:
        message = f"node(s) {', '.join(map(str, unknown))} not in the cluster"
        return _ended(report, RequestState.FAILED, message, done, clock)
    env = RollEnv(
        k8s, admin, pods_spec, namespace, timeouts or RestartTimeouts(), persist, clock, sleep, cluster_name,
        max_voter_lag=MAX_VOTER_LAG, max_voter_lag_ms=MAX_VOTER_LAG_MS, refuse_never_safe=refuse_never_safe, guard=guard,
        controller_pods=controller_pods, drain_leadership=drain_leadership,
    )  # fmt: skip
    restart = restarter(env, f"roll-{request_id}", begun, max_concurrent=max_concurrent, batch_by=batch_by)

    def next_broker(done: list[int]) -> RestartStep | None:
        _pause_between(report.current, done, planned, pause, clock, sleep)
        live = collect_snapshot(admin, cluster_name, clock)
        return next_step(live, request_id, planned, done, post_roll_election=post_roll_election)

    if (halted := _each_broker(report, restart, next_broker, done, on_broker, clock)) is not None:
        return halted
    assert report.current is not None
    report.result, report.election = finish_roll(
        report.current,
        admin=admin,
        post_roll_election=post_roll_election,
        election_batch_size=election_batch_size,
        cluster_name=cluster_name,
        clock=clock,
        guard=guard,
    )
    return report


OnBatch = Callable[[list[int], str], None]
"""Told (members, why) right before a batch is restarted together: the BatchStarted Event."""


def restarter(
    env: RollEnv,
    plan_id: str,
    begun: Sequence[RestartBegun],
    *,
    max_concurrent: int = 1,
    batch_by: BatchBy = "Rack",
    on_batch: OnBatch | None = None,
) -> Callable[..., BrokerRestartOutcome]:
    """`restart(step, current=...)` for a roll: one broker (`restart_broker`), or with
    `max_concurrent` > 1 the batch of the planner's next broker (`_batch_or_one`); a batch in
    flight in `current` is continued (`resume_batch`) whatever `max_concurrent` says now.
    A broker among `begun` (restarts an earlier, halted roll began) goes alone, for its health
    check, and joins no batch."""
    one = partial(
        restart_broker,
        k8s=env.k8s,
        admin=env.admin,
        pods_spec=env.pods_spec,
        namespace=env.namespace,
        timeouts=env.timeouts,
        persist=env.persist,
        clock=env.clock,
        sleep=env.sleep,
        plan_id=plan_id,
        cluster_name=env.cluster_name,
        guard=env.guard,
        controller_pods=env.controller_pods,
        refuse_never_safe=env.refuse_never_safe,
        drain_leadership=env.drain_leadership,
    )

    def restart(step: RestartStep | None, *, current: CurrentRemediation | None) -> BrokerRestartOutcome:
        return one(step, current=current, begun=begun_for(begun, step.next_broker) if step else None)

    return partial(_batch_or_one, restart, env, plan_id, max_concurrent, batch_by, on_batch, begun)


def _batch_or_one(
    restart: Callable[..., BrokerRestartOutcome],
    env: RollEnv,
    plan_id: str,
    max_concurrent: int,
    batch_by: BatchBy,
    on_batch: OnBatch | None,
    begun: Sequence[RestartBegun],
    step: RestartStep | None,
    *,
    current: CurrentRemediation | None,
) -> BrokerRestartOutcome:
    """The batch of the planner's next broker (`plan_batches` on live state), restarted together;
    one broker as before when it goes alone, is in flight, or the batch's live check refuses."""
    if current is not None and current.current_broker is not None and current.batch:
        return resume_batch(current, env=env)
    if max_concurrent < 2 or step is None or (current is not None and current.current_broker is not None):
        return restart(step, current=current)
    again = {b.broker for b in begun}
    if step.next_broker in again:
        return restart(step, current=current)
    live = collect_snapshot(env.admin, env.cluster_name, env.clock, safety_only=True)
    order = [b for b in step.order if b not in again]
    plan = plan_batches(live, order, max_concurrent=max_concurrent, batch_by=batch_by)
    batch = next((b for b in plan.batches if step.next_broker in b.nodes), None)
    if batch is None or len(batch.nodes) < 2:
        return restart(step, current=current)
    _, _, base = _in_flight(step, current, plan_id, env.clock())
    if on_batch is not None:
        on_batch(list(batch.nodes), batch.why)
    out = restart_batch(
        list(batch.nodes),
        env=env,
        current=base,
        planned=list(base.brokers_planned or []),
        done=list(base.brokers_done or []),
        remaining=list(step.order),
    )
    if out.result == "unsafe":
        log.info("batch %s refused on live state (%s): one broker at a time", batch.nodes, out.message)
        return restart(step, current=current)
    return out


def _running(
    request_id: str, done: list[int], started: datetime, current: CurrentRemediation | None
) -> RollReport:
    result = RollingRestartResult(
        id=request_id, state=RequestState.RUNNING, brokers_done=list(done), started_at=started
    )
    return RollReport(result=result, current=current)


def _roll_nodes(
    snapshot: ClusterSnapshot,
    brokers: Sequence[int] | None,
    current: CurrentRemediation | None,
    controller_pods: BrokerPods | None,
) -> tuple[list[int], list[int]]:
    """(planned, done): a persisted roll's, or a new roll's order of `brokers` (None: every
    broker, and with `controller_pods` every dedicated controller)."""
    if current is not None:
        return list(current.brokers_planned or []), list(current.brokers_done or [])
    known = sorted(b.id for b in snapshot.brokers)
    if controller_pods is not None:
        known += sorted(controller_only_nodes(snapshot))
    return order_brokers(snapshot, brokers if brokers is not None else known), []


def _pause_between(
    current: CurrentRemediation | None,
    done: Sequence[int],
    planned: Sequence[int],
    pause: timedelta,
    clock: Clock,
    sleep: Sleep,
) -> None:
    """Sleep out the pause after the last broker finished, when another broker is left."""
    if not done or current is None or not current.last_broker_finished_at:
        return
    wait = (current.last_broker_finished_at + pause - clock()).total_seconds()
    if wait > 0 and any(b not in done for b in planned):
        sleep(wait)


def _each_broker(
    report: RollReport,
    restart: Callable[..., BrokerRestartOutcome],
    next_broker: Callable[[list[int]], RestartStep | None],
    done: list[int],
    on_broker: Callable[[BrokerRestartOutcome], None] | None,
    clock: Clock,
) -> RollReport | None:
    """Restart broker after broker (the one in flight first); the report when the roll halted,
    None when every broker is done."""
    while True:
        step: RestartStep | None = None
        if report.current is None or report.current.current_broker is None:
            step = next_broker(done)
            if step is None:
                return None
        out = restart(step, current=report.current)
        report.outcomes.append(out)
        report.current = out.current
        if on_broker is not None:
            on_broker(out)
        if out.result == "unsafe":
            return _ended(
                report, RequestState.BLOCKED, f"halted before broker {out.broker}: {out.message}", done, clock
            )
        if out.result == "failed":
            report.result = halted_result(out, clock=clock)
            return report
        done = list(out.current.brokers_done or [])


def _ended(
    report: RollReport, state: RequestState, message: str, done: list[int], clock: Clock
) -> RollReport:
    report.result = report.result.model_copy(
        update={"state": state, "finished_at": clock(), "message": message, "brokers_done": list(done)}
    )
    return report
