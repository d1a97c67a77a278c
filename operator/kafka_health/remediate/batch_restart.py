"""A batch of brokers restarted together (`maxConcurrent` > 1), as numbered steps.

The batches come from `plan/roll_batches.py` (which brokers may go together and why); this
module restarts one, in the manner of `broker_restart.py`:

1. CheckingSafety, on a fresh LIVE snapshot: the batch rule over every partition
   (`check_batch`: no partition loses more in-sync replicas than min.insync.replicas allows,
   never the last one), the restart rules for each member with the others of the batch
   treated as part of it (`check_restart_safety`; rule 4's "every other broker alive" and the
   min-ISR rule are the batch rule's for the set), and every pod outside the batch Ready.
   Refused: outcome `unsafe`, nothing touched (the roll waits, or its caller splits the batch).
2. DeletingPod: every member's pod uid recorded (persisted in `currentRemediation.batch`), then
   each pod deleted with its uid as a precondition (the guard before each delete).
3. The waits, for all members at once, each bounded by its policy timeout from the step's
   start: every member has a new Ready pod, every member is registered again, then no
   under-replicated partition cluster-wide.
4. Done: the members appended to `brokers_done`.

Only brokers that are not KRaft voters come here (the planner keeps controllers and combined
voters alone): a batch never touches the quorum. Each step is persisted before it acts, with
the members and their pod uids, so an operator that restarts mid-batch continues the batch
where it was (`resume_batch`): a member whose recorded pod still runs is deleted, the others
are not deleted again, and a wait keeps the deadline it had.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kafka_health.collect.kafka_admin import AdminCallError
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.k8s.client import K8sError
from kafka_health.models.policy import BatchMember, CurrentRemediation, RemediationStep, parse_duration
from kafka_health.plan.restart_safety import check_restart_safety
from kafka_health.plan.roll_batches import check_batch
from kafka_health.remediate.broker_pods import BrokerPod, BrokerPodsError, find_node_pods
from kafka_health.remediate.broker_restart import (
    BrokerRestartOutcome,
    OutcomeKind,
    RollEnv,
    StepFailed,
    await_step,
    between_brokers,
)
from kafka_health.remediate.roll_checks import broker_registered, fully_replicated

log = logging.getLogger(__name__)
Step = RemediationStep


def _duration(timeout: str) -> timedelta:
    return timedelta(seconds=parse_duration(timeout).total_seconds())


@dataclass(frozen=True)
class BatchOutcome(BrokerRestartOutcome):
    """What `restart_batch` did, read like one broker's outcome by the roll (`broker`: the
    batch's first): done, unsafe (nothing touched; `blockers` say why) or failed."""

    brokers: list[int] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class _Batch:
    env: RollEnv
    brokers: list[int]
    state: CurrentRemediation
    planned: list[int]
    done: list[int]
    started: datetime
    uids: dict[int, str] = field(default_factory=dict)

    @property
    def who(self) -> str:
        return f"brokers {', '.join(map(str, self.brokers))}"

    def save(self, step: RemediationStep, message: str, timeout: str | None = None) -> None:
        started = self.env.clock()
        self.state = self.state.model_copy(
            update={
                "step": step,
                "step_started_at": started,
                "step_deadline": started + _duration(timeout) if timeout else None,
                "current_broker": self.brokers[0],
                "batch": [BatchMember(broker=b, pod_uid=self.uids.get(b)) for b in self.brokers],
                "pod_uid": self.uids.get(self.brokers[0]),
                "message": message,
                "brokers_planned": list(self.planned),
                "brokers_done": list(self.done),
                "waiting_since": None,
                "waiting_reason": None,
            }
        )
        self.env.persist(self.state)

    def outcome(
        self, result: OutcomeKind, step: RemediationStep, message: str, blockers: list[str] | None = None
    ) -> BatchOutcome:
        return BatchOutcome(
            broker=self.brokers[0],
            result=result,
            step=step,
            message=message,
            current=self.state,
            deleted_pod=bool(self.uids),
            brokers=list(self.brokers),
            blockers=blockers or [],
            seconds=(self.env.clock() - self.started).total_seconds(),
        )


