"""One broker's restart as a table of steps, driven by one wait helper (`restart_broker` runs it).

In the manner of Strimzi's KafkaRoller: the algorithm as numbered steps, one helper that waits
for a condition and raises a typed problem (`StepFailed(step, reason)`), one log line per step
that fails. Per broker:

1. Begun before: an earlier, halted roll deleted this broker's pod (`RestartBegun`) and the pod
   is no longer that one: no second restart; go to 4, its health check.
2. CheckingSafety: the restart rules on a fresh LIVE snapshot (`check_restart_safety`) and every
   other pod Ready (`pods_one_at_a_time`), and no other broker fenced while its pod runs
   (`pods_recovering`: still recovering). Refused: outcome `unsafe`, nothing touched, the roll
   back "between brokers" (WaitingForSafety).
2a. DrainingLeadership (drainLeadership, brokers only): its leaderships moved to in-sync
   replicas, the original replica orders persisted first (`leadership_moves.drain`).
3. DeletingPod: the pod's uid is persisted, then the pod deleted with that uid as a precondition
   (on resume only when that very incarnation still exists and is not terminating).
4-6. The waits, one row each of `WAITS` — (ready predicate, timeout field, next step):
   WaitingPodReady (a pod with ANOTHER uid, Ready), WaitingBrokerRegistered (`node_back`),
   WaitingUrpZero (`fully_replicated`). `await_step` polls the predicate until the step's
   timeout, counted from the step's persisted start (a resume gets no fresh timeout).
6a. RestoringLeadership (after a drain): the orders and its leaderships back (`leadership_moves.restore`).
7. Done: the broker appended to `brokers_done`, `last_broker_finished_at` set.

Each step is persisted BEFORE it acts, so a resumed operator starts at the step it was in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.k8s.client import K8s, K8sError
from kafka_health.models.policy import (
    BrokerPods,
    CurrentRemediation,
    RemediationStep,
    RestartBegun,
    RestartTimeouts,
    parse_duration,
)
from kafka_health.plan.restart_safety import RestartSafety, check_restart_safety
from kafka_health.plan.safety_model import Blocker
from kafka_health.remediate.broker_pods import BrokerPodsError, find_node_pods
from kafka_health.remediate.leadership_moves import (
    LeadershipMoves,
    drain,
    restore,
    restore_orders_after_failure,
)
from kafka_health.remediate.roll_checks import (
    fully_replicated,
    node_back,
    pod_of,
    pods_one_at_a_time,
    pods_recovering,
    restart_happened,
)

log = logging.getLogger(__name__)

Step = RemediationStep
Clock = Callable[[], datetime]
Sleep = Callable[[float], None]
Persist = Callable[[CurrentRemediation], None]
T = TypeVar("T")
OutcomeKind = Literal["done", "unsafe", "failed"]
TimeoutField = Literal["pod_ready", "broker_registered", "urp_zero"]

POLL_SECONDS = 1.0


class StepFailed(Exception):
    """A step of one broker's restart failed (a wait timed out, the pod is missing): the roll
    halts at `step`, touching no other broker."""

    def __init__(self, step: RemediationStep, reason: str) -> None:
        super().__init__(reason)
        self.step = step
        self.reason = reason


@dataclass(frozen=True)
class BrokerRestartOutcome:
    """What one `restart_broker` call did.

    `result`: done (the broker is healthy again), unsafe (the live re-check refused; nothing was
    touched; the roll waits), failed (halt the roll). `step`: the step it ended in (for failed,
    the step that failed). `current`: the last state persisted (for done: between brokers).
    """

    broker: int
    result: OutcomeKind
    step: RemediationStep
    message: str
    current: CurrentRemediation
    safety: RestartSafety | None = None
    old_pod_uid: str | None = None
    new_pod_uid: str | None = None
    deleted_pod: bool = False
    drain: LeadershipMoves | None = None
    restore: LeadershipMoves | None = None

    @property
    def ok(self) -> bool:
        return self.result == "done"


@dataclass(frozen=True)
class RollEnv:
    """Where and how a broker is restarted: the clients, the pods, the limits (one per call)."""

    k8s: K8s
    admin: KafkaAdmin
    pods_spec: BrokerPods
    namespace: str
    timeouts: RestartTimeouts
    persist: Persist
    clock: Clock
    sleep: Sleep
    cluster_name: str
    max_voter_lag: int
    max_voter_lag_ms: int
    refuse_never_safe: bool
    guard: Callable[[], None]
    controller_pods: BrokerPods | None
    drain_leadership: bool = False


@dataclass
class BrokerRestart:
    """One broker's restart in progress: the state persisted so far and what this call saw."""

    env: RollEnv
    broker: int
    who: str  # "broker 2" or "controller 100", for the messages
    state: CurrentRemediation
    planned: list[int]
    done: list[int]
    old_uid: str | None = None
    safety: RestartSafety | None = None
    deleted: bool = False
    resumed_begun: bool = False  # this call only checks the health of a restart an earlier roll began
    drains: bool = False  # a broker (not a dedicated controller) of a roll with drainLeadership
    drained: LeadershipMoves | None = None
    restored: LeadershipMoves | None = None
    seen: dict[RemediationStep, object] = field(default_factory=dict)  # what each wait returned

    def save(self, step: RemediationStep, message: str, timeout: str | None = None, **extra: object) -> None:
        """Persist `step` as begun now (its deadline from `timeout`), before it acts."""
        started = self.env.clock()
        update: dict[str, object] = {
            "step": step,
            "step_started_at": started,
            "step_deadline": started + _duration(timeout) if timeout else None,
            "current_broker": self.broker,
            "message": message,
            "brokers_planned": list(self.planned),
            "brokers_done": list(self.done),
            "waiting_since": None,
            "waiting_reason": None,
            **extra,
        }
        self.state = self.state.model_copy(update=update)
        self.env.persist(self.state)

    def outcome(self, result: OutcomeKind, step: RemediationStep, message: str) -> BrokerRestartOutcome:
        new_uid = self.seen.get(Step.WAITING_POD_READY)
        return BrokerRestartOutcome(
            broker=self.broker,
            result=result,
            step=step,
            message=message,
            current=self.state,
            safety=self.safety,
            old_pod_uid=self.old_uid,
            new_pod_uid=new_uid if isinstance(new_uid, str) else None,
            deleted_pod=self.deleted,
            drain=self.drained,
            restore=self.restored,
        )

    def failed(self, step: RemediationStep, message: str) -> BrokerRestartOutcome:
        message += restore_orders_after_failure(self)
        self.state = self.state.model_copy(update={"message": message})
        return self.outcome("failed", step, message)


