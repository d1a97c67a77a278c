"""The rolling-restart executor: restarts ONE broker per call, resumable from status.

Design §4, rolling restart, done to the letter for one broker:

    CheckingSafety → DeletingPod → WaitingPodReady → WaitingBrokerRegistered → WaitingUrpZero → Done

Every step is written through `persist` BEFORE it acts, so an operator restarted mid-step
resumes at that step (`current`) and never restarts a broker twice:

- CheckingSafety: a fresh LIVE snapshot (never the analytics one; `safety_only`) and
  `check_restart_safety`, plus every other broker pod Ready (`pods_one_at_a_time`); not safe →
  outcome `unsafe`, nothing touched, the roll back "between brokers" (step `WaitingForSafety`).
- DeletingPod: the pod's uid is recorded (`current.podUid`) before the delete, which carries
  that uid as a precondition. On resume the pod is deleted again only
  when that very incarnation still exists and is not terminating.
- WaitingPodReady: a pod for the broker with ANOTHER uid, Ready.
- WaitingBrokerRegistered: the broker is in the cluster metadata again (registered, unfenced);
  for a dedicated controller (a KRaft voter that is not a registered broker): back in the
  quorum, which has a leader, with a lag <= max_voter_lag and caught up since this step began
  (`voter_rejoined`), so the next controller is not restarted while this one still catches up.
- WaitingUrpZero: cluster-wide, no under-replicated and no offline partition.
- Done: `current_broker` cleared, the broker appended to `brokers_done`,
  `last_broker_finished_at` set (the planner's pause between brokers counts from it).

Each wait has its policy timeout, counted from when its step started (persisted, so a resume
does not grant a fresh timeout). A timeout or a failure returns outcome `failed`: the caller
halts the roll (Degraded, an Event) and touches no other broker.

Dedicated controllers' pods are found with `controller_pods` (their own StatefulSet or
selector); every step above is the same for them.

`run_roll` loops over the nodes for the CLI, tests and bench: one at a time, in
`order_brokers` order (dedicated controllers first) recomputed before each node, pausing between brokers, halting on the
first failure, then (optionally) a preferred leader election for the restarted brokers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeVar

from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.k8s.client import K8s, K8sError
from kafka_health.models.policy import (
    ActionType,
    BrokerPods,
    CurrentRemediation,
    RemediationStep,
    RequestState,
    RestartBegun,
    RestartTimeouts,
    RollingRestartResult,
    parse_duration,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.decision import RestartStep
from kafka_health.plan.restart_resume import resume_step
from kafka_health.plan.restart_safety import (
    Blocker,
    RestartSafety,
    check_restart_safety,
    controller_only_nodes,
    order_brokers,
    voter_rejoined,
)
from kafka_health.remediate.broker_pods import BrokerPod, BrokerPodsError, find_broker_pods, find_node_pods
from kafka_health.remediate.leader_election import ElectionOutcome
from kafka_health.remediate.roll_end import finish_roll as finish_roll  # the roll's end: roll_end.py
from kafka_health.remediate.roll_end import halted_result as halted_result
from kafka_health.remediate.roll_end import roll_record as roll_record

Clock = Callable[[], datetime]
Sleep = Callable[[float], None]
Persist = Callable[[CurrentRemediation], None]
T = TypeVar("T")


Step = RemediationStep
"""The executor's steps (status.currentRemediation.step): the one step enum of every executor."""

POLL_SECONDS = 1.0

OutcomeKind = Literal["done", "unsafe", "failed"]


@dataclass(frozen=True)
class BrokerRestartOutcome:
    """What one `restart_broker` call did.

    `result`: done (the broker is healthy again), unsafe (the live re-check refused; nothing was
    touched; the roll waits), failed (halt the roll). `step`: the step it ended in (for failed,
    the step that failed). `current`: the last state persisted (for done: between brokers).
    """

    broker: int
    result: OutcomeKind
    step: Step
    message: str
    current: CurrentRemediation
    safety: RestartSafety | None = None
    old_pod_uid: str | None = None
    new_pod_uid: str | None = None
    deleted_pod: bool = False

    @property
    def ok(self) -> bool:
        return self.result == "done"


class _Failed(Exception):
    def __init__(self, step: Step, message: str) -> None:
        super().__init__(message)
        self.step = step
        self.message = message


