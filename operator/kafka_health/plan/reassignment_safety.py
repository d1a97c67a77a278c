"""Restart safety rule 5 (`restart_safety`): partition reassignments in flight.

A reassignment's new replicas are out of sync on purpose until they have caught up; the brokers
it involves (the partition's replicas, and those being added or removed) should not restart
before it completes: a restart stalls the move, and the partition's margin is its old replicas.
So rule 5 holds a broker a reassignment involves, rule 1 does not count the new replicas as
under-replicated, and a roll does not start while one involves its brokers (unless the policy
says Proceed).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kafka_health.models.findings import Diagnosis
from kafka_health.models.reasons import BlockerRule
from kafka_health.models.snapshot import ClusterSnapshot, Partition, Reassignment
from kafka_health.plan.safety_model import MAX_LISTED, Blocker


def being_added(reassignments: Iterable[Reassignment]) -> dict[tuple[str, int], set[int]]:
    """The replicas each partition's reassignment in flight is adding."""
    return {(r.topic, r.partition): set(r.adding) for r in reassignments if r.adding}


def only_added_out_of_sync(p: Partition, adding: Mapping[tuple[str, int], set[int]]) -> bool:
    """Every replica of `p` out of its ISR is one a reassignment is adding (out of sync on
    purpose): not under-replicated by a failure (rule 1, and the roll's wait for 0 URP)."""
    return set(p.replicas) - set(p.isr) <= adding.get((p.topic, p.partition), set())


def rule_5_reassignment(snapshot: ClusterSnapshot, broker: int, *, dedicated: bool) -> list[Blocker]:
    """Rule 5: no reassignment in flight involves the candidate; unread reassignments block."""
    if dedicated:
        return []
    if any(m.part == "reassignments" for m in snapshot.missing):
        message = "the partition reassignments in flight could not be read"
        return [Blocker(rule=BlockerRule.REASSIGNMENT_UNKNOWN, message=message)]
    moving = sorted(
        f"{r.topic}-{r.partition}"
        for r in snapshot.reassignments
        if broker in {*r.replicas, *r.adding, *r.removing}
    )
    if not moving:
        return []
    message = (
        f"{len(moving)} partition reassignment(s) in flight involve broker {broker} (first: {moving[0]}): "
        "it restarts once they complete (kafka-reassign-partitions --verify)"
    )
    return [Blocker(rule=BlockerRule.REASSIGNMENT, message=message, partitions=moving[:MAX_LISTED])]


def reassignments_involving(snapshot: ClusterSnapshot, brokers: Collection[int]) -> str | None:
    """Why a roll of `brokers` should not start now: the reassignments in flight that involve
    them, in words (None: none do)."""
    wanted = set(brokers)
    moving = sorted(
        (r for r in snapshot.reassignments if wanted & {*r.replicas, *r.adding, *r.removing}),
        key=lambda r: (r.topic, r.partition),
    )
    if not moving:
        return None
    involved = sorted(wanted & {b for r in moving for b in (*r.replicas, *r.adding, *r.removing)})
    first = ", ".join(f"{r.topic}-{r.partition}" for r in moving[:3])
    return (
        f"{len(moving)} partition reassignment(s) in flight ({first}{', ...' if len(moving) > 3 else ''}) "
        f"involve broker(s) {', '.join(map(str, involved))}: the roll starts once they complete "
        "(kafka-reassign-partitions --verify)"
    )


def reassignment_progress(diagnosis: Diagnosis | None) -> str:
    """What the diagnosis says of the reassignments in flight (their incident's bytes left to
    copy and ETA, from the lag's trend in the history), for a roll's hold: "" when it says
    nothing (no diagnosis, no sizes read, or no ETA yet)."""
    incident = (
        next((i for i in diagnosis.incidents if i.id == "reassignment:cluster"), None) if diagnosis else None
    )
    if incident is None:
        return ""
    left, eta = incident.evidence.get("left_bytes"), incident.evidence.get("eta_seconds")
    words = ([f"{left} B left to copy"] if left is not None else []) + (
        [f"ETA {eta} s at the rate they copy"] if eta is not None else []
    )
    return f" ({', '.join(words)})" if words else ""