def _duration(timeout: str) -> timedelta:
    return timedelta(seconds=parse_duration(timeout).total_seconds())


# ------------------------------------------------------------------------------ the waits (4-6)
def _new_pod_ready(run: BrokerRestart, since: datetime) -> str | None:
    """The uid of a Ready, not terminating pod of the broker other than the one deleted."""
    pod = pod_of(run.env.k8s, run.env.pods_spec, run.env.controller_pods, run.env.namespace, run.broker)
    if pod is not None and pod.pod.uid != run.old_uid and pod.pod.ready and not pod.pod.deleting:
        return pod.pod.uid
    return None


def _node_back(run: BrokerRestart, since: datetime) -> bool:
    since_ms = int(since.timestamp() * 1000)
    return node_back(run.env.admin, run.broker, since_ms=since_ms, max_voter_lag=run.env.max_voter_lag)


def _replicated(run: BrokerRestart, since: datetime) -> bool:
    return fully_replicated(run.env.admin)


@dataclass(frozen=True)
class Wait:
    """One wait step: poll `ready` (truthy: passed) within the `timeout` field of RestartTimeouts,
    then persist `then` with the message `passed`; `refused` is why the step failed."""

    ready: Callable[[BrokerRestart, datetime], object]
    timeout: TimeoutField
    then: RemediationStep
    passed: str  # {who}, {value}: what `ready` returned
    refused: str  # {who}, {timeout}


WAITS: dict[RemediationStep, Wait] = {
    Step.WAITING_POD_READY: Wait(
        _new_pod_ready,
        "pod_ready",
        Step.WAITING_BROKER_REGISTERED,
        passed="{who}: pod Ready (new uid {value}); waiting for registration",
        refused="{who}: no new Ready pod within {timeout}",
    ),
    Step.WAITING_BROKER_REGISTERED: Wait(
        _node_back,
        "broker_registered",
        Step.WAITING_URP_ZERO,
        passed="{who}: registered; waiting for 0 under-replicated partitions",
        refused="{who}: not registered again within {timeout}",
    ),
    Step.WAITING_URP_ZERO: Wait(
        _replicated,
        "urp_zero",
        Step.DONE,
        passed="",
        refused="{who}: under-replicated or offline partitions remain after {timeout}",
    ),
}
"""The wait steps: {step: (ready predicate, timeout field, next step)}, in order."""


