"""Whether an open transaction may be aborted by hand: only a hanging one.

An administrative abort (a WriteTxnMarkers from outside the coordinator) ends a transaction the
producer may still believe open. For a hanging transaction that is the only way out; for any
other it takes the coordinator's job and can break a live exactly-once pipeline. So, of the
transactions open on the partition right now (`collect.transactions`, read with no age limit),
the one starting at the named offset is aborted only when, in this order:

1. it exists: a transaction open on that partition starts at that offset (`NotFound`);
2. its coordinator does not list that partition in a transaction of its producer, or no
   transactional id lists the producer (`NotHanging`: the coordinator will end it itself);
3. its producer was last heard from longer ago than the transaction timeout (`TooRecent`: a
   producer may still be in the middle of it), as `kafka-transactions find-hanging` requires;
   a timeout of 0 leaves this rule out (find-hanging's `--max-transaction-timeout 0`).

The verdict is pure (the clock and the rows passed in); `remediate/transaction_abort.py` reads,
acts and checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from kafka_health.collect.results import AbortTarget
from kafka_health.models.snapshot import OpenTransaction


class AbortRefusal(StrEnum):
    NOT_FOUND = "NotFound"
    NOT_HANGING = "NotHanging"
    TOO_RECENT = "TooRecent"


@dataclass(frozen=True)
class AbortVerdict:
    """The transaction to abort, or why none is (`refusal` and `reason`)."""

    transaction: OpenTransaction | None
    refusal: AbortRefusal | None
    reason: str

    @property
    def allowed(self) -> bool:
        return self.refusal is None


def judge_abort(
    open_now: Sequence[OpenTransaction],
    topic: str,
    partition: int,
    start_offset: int,
    *,
    now: datetime,
    timeout: timedelta,
) -> AbortVerdict:
    """The verdict of the module docstring's three rules for the transaction of `topic`-`partition`
    that starts at `start_offset`."""
    here = [t for t in open_now if (t.topic, t.partition) == (topic, partition)]
    found = next((t for t in here if t.start_offset == start_offset), None)
    where = f"{topic}-{partition}"
    if found is None:
        starts = ", ".join(str(t.start_offset) for t in sorted(here, key=lambda t: t.start_offset))
        return AbortVerdict(
            None,
            AbortRefusal.NOT_FOUND,
            f"no transaction open on {where} starts at offset {start_offset}"
            + (f" (open ones start at {starts})" if starts else " (none is open there)"),
        )
    if found.coordinator_lists_partition:
        return AbortVerdict(
            found,
            AbortRefusal.NOT_HANGING,
            f"the transaction at {where} offset {start_offset} is not hanging: its coordinator lists it "
            f"(transactional id {found.transactional_id}, {found.coordinator_state}) and ends it itself, "
            "at its timeout at the latest",
        )
    quiet = now - found.last_timestamp
    if timeout > timedelta(0) and quiet <= timeout:
        return AbortVerdict(
            found,
            AbortRefusal.TOO_RECENT,
            f"producer {found.producer_id} of the transaction at {where} offset {start_offset} was last heard "
            f"from {int(quiet.total_seconds())} s ago, within the transaction timeout "
            f"({int(timeout.total_seconds() // 60)} min): it may still be writing it",
        )
    return AbortVerdict(
        found,
        None,
        f"hanging: producer {found.producer_id} (epoch {found.producer_epoch}), last heard from "
        f"{int(quiet.total_seconds() // 60)} min ago, "
        + (
            "no transactional id lists it"
            if found.transactional_id is None
            else f"its coordinator's transaction {found.transactional_id} does not include {where}"
        ),
    )


def abort_target(t: OpenTransaction) -> AbortTarget:
    """The abort marker for `t`: a coordinator epoch the leader never saw (-1) is sent as 0, which
    no epoch is below (as `kafka-transactions abort` does)."""
    return AbortTarget(
        topic=t.topic,
        partition=t.partition,
        producer_id=t.producer_id,
        producer_epoch=t.producer_epoch,
        coordinator_epoch=max(t.coordinator_epoch, 0),
    )