def _pods(batch: _Batch) -> dict[int, BrokerPod]:
    env = batch.env
    return find_node_pods(env.k8s, env.pods_spec, env.controller_pods, env.namespace)


def _blockers(batch: _Batch, remaining: list[int]) -> list[str]:
    """Step 1's verdict on live state: every reason the batch may not restart now (none: safe)."""
    env = batch.env
    snapshot = collect_snapshot(env.admin, env.cluster_name, env.clock, safety_only=True)
    members = set(batch.brokers)
    check = check_batch(snapshot, members)
    found = [
        *check.alone,
        *(f"{p.partition}: ISR {p.isr}, {p.at_once} may restart at once" for p in check.blocking),
    ]
    for b in batch.brokers:
        safety = check_restart_safety(
            snapshot,
            b,
            remaining=remaining,
            max_voter_lag=env.max_voter_lag,
            max_voter_lag_ms=env.max_voter_lag_ms,
            refuse_never_safe=env.refuse_never_safe,
        )
        # The min-ISR rule per broker is the batch rule's for the set (checked above).
        found += [f"broker {b}: {x.message}" for x in safety.blockers if x.rule != "min_isr"]
    busy = sorted(
        f"{bp.pod.name} (broker {bid})"
        for bid, bp in _pods(batch).items()
        if bid not in members and (not bp.pod.ready or bp.pod.deleting)
    )
    if busy:
        found.append(f"pod(s) outside the batch not Ready or terminating: {', '.join(busy)}")
    return found


def _delete_all(batch: _Batch) -> None:
    """Step 2: every member's pod uid persisted, then each pod deleted (uid as a precondition).
    Resumed (uids already recorded): only the members whose recorded pod still runs."""
    pods = _pods(batch)
    if not batch.uids:
        missing = [b for b in batch.brokers if b not in pods]
        if missing:
            raise StepFailed(Step.CHECKING_SAFETY, f"no pod found for broker(s) {missing}")
        batch.uids = {b: pods[b].pod.uid for b in batch.brokers}
        names = ", ".join(f"{pods[b].pod.name} (uid {batch.uids[b]})" for b in batch.brokers)
        batch.save(Step.DELETING_POD, f"{batch.who}: deleting pods {names}")
    for b in batch.brokers:
        if b not in pods or pods[b].pod.uid != batch.uids.get(b) or pods[b].pod.deleting:
            continue  # deleted before a restart of the operator: not deleted twice
        pod = pods[b].pod
        batch.env.guard()
        try:
            batch.env.k8s.delete_pod(pod.namespace, pod.name, uid=batch.uids[b])
        except K8sError as exc:
            if exc.status not in (404, 409):
                raise StepFailed(Step.DELETING_POD, f"broker {b}: {exc}") from None


def _all_new_pods_ready(batch: _Batch) -> bool:
    pods = _pods(batch)
    return all(
        b in pods and pods[b].pod.uid != batch.uids[b] and pods[b].pod.ready and not pods[b].pod.deleting
        for b in batch.brokers
    )


def _all_registered(batch: _Batch) -> bool:
    return all(broker_registered(batch.env.admin, b) for b in batch.brokers)


WAITS: list[tuple[RemediationStep, str, Callable[[_Batch], bool], str]] = [
    (Step.WAITING_POD_READY, "pod_ready", _all_new_pods_ready, "new Ready pods"),
    (Step.WAITING_BROKER_REGISTERED, "broker_registered", _all_registered, "registered again"),
    (
        Step.WAITING_URP_ZERO,
        "urp_zero",
        lambda b: fully_replicated(b.env.admin),
        "0 under-replicated partitions",
    ),
]