def timeout_of(step: RemediationStep, timeouts: RestartTimeouts) -> str | None:
    """The policy timeout of a wait step (None: not a wait)."""
    wait = WAITS.get(step)
    return getattr(timeouts, wait.timeout) if wait is not None else None


def _poll(condition: Callable[[], T | None], deadline: datetime, clock: Clock, sleep: Sleep) -> T | None:
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


def await_step(
    step: RemediationStep,
    condition: Callable[[], T | None],
    deadline: datetime,
    reason: str,
    *,
    clock: Clock,
    sleep: Sleep,
) -> T:
    """The one wait of a roll: `condition`'s truthy value, or `StepFailed(step, reason)` once
    `deadline` passes (a read that fails counts as not yet)."""
    value = _poll(condition, deadline, clock, sleep)
    if not value:
        log.warning("rolling restart halts at %s: %s", step, reason)
        raise StepFailed(step, reason)
    return value


def pass_wait(run: BrokerRestart, step: RemediationStep) -> RemediationStep:
    """Wait out `step` (a row of WAITS), persist the next wait; the step reached."""
    wait = WAITS[step]
    timeout: str = getattr(run.env.timeouts, wait.timeout)
    since = run.state.step_started_at or run.env.clock()  # a resumed wait gets no fresh timeout
    value = await_step(
        step,
        lambda: wait.ready(run, since),
        since + _duration(timeout),
        wait.refused.format(who=run.who, timeout=timeout),
        clock=run.env.clock,
        sleep=run.env.sleep,
    )
    run.seen[step] = value
    if wait.then in WAITS:
        run.save(
            wait.then,
            wait.passed.format(who=run.who, value=value),
            timeout_of(wait.then, run.env.timeouts),
        )
    return wait.then


# ------------------------------------------------------------------------------ steps 1-3, 7
def resume_begun(run: BrokerRestart, begun: RestartBegun) -> RemediationStep:
    """Step 1: an earlier roll's restart of this broker happened; check its health only."""
    run.resumed_begun = True
    run.old_uid = begun.pod_uid
    run.save(
        Step.WAITING_POD_READY,
        f"{run.who}: restart begun by an earlier roll (pod uid {run.old_uid} deleted), not confirmed healthy: "
        "checking its health, not restarting it again",
        run.env.timeouts.pod_ready,
        pod_uid=run.old_uid,
    )
    return Step.WAITING_POD_READY


def check_safety(run: BrokerRestart, remaining: list[int]) -> RemediationStep:
    """Step 2: the rules on live state. Refused: back between brokers (WaitingForSafety,
    returned, nothing touched); safe: the pod's uid persisted with DeletingPod (returned)."""
    env = run.env
    run.save(Step.CHECKING_SAFETY, f"{run.who}: checking the restart rules on live state")
    snapshot = collect_snapshot(env.admin, env.cluster_name, env.clock, safety_only=True)
    safety = check_restart_safety(
        snapshot,
        run.broker,
        remaining=remaining,
        max_voter_lag=env.max_voter_lag,
        max_voter_lag_ms=env.max_voter_lag_ms,
        refuse_never_safe=env.refuse_never_safe,
    )
    try:
        pods = find_node_pods(env.k8s, env.pods_spec, env.controller_pods, env.namespace)
    except (BrokerPodsError, K8sError) as exc:  # nothing touched yet: wait, do not fail
        pods = {}
        unknown = Blocker(rule="pods_unknown", message=f"the broker pods could not be read: {exc}")
        safety = safety.model_copy(update={"safe": False, "blockers": [*safety.blockers, unknown]})
    run.safety = safety = pods_recovering(pods_one_at_a_time(safety, pods), snapshot, pods)
    if not safety.safe:
        # Back to "between brokers": the planner re-checks and tries again later.
        update = {"current_broker": None, "pod_uid": None, "step": Step.WAITING_FOR_SAFETY}
        run.state = run.state.model_copy(update={**update, "message": safety.summary()})
        env.persist(run.state)
        return Step.WAITING_FOR_SAFETY
    pod = pods.get(run.broker)
    if pod is None:
        raise StepFailed(Step.CHECKING_SAFETY, f"no pod found for {run.who}")
    run.old_uid = pod.pod.uid
    if run.drains:  # `drain` persists the step with the pod's uid and the original orders
        return Step.DRAINING_LEADERSHIP
    run.save(
        Step.DELETING_POD,
        f"{run.who}: deleting pod {pod.pod.namespace}/{pod.pod.name} (uid {run.old_uid})",
        pod_uid=run.old_uid,
    )
    return Step.DELETING_POD


