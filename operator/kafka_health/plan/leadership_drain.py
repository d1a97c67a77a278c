"""Leadership drained off a broker before its restart, and given back after: pure verdicts.

Why: a broker's controlled shutdown moves its leaderships only once it is already stopping, and
producers learn of it from errors on a connection that is closing: under acks=all load a send
then waits up to seconds. Moving the leaderships while the broker still serves lets every client
learn the new leader from one fast NOT_LEADER answer. Kafka's ElectLeaders elects only the
*preferred* (first) replica, so, as Cruise Control's demote does, a partition whose preferred
replica is the broker gets its replica list reordered with the broker last — an
AlterPartitionReassignments with the same replica set, which moves no data — and then a
preferred election moves its leadership. After the broker is back in every ISR the original
orders are put back and its preferred leaderships elected back.

The rule, per partition of the broker B (`drain_plan`):

1. B first in the replicas (or B leads and the first is out of sync) and another replica in
   sync: reordered — the in-sync others in their
   order, then the others, then B (so the new preferred replica is in sync); kept: its original
   order (persisted before anything changes, so a resumed operator restores it).
2. B leads it and (after 1) its preferred replica is another in-sync replica: elected.
3. B leads it and no other replica is in sync: it cannot move (`stuck`); the restart safety
   rules decide about the restart as they do without a drain.

And back (`restore_plan`), per partition kept: reordered to its original order only when its
replica set is still the one drained (someone else's reassignment since: left alone, `changed`);
elected when B is its original preferred replica and in sync again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafka_health.models.snapshot import ClusterSnapshot, Partition

Key = tuple[str, int]


def _key(p: Partition) -> Key:
    return (p.topic, p.partition)


def name(key: Key) -> str:
    """`topic-partition`, as Kafka's tools print it."""
    return f"{key[0]}-{key[1]}"


def demoted_order(replicas: list[int], isr: Iterable[int], broker: int) -> list[int]:
    """`replicas` with `broker` last and an in-sync replica first: the same set, so no data moves."""
    in_sync = set(isr)
    others = [r for r in replicas if r != broker]
    return [r for r in others if r in in_sync] + [r for r in others if r not in in_sync] + [broker]


@dataclass(frozen=True)
class DrainPlan:
    """What moves the leaderships off one broker (rule in the module docstring)."""

    broker: int
    reorder: dict[Key, list[int]] = field(default_factory=dict)  # partition → new order
    original: dict[Key, list[int]] = field(default_factory=dict)  # partition → order before
    elect: list[Key] = field(default_factory=list)
    stuck: list[Key] = field(default_factory=list)  # led by the broker, no other replica in sync

    @property
    def empty(self) -> bool:
        return not (self.reorder or self.elect)


def drain_plan(
    snapshot: ClusterSnapshot, broker: int, kept: Mapping[Key, list[int]] | None = None
) -> DrainPlan:
    """The reorders and elections that leave `broker` leading nothing but its `stuck` partitions.

    `kept`: original orders already persisted by an earlier, interrupted drain: those partitions
    are reordered from them (their live order may already be the demoted one) and keep them.
    """
    kept = dict(kept or {})
    reorder: dict[Key, list[int]] = {}
    original: dict[Key, list[int]] = {}
    elect: list[Key] = []
    stuck: list[Key] = []
    for p in snapshot.partitions:
        if broker not in p.replicas:
            continue
        key = _key(p)
        others_in_sync = [r for r in p.isr if r != broker and r in p.replicas]
        before = kept.get(key, list(p.replicas))
        preferred_out = p.leader == broker and bool(before) and before[0] not in p.isr
        if before and (before[0] == broker or preferred_out) and others_in_sync:
            target = demoted_order(before, p.isr, broker)
            original[key] = list(before)
            if target != list(p.replicas):
                reorder[key] = target
        if p.leader == broker:
            (elect if others_in_sync else stuck).append(key)
    return DrainPlan(broker, reorder, original, sorted(elect), sorted(stuck))


def still_leads(snapshot: ClusterSnapshot, broker: int, stuck: Iterable[Key] = ()) -> list[Key]:
    """The partitions `broker` leads other than `stuck` ones: the drain is over when none is left."""
    skip = set(stuck)
    return sorted(_key(p) for p in snapshot.partitions if p.leader == broker and _key(p) not in skip)


@dataclass(frozen=True)
class RestorePlan:
    """What gives the broker its leaderships back (rule in the module docstring)."""

    broker: int
    reorder: dict[Key, list[int]] = field(default_factory=dict)  # partition → original order
    elect: list[Key] = field(default_factory=list)
    changed: list[Key] = field(default_factory=list)  # replica set changed since: left alone
    gone: list[Key] = field(default_factory=list)  # no longer in the metadata (topic deleted)


def restore_plan(snapshot: ClusterSnapshot, broker: int, kept: Mapping[Key, list[int]]) -> RestorePlan:
    """Put back each kept order whose replica set is unchanged; elect the broker where it is preferred."""
    live = {_key(p): p for p in snapshot.partitions}
    reorder: dict[Key, list[int]] = {}
    elect: list[Key] = []
    changed: list[Key] = []
    gone: list[Key] = []
    for key, order in sorted(kept.items()):
        p = live.get(key)
        if p is None:
            gone.append(key)
            continue
        if sorted(p.replicas) != sorted(order):
            changed.append(key)
            continue
        if list(p.replicas) != list(order):
            reorder[key] = list(order)
        if order[0] == broker and broker in p.isr and p.leader != broker:
            elect.append(key)
    return RestorePlan(broker, reorder, elect, changed, gone)


def restored(snapshot: ClusterSnapshot, plan: RestorePlan) -> list[Key]:
    """The partitions of `plan` not yet back: order not the original, or not led by the broker."""
    live = {_key(p): p for p in snapshot.partitions}
    left = [k for k, order in plan.reorder.items() if k in live and list(live[k].replicas) != order]
    left += [k for k in plan.elect if k in live and live[k].leader != plan.broker and k not in left]
    return sorted(left)


def listed(keys: Iterable[Key], limit: int = 5) -> str:
    """`a-0, a-1, … (+N more)` for messages."""
    keys = list(keys)
    head = ", ".join(name(k) for k in keys[:limit])
    return head + (f" (+{len(keys) - limit} more)" if len(keys) > limit else "")
