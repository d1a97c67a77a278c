"""Honest halts of a rolling restart, and how the next roll resumes them (pure).

A roll can halt while a broker is in flight: its pod already deleted (and maybe recreated),
the roll waiting for it to be Ready, registered, or for 0 under-replicated partitions. That
broker's restart happened: it is neither "restarted" (not confirmed healthy) nor "not
restarted". A halt names it as "restart begun, not confirmed healthy" (`restart_begun`,
`halt_advice`), and the advice never repeats that restart: the next roll that names the broker
checks its health instead (`resume_step`), as long as the broker's pod is no longer the one the
halted roll deleted. The operator finds the record in the last roll's result
(`status.rollingRestarts[].restartBegun`, `begun_before`); the CLI is given it back with
`--restart-begun BROKER=POD_UID`, which its halt output prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kafka_health.models.policy import (
    CurrentRemediation,
    RemediationStep,
    RequestState,
    RestartBegun,
    RollingRestartResult,
)

Step = RemediationStep

IN_FLIGHT_STEPS = frozenset({Step.WAITING_POD_READY, Step.WAITING_BROKER_REGISTERED, Step.WAITING_URP_ZERO})
"""The steps a broker reaches only after its pod delete was sent (or found done)."""

BEGUN = "restart begun, not confirmed healthy"


def restarts_begun(current: CurrentRemediation | None) -> list[RestartBegun]:
    """The brokers in flight whose restart began, from the roll's state as persisted when it
    halted: the current broker, or every member of a batch (`currentRemediation.batch`), each
    with the pod uid deleted. Empty when none was in flight or no pod was deleted yet
    (CheckingSafety, DeletingPod: nothing happened to it)."""
    if current is None or current.current_broker is None or current.step not in IN_FLIGHT_STEPS:
        return []
    if current.batch:
        return [RestartBegun(broker=m.broker, pod_uid=m.pod_uid) for m in current.batch if m.pod_uid]
    if not current.pod_uid:
        return []
    return [RestartBegun(broker=current.current_broker, pod_uid=current.pod_uid)]


def restart_begun(current: CurrentRemediation | None) -> RestartBegun | None:
    """The first of `restarts_begun` (status.rollingRestarts[].restartBegun); None: none."""
    return next(iter(restarts_begun(current)), None)


def begun_before(results: Sequence[RollingRestartResult] | None, request_id: str) -> list[RestartBegun]:
    """The restarts begun by the roll that ran and ended last before `request_id` (the roll now),
    when that roll halted with a broker (or a batch) in flight. Only the last roll that ran
    counts: once a later roll ended, its own record (or none) says what is in flight."""
    ran = (RequestState.SUCCEEDED, RequestState.FAILED)  # a Blocked request never ran: it says nothing
    ended = [r for r in results or [] if r.id != request_id and r.state in ran and r.finished_at is not None]
    if not ended:
        return []
    last = max(ended, key=lambda r: r.finished_at or datetime.min.replace(tzinfo=UTC))
    if last.state is not RequestState.FAILED or last.restart_begun is None:
        return []
    return [last.restart_begun, *(last.batch_begun or [])]


def begun_for(begun: Sequence[RestartBegun], broker: int) -> RestartBegun | None:
    """The begun restart of `broker` among `begun`, if any."""
    return next((b for b in begun if b.broker == broker), None)


def resume_step(
    begun: RestartBegun | None, broker: int, pod_uid: str | None, *, pod_terminating: bool = False
) -> Step:
    """Where a roll starts `broker`: CheckingSafety (a restart from the start) or
    WaitingPodReady (its restart already happened: only its health check: a Ready pod, the
    broker registered, 0 under-replicated partitions).

    `pod_uid`: the broker's pod now (None: it has none, e.g. being recreated). The restart
    happened when the pod the earlier roll deleted is gone or terminating; when that very pod
    still runs, the delete never took effect and the broker is restarted."""
    if begun is None or begun.broker != broker:
        return Step.CHECKING_SAFETY
    if pod_uid == begun.pod_uid and not pod_terminating:
        return Step.CHECKING_SAFETY
    return Step.WAITING_POD_READY


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids))


def halt_advice(
    planned: Sequence[int],
    done: Sequence[int],
    begun: Sequence[RestartBegun],
    *,
    new_request: Callable[[list[int]], str],
) -> str:
    """What a halted roll did and how to finish it, naming the broker in flight as "restart
    begun, not confirmed healthy". `new_request(brokers)`: how to ask for the next roll (the
    operator: a request in the spec; the CLI: its command line). The brokers it names start
    with the one in flight, which that roll checks and does not restart again."""
    restarted = f"brokers {_ids(done)} were restarted" if done else "no broker was restarted"
    parts = [restarted]
    parts += [f"broker {b.broker}: {BEGUN} (its pod {b.pod_uid} was deleted)" for b in begun]
    again = [b.broker for b in begun]
    left = [b for b in planned if b not in done and b not in again]
    if left:
        parts.append(f"{_ids(left)} {'was' if len(left) == 1 else 'were'} not")
    text = "; ".join(parts)
    if not begun and not left:
        return f"{text}."
    advice = f"{text}. To finish: fix what blocked it, then {new_request(again + left)}"
    if begun:
        which = f"broker {again[0]} is" if len(again) == 1 else f"brokers {_ids(again)} are"
        advice += (
            f"; {which} not restarted again: while a pod is not the one deleted, "
            "the new roll only checks its broker's health (pod Ready, registered, 0 under-replicated partitions)"
        )
    return f"{advice}."
