"""Abort one hanging transaction, as `kafka-transactions abort --start-offset` does, but only
after `plan.transaction_abort.judge_abort` found it hanging, and checked afterwards.

1. Read the partition's leader (Metadata; a topic hidden from the principal is an authorization
   error naming DESCRIBE on it, `access.check_named_topics`).
2. Read the transactions open on that partition now, of any age (DescribeProducers at its
   leader, then what their coordinators hold: `collect.transactions`).
3. Judge: the transaction starting at the offset must be hanging (`judge_abort`); a refusal ends
   here with nothing sent, and so does a dry run.
4. Write the abort marker (WriteTxnMarkers to the leader; ALTER on CLUSTER), once.
5. Read the partition again: the transaction must be gone. A marker accepted for a transaction
   still open is a failure, never "aborted".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel

from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.models.policy import TransactionAbortRequest
from kafka_health.models.snapshot import OpenTransaction
from kafka_health.plan.transaction_abort import AbortRefusal, abort_target, judge_abort
from kafka_health.remediate import access


class AbortState(StrEnum):
    ABORTED = "Aborted"
    PLANNED = "Planned"  # a dry run: hanging, nothing sent
    REFUSED = "Refused"  # not hanging (or not found): nothing sent
    FAILED = "Failed"


class AbortOutcome(BaseModel):
    """What `abort_hanging` did to the transaction of `topic`-`partition` at `start_offset`."""

    state: AbortState
    topic: str
    partition: int
    start_offset: int
    message: str
    refusal: AbortRefusal | None = None
    transaction: OpenTransaction | None = None


def open_on(admin: KafkaAdmin, topic: str, partition: int) -> list[OpenTransaction]:
    """Steps 1 and 2: every transaction open on `topic`-`partition` now. Raises `access.NotVisible`
    for a hidden or unknown topic or partition, `AdminCallError` when a read failed."""
    md = admin.metadata()
    check = access.check_named_topics(admin, [topic], {p.topic for p in md.partitions})
    if not check.ok:
        raise access.NotVisible(check.problems())
    found = next((p for p in md.partitions if (p.topic, p.partition) == (topic, partition)), None)
    if found is None:
        raise access.NotVisible([f"topic {topic} has no partition {partition}"])
    if found.leader is None:
        raise AdminCallError("describe_producers", f"{topic}-{partition} has no leader to ask")
    raw = admin.open_transactions([(topic, partition, found.leader)], timedelta(0))
    if topic in raw.errors:
        raise AdminCallError("describe_producers", raw.errors[topic])
    return [t for t in raw.values.get(topic, []) if t.partition == partition]


def abort_hanging(
    admin: KafkaAdmin,
    topic: str,
    partition: int,
    start_offset: int,
    *,
    timeout: timedelta,
    clock: Callable[[], datetime],
    execute: bool,
) -> AbortOutcome:
    """The module docstring's steps. Raises what `open_on` raises, before anything is sent."""

    def outcome(state: AbortState, message: str, **extra: object) -> AbortOutcome:
        return AbortOutcome(
            state=state, topic=topic, partition=partition, start_offset=start_offset, message=message, **extra
        )

    verdict = judge_abort(
        open_on(admin, topic, partition), topic, partition, start_offset, now=clock(), timeout=timeout
    )
    if not verdict.allowed:
        return outcome(
            AbortState.REFUSED, verdict.reason, refusal=verdict.refusal, transaction=verdict.transaction
        )
    hanging = verdict.transaction
    assert hanging is not None
    if not execute:
        return outcome(AbortState.PLANNED, f"would abort: {verdict.reason}", transaction=hanging)
    try:
        admin.abort_transaction(abort_target(hanging))
    except AdminCallError as exc:
        return outcome(
            AbortState.FAILED,
            f"the abort marker was not written ({exc.reason}); read the partition again before retrying",
            transaction=hanging,
        )
    try:
        after = open_on(admin, topic, partition)
    except (AdminCallError, access.NotVisible) as exc:
        return outcome(
            AbortState.FAILED,
            f"the abort marker was accepted, but the partition could not be read again: {exc}",
        )
    if any(t.start_offset == start_offset and t.producer_id == hanging.producer_id for t in after):
        return outcome(
            AbortState.FAILED,
            "the abort marker was accepted, but the transaction is still open",
            transaction=hanging,
        )
    return outcome(AbortState.ABORTED, f"aborted: {verdict.reason}", transaction=hanging)


def abort_transaction_request(
    admin: KafkaAdmin, request: TransactionAbortRequest, timeout_minutes: int, clock: Callable[[], datetime]
) -> AbortOutcome:
    """The operator's request, executed (`abort_hanging` with --execute): a read that fails or a
    hidden partition is a Failed outcome naming why, nothing sent."""
    try:
        return abort_hanging(
            admin,
            request.topic,
            request.partition,
            request.start_offset,
            timeout=timedelta(minutes=timeout_minutes),
            clock=clock,
            execute=True,
        )
    except access.NotVisible as exc:
        reason = str(exc)
    except AdminCallError as exc:
        denied = security_errors.authorization_denied(f"transactions:{request.topic}", exc.reason)
        reason = denied or f"cannot read {request.topic}-{request.partition}: {exc.reason}"
    return AbortOutcome(
        state=AbortState.FAILED,
        topic=request.topic,
        partition=request.partition,
        start_offset=request.start_offset,
        message=f"{reason}; nothing aborted",
    )