def pod_uid_of(current: CurrentRemediation | None) -> str | None:
    """The uid of the pod being restarted (`current.podUid`; a roll persisted by an older version
    is migrated when its status is read: `models.policy.CurrentRemediation`)."""
    return current.pod_uid if current is not None else None


def _seconds(duration: str) -> float:
    return parse_duration(duration).total_seconds()


def _now_utc() -> datetime:
    return datetime.now(UTC)


# ============================================================================ one broker
def restart_broker(  # noqa: C901, PLR0912, PLR0915
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
    max_voter_lag: int = 100,
    max_voter_lag_ms: int = 5_000,
    refuse_never_safe: bool = False,
    guard: Callable[[], None] = lambda: None,
    controller_pods: BrokerPods | None = None,
    begun: RestartBegun | None = None,
) -> BrokerRestartOutcome:
    """Restart one broker of a roll, or continue the one in flight.

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
    now = clock()
    if current is not None and current.current_broker is not None:
        broker = current.current_broker
        if step is not None and step.next_broker != broker:
            raise ValueError(
                f"step names broker {step.next_broker} but broker {current.current_broker} is in flight"
            )
        at = Step(current.step)
        base = current
    else:
        if step is None:
            raise ValueError("restart_broker needs a RestartStep when no broker is in flight")
        broker = step.next_broker
        at = Step.CHECKING_SAFETY
        if current is None:
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
        else:
            base = current
    planned = list(base.brokers_planned or ([] if step is None else list(step.done) + list(step.order)))
    done = list(base.brokers_done or [])
    remaining = [b for b in planned if b not in done] or [broker]

    state = base

    def save(new_step: Step, message: str, timeout: str | None = None, **extra: object) -> CurrentRemediation:
        nonlocal state
        started = clock()
        update: dict[str, object] = {
            "step": new_step,
            "step_started_at": started,
            "step_deadline": started + timedelta(seconds=_seconds(timeout)) if timeout else None,
            "current_broker": broker,
            "message": message,
            "brokers_planned": list(planned),
            "brokers_done": list(done),
            "waiting_since": None,
            "waiting_reason": None,
        }
        update.update(extra)
        state = state.model_copy(update=update)
        persist(state)
        return state

    def deadline_of(timeout: str) -> datetime:
        # Counted from the step's start as persisted: a resumed wait gets no fresh timeout.
        started = state.step_started_at or clock()
        return started + timedelta(seconds=_seconds(timeout))

    who = f"{'controller' if _is_controller(k8s, controller_pods, namespace, broker) else 'broker'} {broker}"
    old_uid = pod_uid_of(base) if at is not Step.CHECKING_SAFETY else None
    safety: RestartSafety | None = None
    deleted = False
    resumed_begun = False  # this call only checks the health of a restart an earlier roll began
    new_uid: str | None = None

    def outcome(result: OutcomeKind, at_step: Step, message: str) -> BrokerRestartOutcome:
        return BrokerRestartOutcome(
            broker=broker,
            result=result,
            step=at_step,
            message=message,
            current=state,
            safety=safety,
            old_pod_uid=old_uid,
            new_pod_uid=new_uid,
            deleted_pod=deleted,
        )

    try:
        if at is Step.CHECKING_SAFETY and _restart_happened(
            begun, broker, k8s, pods_spec, controller_pods, namespace
        ):
            assert begun is not None
            resumed_begun = True
            old_uid = begun.pod_uid
            save(
                Step.WAITING_POD_READY,
                f"{who}: restart begun by an earlier roll (pod uid {old_uid} deleted), not confirmed healthy: "
                "checking its health, not restarting it again",
                timeouts.pod_ready,
                pod_uid=old_uid,
            )
            at = Step.WAITING_POD_READY
        # -------------------------------------------------------------- CheckingSafety
        if at is Step.CHECKING_SAFETY:
            save(Step.CHECKING_SAFETY, f"{who}: checking the restart rules on live state")
            snapshot = collect_snapshot(admin, cluster_name, clock, safety_only=True)
            safety = check_restart_safety(
                snapshot,
                broker,
                remaining=remaining,
                max_voter_lag=max_voter_lag,
                max_voter_lag_ms=max_voter_lag_ms,
                refuse_never_safe=refuse_never_safe,
            )
            try:
                pods = find_node_pods(k8s, pods_spec, controller_pods, namespace)
            except (BrokerPodsError, K8sError) as exc:  # nothing touched yet: wait, do not fail
                pods = {}
                unknown = Blocker(rule="pods_unknown", message=f"the broker pods could not be read: {exc}")
                safety = safety.model_copy(update={"safe": False, "blockers": [*safety.blockers, unknown]})
            safety = pods_one_at_a_time(safety, pods)
            if not safety.safe:
                # Back to "between brokers": the planner re-checks and tries again later.
                state = state.model_copy(
                    update={
                        "current_broker": None,
                        "pod_uid": None,
                        "step": Step.WAITING_FOR_SAFETY,
                        "message": safety.summary(),
                    }
                )
                persist(state)
                return outcome("unsafe", Step.CHECKING_SAFETY, safety.summary())
            pod = pods.get(broker)
            if pod is None:
                raise _Failed(Step.CHECKING_SAFETY, f"no pod found for {who}")
            old_uid = pod.pod.uid
            save(
                Step.DELETING_POD,
                f"{who}: deleting pod {pod.pod.namespace}/{pod.pod.name} (uid {old_uid})",
                pod_uid=old_uid,
            )
            at = Step.DELETING_POD

        # -------------------------------------------------------------- DeletingPod
        if old_uid is None:
            raise _Failed(at, f"{who}: the pod uid was not recorded; cannot tell whether it was deleted")
        if at is Step.DELETING_POD:
            pod = _pod_of(k8s, pods_spec, controller_pods, namespace, broker)
            if pod is not None and pod.pod.uid == old_uid and not pod.pod.deleting:
                guard()  # still ours to act (the cluster Lease), right before the delete
                try:
                    k8s.delete_pod(pod.pod.namespace, pod.pod.name, uid=old_uid)
                    deleted = True
                except K8sError as exc:
                    if exc.status not in (404, 409):  # gone already / another incarnation by now
                        raise _Failed(Step.DELETING_POD, f"{who}: {exc}") from None
            save(
                Step.WAITING_POD_READY,
                f"{who}: waiting for a new Ready pod (old uid {old_uid})",
                timeouts.pod_ready,
            )
            at = Step.WAITING_POD_READY

        # -------------------------------------------------------------- WaitingPodReady
        if at is Step.WAITING_POD_READY:
            deadline = deadline_of(timeouts.pod_ready)

            def new_ready() -> str | None:
                pod = _pod_of(k8s, pods_spec, controller_pods, namespace, broker)
                if pod is not None and pod.pod.uid != old_uid and pod.pod.ready and not pod.pod.deleting:
                    return pod.pod.uid
                return None

            new_uid = _wait(new_ready, deadline, clock, sleep)
            if new_uid is None:
                raise _Failed(
                    Step.WAITING_POD_READY,
                    f"{who}: no new Ready pod within {timeouts.pod_ready}",
                )
            save(
                Step.WAITING_BROKER_REGISTERED,
                f"{who}: pod Ready (new uid {new_uid}); waiting for registration",
                timeouts.broker_registered,
            )
            at = Step.WAITING_BROKER_REGISTERED

        # -------------------------------------------------------------- WaitingBrokerRegistered
        if at is Step.WAITING_BROKER_REGISTERED:
            deadline = deadline_of(timeouts.broker_registered)
            since = state.step_started_at or clock()
            since_ms = int(since.timestamp() * 1000)
            if not _wait(
                lambda: node_back(admin, broker, since_ms=since_ms, max_voter_lag=max_voter_lag),
                deadline,
                clock,
                sleep,
            ):
                raise _Failed(
                    Step.WAITING_BROKER_REGISTERED,
                    f"{who}: not registered again within {timeouts.broker_registered}",
                )
            save(
                Step.WAITING_URP_ZERO,
                f"{who}: registered; waiting for 0 under-replicated partitions",
                timeouts.urp_zero,
            )
            at = Step.WAITING_URP_ZERO

        # -------------------------------------------------------------- WaitingUrpZero
        if at is Step.WAITING_URP_ZERO:
            deadline = deadline_of(timeouts.urp_zero)
            if not _wait(lambda: fully_replicated(admin), deadline, clock, sleep):
                raise _Failed(
                    Step.WAITING_URP_ZERO,
                    f"{who}: under-replicated or offline partitions remain after {timeouts.urp_zero}",
                )
            at = Step.DONE

        # -------------------------------------------------------------- Done
        if broker not in done:
            done.append(broker)
        finished = clock()
        how = (
            "healthy again, its restart by an earlier roll confirmed"
            if resumed_begun
            else "restarted and healthy"
        )
        state = state.model_copy(
            update={
                # Between brokers the roll waits for the next one to be safe (Done: none left).
                "step": Step.WAITING_FOR_SAFETY if any(b not in done for b in planned) else Step.DONE,
                "step_started_at": finished,
                "step_deadline": None,
                "current_broker": None,
                "pod_uid": None,
                "brokers_done": list(done),
                "brokers_planned": planned,
                "last_broker_finished_at": finished,
                "message": f"{who} {how} ({len(done)} of {len(planned)})",
            }
        )
        persist(state)
        return outcome("done", Step.DONE, state.message or "")
    except _Failed as exc:
        state = state.model_copy(update={"message": exc.message})
        return outcome("failed", exc.step, exc.message)
    except (BrokerPodsError, K8sError, AdminCallError) as exc:
        message = f"{who}: {exc}"
        state = state.model_copy(update={"message": message})
        return outcome("failed", at, message)


def _restart_happened(
    begun: RestartBegun | None,
    broker: int,
    k8s: K8s,
    spec: BrokerPods,
    controller_spec: BrokerPods | None,
    namespace: str,
) -> bool:
    """Whether an earlier roll's restart of `broker` happened (`resume_step` on its pod now)."""
    if begun is None or begun.broker != broker:
        return False
    pod = _pod_of(k8s, spec, controller_spec, namespace, broker)
    uid, terminating = (pod.pod.uid, pod.pod.deleting) if pod is not None else (None, False)
    return resume_step(begun, broker, uid, pod_terminating=terminating) is Step.WAITING_POD_READY


