"""How a roll ends, for the operator and the CLI: finished (the optional post-roll election and
the Succeeded result), halted (the Failed result, naming the broker in flight whose restart
began), and the history entry. Split from `rolling_restart.py` (the executor) to keep it small.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    CurrentRemediation,
    RequestState,
    RollingRestartResult,
)
from kafka_health.plan.restart_resume import BEGUN, restarts_begun
from kafka_health.remediate.broker_restart import BrokerRestartOutcome
from kafka_health.remediate.leader_election import ElectionOutcome
from kafka_health.remediate.post_roll_election import elect_preferred_for

Clock = Callable[[], datetime]


def _now_utc() -> datetime:
    return datetime.now(UTC)


def finish_roll(
    current: CurrentRemediation,
    *,
    admin: KafkaAdmin,
    post_roll_election: bool = True,
    election_batch_size: int = 100,
    cluster_name: str = "kafka",
    clock: Clock = _now_utc,
    guard: Callable[[], None] = lambda: None,
) -> tuple[RollingRestartResult, ElectionOutcome | None]:
    """Every broker restarted (Verdict RESUME "finish it"): the optional post-roll preferred
    election for the restarted brokers, and the Succeeded result to record under the request id.
    An election that fails for some partitions is reported in the message; the roll still succeeded."""
    done = list(current.brokers_done or [])
    message = f"restarted brokers {', '.join(map(str, done))}"
    election: ElectionOutcome | None = None
    if post_roll_election and done:
        election = elect_preferred_for(
            admin, done, batch_size=election_batch_size, cluster_name=cluster_name, clock=clock, guard=guard
        )
        message += f"; {election.summary()}"
        denied = None if election.succeeded else election.denied()
        if denied is not None:  # what to grant, not only the raw CLUSTER_AUTHORIZATION_FAILED
            message += f"; {denied}"
    result = RollingRestartResult(
        id=current.id,
        state=RequestState.SUCCEEDED,
        brokers_done=done,
        started_at=current.started_at,
        finished_at=clock(),
        message=message[:1000],
    )
    return result, election


def halted_result(outcome: BrokerRestartOutcome, *, clock: Clock = _now_utc) -> RollingRestartResult:
    """The Failed result of a roll halted by `outcome` (result 'failed'): no other broker is touched.
    A broker whose pod was already deleted is recorded in `restartBegun` (typed, for the next
    roll's resume) and named in the message as "restart begun, not confirmed healthy"."""
    current = outcome.current
    begun = restarts_begun(current)
    who = (
        f"brokers {', '.join(str(b.broker) for b in begun)}" if len(begun) > 1 else f"broker {outcome.broker}"
    )
    what = f"{who}, {BEGUN}" if begun else who
    return RollingRestartResult(
        id=current.id,
        state=RequestState.FAILED,
        brokers_done=list(current.brokers_done or []),
        started_at=current.started_at,
        finished_at=clock(),
        message=f"halted at {what} ({outcome.step}): {outcome.message}"[:1000],
        restart_begun=begun[0] if begun else None,
        batch_begun=begun[1:] or None,
    )


def roll_record(
    current: CurrentRemediation,
    outcome: ActionOutcome,
    *,
    message: str | None,
    generation: int,
    breaker_reset: str | None,
    finished_at: datetime | None = None,
) -> ActionRecord:
    """The status.history entry of a roll: Running when it starts, Succeeded/Failed when it ends."""
    return ActionRecord(
        action=ActionType.ROLLING_RESTART,
        id=current.id,
        plan_id=current.plan_id,
        outcome=outcome,
        started_at=current.started_at,
        finished_at=finished_at,
        message=(message or "")[:1000] or None,
        generation=generation,
        breaker_reset=breaker_reset,
    )