def _wait_all(batch: _Batch, resume_at: RemediationStep | None = None) -> None:
    """Step 3: each wait for every member at once, bounded by its timeout from the step's start.
    `resume_at`: the persisted wait to continue (its start, hence its deadline, kept)."""
    steps = [w[0] for w in WAITS]
    first = steps.index(resume_at) if resume_at in steps else 0
    for step, timeout_field, ready, what in WAITS[first:]:
        timeout: str = getattr(batch.env.timeouts, timeout_field)
        if step is not resume_at:
            batch.save(step, f"{batch.who}: waiting for {what}", timeout)
        since: datetime = batch.state.step_started_at or batch.env.clock()
        await_step(
            step,
            lambda ready=ready: ready(batch),  # type: ignore[misc]
            since + _duration(timeout),
            f"{batch.who}: not {what} within {timeout}",
            clock=batch.env.clock,
            sleep=batch.env.sleep,
        )


def restart_batch(
    brokers: list[int],
    *,
    env: RollEnv,
    current: CurrentRemediation,
    planned: list[int],
    done: list[int],
    remaining: list[int],
) -> BatchOutcome:
    """Restart `brokers` together (the steps in the module docstring); nothing touched when unsafe."""
    batch = _Batch(env, sorted(brokers), current, list(planned), list(done), env.clock())

    def steps() -> BatchOutcome | None:
        batch.save(
            Step.CHECKING_SAFETY, f"{batch.who}: checking the batch and the restart rules on live state"
        )
        blockers = _blockers(batch, remaining)
        if blockers:
            update = {"current_broker": None, "batch": None, "pod_uid": None, "step": Step.WAITING_FOR_SAFETY}
            batch.state = batch.state.model_copy(update=update)
            env.persist(batch.state)
            return batch.outcome(
                "unsafe", Step.CHECKING_SAFETY, f"{batch.who}: " + "; ".join(blockers), blockers
            )
        _delete_all(batch)
        _wait_all(batch)
        return None

    return _run(batch, steps)


def _run(batch: _Batch, steps: Callable[[], BatchOutcome | None]) -> BatchOutcome:
    """`steps()` (an early outcome, or None to go on), then step 4; a step that fails is the outcome."""
    try:
        early = steps()
    except StepFailed as exc:
        log.warning("batch restart halts at %s: %s", exc.step, exc.reason)
        return batch.outcome("failed", exc.step, exc.reason)
    except (BrokerPodsError, K8sError, AdminCallError) as exc:
        return batch.outcome("failed", batch.state.step, f"{batch.who}: {exc}")
    return early if early is not None else _finished(batch)


def _finished(batch: _Batch) -> BatchOutcome:
    """Step 4: the members done, the batch no longer in flight."""
    batch.done += [b for b in batch.brokers if b not in batch.done]
    message = f"{batch.who} restarted together and healthy ({len(batch.done)} of {len(batch.planned)})"
    batch.state = between_brokers(batch.state, batch.planned, batch.done, batch.env.clock(), message)
    batch.state = batch.state.model_copy(update={"batch": None})
    batch.env.persist(batch.state)
    return batch.outcome("done", Step.DONE, batch.state.message or "")


def resume_batch(current: CurrentRemediation, *, env: RollEnv) -> BatchOutcome:
    """Continue the batch in flight in `current` (its members, pod uids and step as persisted).
    Before its deletes (CheckingSafety): from the start, with the live check."""
    members = list(current.batch or [])
    brokers = [m.broker for m in members]
    planned = list(current.brokers_planned or brokers)
    done = list(current.brokers_done or [])
    step = Step(current.step)
    if step is Step.CHECKING_SAFETY:
        remaining = [b for b in planned if b not in done]
        return restart_batch(
            brokers, env=env, current=current, planned=planned, done=done, remaining=remaining
        )
    batch = _Batch(env, sorted(brokers), current, planned, done, env.clock())
    batch.uids = {m.broker: m.pod_uid for m in members if m.pod_uid}

    def steps() -> None:
        if step is Step.DELETING_POD:
            _delete_all(batch)
            _wait_all(batch)
        else:
            _wait_all(batch, resume_at=step)

    return _run(batch, steps)