def _is_controller(k8s: K8s, controller_pods: BrokerPods | None, namespace: str, node: int) -> bool:
    """Whether `node` is one of the dedicated controllers (its pod is among controllerPods'), so
    progress messages name it as such; False when they cannot be read (the messages say broker)."""
    if controller_pods is None:
        return False
    try:
        return node in find_broker_pods(k8s, controller_pods, namespace)
    except (BrokerPodsError, K8sError):
        return False


def pods_one_at_a_time(safety: RestartSafety, pods: Mapping[int, BrokerPod]) -> RestartSafety:
    """Rule 4 seen from Kubernetes as well: every OTHER broker pod is Ready and not terminating.

    Kafka's view lags (a killed broker stays registered for broker.session.timeout.ms and in
    the ISRs for replica.lag.time.max.ms); a pod not Ready means a restart is in flight or a
    broker is down, so this one waits.
    """
    busy = sorted(
        f"{bp.pod.name} (broker {bid})"
        for bid, bp in pods.items()
        if bid != safety.broker and (not bp.pod.ready or bp.pod.deleting)
    )
    if not busy:
        return safety
    blocker = Blocker(
        rule="one_at_a_time",
        message=f"broker pod(s) not Ready or terminating: {', '.join(busy)}: one broker at a time",
    )
    return safety.model_copy(update={"safe": False, "blockers": [*safety.blockers, blocker]})