def drain_leadership(run: BrokerRestart) -> RemediationStep:
    """Step 2a: its leaderships moved away (what is left, its controlled shutdown moves); DeletingPod."""
    run.drained = moves = drain(run)
    run.save(Step.DELETING_POD, f"{moves.drained_text(run.who)}; deleting its pod (uid {run.old_uid})")
    return Step.DELETING_POD


def delete_pod(run: BrokerRestart) -> RemediationStep:
    """Step 3: delete the recorded incarnation (if it still stands), then wait for a new pod."""
    env = run.env
    pod = pod_of(env.k8s, env.pods_spec, env.controller_pods, env.namespace, run.broker)
    if pod is not None and pod.pod.uid == run.old_uid and not pod.pod.deleting:
        env.guard()  # still ours to act (the cluster Lease), right before the delete
        try:
            env.k8s.delete_pod(pod.pod.namespace, pod.pod.name, uid=run.old_uid)
            run.deleted = True
        except K8sError as exc:
            if exc.status not in (404, 409):  # gone already / another incarnation by now
                raise StepFailed(Step.DELETING_POD, f"{run.who}: {exc}") from None
    run.save(
        Step.WAITING_POD_READY,
        f"{run.who}: waiting for a new Ready pod (old uid {run.old_uid})",
        env.timeouts.pod_ready,
    )
    return Step.WAITING_POD_READY


def between_brokers(
    state: CurrentRemediation, planned: list[int], done: list[int], finished: datetime, message: str
) -> CurrentRemediation:
    """The roll once a broker (or a batch) is done: between brokers, waiting for the next one
    to be safe, or Done when none is left; nothing in flight."""
    left = any(b not in done for b in planned)
    return state.model_copy(
        update={
            "step": Step.WAITING_FOR_SAFETY if left else Step.DONE,
            "step_started_at": finished,
            "step_deadline": None,
            "current_broker": None,
            "pod_uid": None,
            "brokers_done": list(done),
            "brokers_planned": list(planned),
            "last_broker_finished_at": finished,
            "drained": None,
            "message": message,
        }
    )


def finish_broker(run: BrokerRestart) -> BrokerRestartOutcome:
    """Step 7: the broker done; the roll between brokers (or Done when none is left)."""
    if run.broker not in run.done:
        run.done.append(run.broker)
    how = (
        "healthy again, its restart by an earlier roll confirmed"
        if run.resumed_begun
        else "restarted and healthy"
    )
    message = f"{run.who} {how} ({len(run.done)} of {len(run.planned)})" + (
        f"; {run.restored.restored_summary()}" if run.restored else ""
    )
    run.state = between_brokers(run.state, run.planned, run.done, run.env.clock(), message)
    run.env.persist(run.state)
    return run.outcome("done", Step.DONE, run.state.message or "")


def drive(
    run: BrokerRestart, at: RemediationStep, *, remaining: list[int], begun: RestartBegun | None
) -> BrokerRestartOutcome:
    """Run the steps from `at` (the step persisted, or CheckingSafety) to Done; see the module
    docstring. A failed step, or a call that failed outright, ends in outcome `failed`."""
    env = run.env
    try:
        if (
            at is Step.CHECKING_SAFETY
            and begun is not None
            and restart_happened(
                begun, run.broker, env.k8s, env.pods_spec, env.controller_pods, env.namespace
            )
        ):
            at = resume_begun(run, begun)
        if at is Step.CHECKING_SAFETY:
            at = check_safety(run, remaining)
            if at is Step.WAITING_FOR_SAFETY:
                assert run.safety is not None
                return run.outcome("unsafe", Step.CHECKING_SAFETY, run.safety.summary())
        if run.old_uid is None:
            raise StepFailed(
                at, f"{run.who}: the pod uid was not recorded; cannot tell whether it was deleted"
            )
        if at is Step.DRAINING_LEADERSHIP:
            at = drain_leadership(run)
        if at is Step.DELETING_POD:
            at = delete_pod(run)
        while at in WAITS:
            at = pass_wait(run, at)
        if at is Step.RESTORING_LEADERSHIP or run.state.drained:
            run.restored = restore(run)
        return finish_broker(run)
    except StepFailed as exc:
        return run.failed(exc.step, exc.reason)
    except (BrokerPodsError, K8sError, AdminCallError) as exc:
        return run.failed(at, f"{run.who}: {exc}")