def _wait(condition: Callable[[], T | None], deadline: datetime, clock: Clock, sleep: Sleep) -> T | None:
    """Poll `condition` until it is truthy (returned) or `deadline` passes (None). Errors count as not yet."""
    while True:
        try:
            value = condition()
            if value:
                return value
        except (AdminCallError, K8sError, BrokerPodsError):
            pass
        if clock() >= deadline:
            return None
        sleep(POLL_SECONDS)


def _pod_of(
    k8s: K8s, spec: BrokerPods, controller_spec: BrokerPods | None, namespace: str, broker: int
) -> BrokerPod | None:
    try:
        return find_node_pods(k8s, spec, controller_spec, namespace).get(broker)
    except BrokerPodsError:
        return None  # no pod at all right now (e.g. all being recreated)


def broker_registered(admin: KafkaAdmin, broker: int) -> bool:
    """The broker is in the cluster metadata (KRaft lists only registered, unfenced brokers)."""
    return any(b.id == broker for b in admin.metadata().brokers)


def node_back(admin: KafkaAdmin, node: int, *, since_ms: int, max_voter_lag: int) -> bool:
    """A restarted node is back: a dedicated controller (a voter that is not a registered broker,
    fenced ones included) has rejoined the quorum caught up since `since_ms` (`voter_rejoined`);
    a broker is registered and unfenced again (`broker_registered`; a broker's check makes no
    other call once it is registered)."""
    if broker_registered(admin, node):
        return True
    quorum = admin.describe_quorum()
    if not any(v.id == node for v in quorum.voters) or node in {b.id for b in admin.describe_cluster()}:
        return False  # a broker (combined or not) not registered again yet
    return voter_rejoined(quorum, node, since_ms=since_ms, max_lag=max_voter_lag)


def fully_replicated(admin: KafkaAdmin) -> bool:
    """Cluster-wide: every partition has a leader and its full replica set in the ISR."""
    md = admin.metadata()
    if md.topic_errors:
        return False
    return all(p.leader is not None and len(p.isr) >= len(p.replicas) for p in md.partitions)


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
    max_voter_lag: int = 100,
    max_voter_lag_ms: int = 5_000,
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


def run_roll(  # noqa: C901, PLR0915
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
    begun: RestartBegun | None = None,
) -> RollReport:
    """Restart `brokers` (node ids; None: every broker in the metadata, and with
    `controller_pods` every dedicated controller too) one at a time; halt on the first failure.
    `guard()` runs right before each pod delete and each election batch (the CLI's cluster Lease).
    `refuse_never_safe`: the live re-check before each node refuses one holding a partition with
    RF <= min.insync.replicas (the CLI's `--never-safe refuse`). `begun`: a restart an earlier,
    halted roll began: that broker gets its health check, not a second restart (`restart_broker`).

    With `current` (a persisted roll), continue it: the broker in flight first, without deleting
    its pod again, then the brokers not yet done. An `unsafe` live re-check halts the roll
    (state Blocked) without touching anything: this standalone loop does not wait for safety.
    """
    timeouts = timeouts or RestartTimeouts()
    started = current.started_at if current is not None else clock()
    snapshot = collect_snapshot(admin, cluster_name, clock)
    if current is not None:
        planned = list(current.brokers_planned or [])
        done = list(current.brokers_done or [])
    else:
        known = sorted(b.id for b in snapshot.brokers)
        if controller_pods is not None:
            known += sorted(controller_only_nodes(snapshot))
        planned = order_brokers(snapshot, brokers if brokers is not None else known)
        done = []
    report = RollReport(
        result=RollingRestartResult(
            id=request_id, state=RequestState.RUNNING, brokers_done=list(done), started_at=started
        ),
        current=current,
    )

    def finish(state: RequestState, message: str) -> RollReport:
        report.result = report.result.model_copy(
            update={"state": state, "finished_at": clock(), "message": message, "brokers_done": list(done)}
        )
        return report

    nodes = {x.id for x in snapshot.brokers} | controller_only_nodes(snapshot)
    unknown = [b for b in planned if b not in nodes]
    if unknown:
        return finish(RequestState.FAILED, f"node(s) {', '.join(map(str, unknown))} not in the cluster")

    while True:
        step: RestartStep | None = None
        if report.current is None or report.current.current_broker is None:
            if len(done) and report.current is not None and report.current.last_broker_finished_at:
                wait = (report.current.last_broker_finished_at + pause - clock()).total_seconds()
                if wait > 0 and any(b not in done for b in planned):
                    sleep(wait)
            snapshot = collect_snapshot(admin, cluster_name, clock)
            step = next_step(snapshot, request_id, planned, done, post_roll_election=post_roll_election)
            if step is None:
                break
        out = restart_broker(
            step,
            k8s=k8s,
            admin=admin,
            pods_spec=pods_spec,
            namespace=namespace,
            timeouts=timeouts,
            current=report.current,
            persist=persist,
            clock=clock,
            sleep=sleep,
            plan_id=f"roll-{request_id}",
            cluster_name=cluster_name,
            guard=guard,
            controller_pods=controller_pods,
            refuse_never_safe=refuse_never_safe,
            begun=begun,
        )
        report.outcomes.append(out)
        report.current = out.current
        if on_broker is not None:
            on_broker(out)
        if out.result == "unsafe":
            return finish(RequestState.BLOCKED, f"halted before broker {out.broker}: {out.message}")
        if out.result == "failed":
            report.result = halted_result(out, clock=clock)
            return report
        done = list(out.current.brokers_done or [])

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
