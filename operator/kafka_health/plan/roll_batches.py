"""Rolling restarts in batches (issue 36, `rollingRestart.maxConcurrent` and `batchBy`): which
nodes of a roll may restart together, in what order, and why.

The rule for a set S of brokers restarted together, for every partition p with ISR I and
min.insync.replicas m:

    |I ∩ S| <= |I| - m      (acks=all writes keep at least m in-sync replicas)
    I \\ S is not empty      (never the last in-sync replica: it is the one a leader comes from)

`allowance` turns that into how many of p's in-sync replicas may restart at once. Partitions
that can never roll safely (RF <= m, `restart_safety.never_safe_partitions`) are left out of
the min-ISR part: they are unavailable to acks=all whichever batch restarts them, and the
never-safe verdict already reports them. They keep the second part, so a batch never takes
one of them offline where one broker at a time would not. An unknown min.insync.replicas
allows none (unknown is not safe, as in rule 2): its in-sync brokers restart alone.

The batches only decide what goes together. A batch of one is today's one-at-a-time restart,
judged as before by `check_restart_safety` on live state; before restarting a batch the
executor checks it again with `check_batch`, on a fresh snapshot.

Order: dedicated controllers first, each alone, the active one last of them; then the brokers
that are not KRaft voters, in batches; then the combined voters, each alone (the quorum rule
counts one voter out at a time), the active controller last of all. Within each group the order
is `order_brokers`', so `max_concurrent=1` is exactly today's order.

Fast on big clusters (100 brokers x 100k partitions in a fraction of a second): partitions are
indexed once by the set of roll brokers in their ISR (partitions sharing it keep only the
tightest allowance), each broker lists the constraints it is in, and a batch is filled first-fit
with a count per constraint and a bit mask of the brokers a saturated constraint keeps out, so
each candidate costs O(1) and each broker's constraints are walked once, when it joins a batch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.snapshot import ClusterSnapshot, Partition
from kafka_health.plan.restart_safety import RollSlot, roll_plan, roll_role, topic_min_isr
from kafka_health.plan.safety_model import MAX_LISTED

BatchBy = Literal["Rack", "None"]
"""`rollingRestart.batchBy`: Rack batches brokers of one rack only (a rack-aware assignment keeps
a partition's replicas in different racks, so a rack restarts together); None batches any
brokers the rule allows, in roll order."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PartitionLimit(_Model):
    """A partition that limits which brokers restart together: its ISR, its min.insync.replicas
    and how many of its in-sync replicas may restart at once (0: none beside another broker)."""

    partition: str = Field(description="topic-partition.")
    isr: list[int]
    min_insync_replicas: int | None = Field(description="None: unknown (not safe).")
    never_safe: bool = Field(False, description="RF <= min.insync.replicas: only 'not the last' applies.")
    at_once: int = Field(description="In-sync replicas that may restart together.")
    restarting: list[int] = Field(default_factory=list, description="Those the checked set restarts.")

    def describe(self) -> str:
        """e.g. `partition orders-3 has ISR [4, 5] with min.insync.replicas 2`."""
        m = "unknown" if self.min_insync_replicas is None else str(self.min_insync_replicas)
        text = f"partition {self.partition} has ISR {self.isr} with min.insync.replicas {m}"
        if self.never_safe:
            text += " (never safe: only its last in-sync replica is kept)"
        if self.at_once > 0:
            text += f", so at most {self.at_once} of them at once"
        if self.restarting:
            text += f" (the set restarts {', '.join(map(str, self.restarting))})"
        return text


class RollBatch(_Model):
    """Nodes restarted together, and why these and no more."""

    nodes: list[int]
    why: str


class BatchPlan(_Model):
    """A roll's batches in restart order, and the partitions that kept brokers apart."""

    max_concurrent: int
    batch_by: BatchBy
    batches: list[RollBatch] = Field(default_factory=list)
    apart: list[PartitionLimit] = Field(
        default_factory=list,
        description=f"The first {MAX_LISTED} partitions (by name) that kept a broker out of a batch or alone; "
        "one per set of in-sync roll brokers.",
    )
    apart_count: int = Field(0, description="Partitions that kept a broker out of a batch or alone.")

    @property
    def order(self) -> list[int]:
        """Every node of the roll once, in restart order."""
        return [n for b in self.batches for n in b.nodes]

    def lines(self) -> list[str]:
        """The plan as shown: one line per batch, then what kept brokers apart."""
        out = [f"batch {i}: {', '.join(map(str, b.nodes))} — {b.why}" for i, b in enumerate(self.batches, 1)]
        if self.apart_count:
            more = self.apart_count - len(self.apart)
            names = ", ".join(p.partition for p in self.apart) + (f" and {more} more" if more > 0 else "")
            out.append(f"{self.apart_count} partition(s) kept brokers apart: {names}")
        return out


class BatchCheck(_Model):
    """Whether a set of nodes may restart together now (`check_batch`)."""

    nodes: list[int]
    safe: bool
    alone: list[str] = Field(default_factory=list, description="Nodes that restart only alone, and why.")
    blocking: list[PartitionLimit] = Field(
        default_factory=list, description=f"The first {MAX_LISTED} partitions (by name) the set breaks."
    )
    blocking_count: int = 0

    def summary(self) -> str:
        who = ", ".join(map(str, self.nodes))
        if self.safe:
            return f"brokers {who} may restart together"
        reasons = [*self.alone, *(p.describe() for p in self.blocking[:3])]
        more = self.blocking_count - min(3, len(self.blocking))
        tail = f" and {more} more partition(s)" if more > 0 else ""
        return f"brokers {who} may not restart together: " + "; ".join(reasons) + tail


def allowance(p: Partition, min_isr: int | None) -> int | None:
    """How many of `p`'s in-sync replicas may restart at once (the module's rule); None: `p`
    limits no batch. Unknown min.insync.replicas: 0. Never safe (RF <= min ISR): all but its
    last in-sync replica, None with one (it goes offline whichever batch restarts it)."""
    isr = len(p.isr)
    if min_isr is None:
        return 0
    if len(p.replicas) <= min_isr:
        return isr - 1 if isr >= 2 else None
    return min(isr - min_isr, isr - 1)


@dataclass
class _Index:
    """The roll's partitions as constraints over its brokers, built once (`_index`)."""

    bit: dict[int, int]  # broker -> its bit in the masks
    masks: list[int] = field(default_factory=list)  # constraint -> its brokers
    allowed: list[int] = field(default_factory=list)  # constraint -> brokers of it at once
    partition: list[int] = field(default_factory=list)  # constraint -> its tightest partition
    count: list[int] = field(default_factory=list)  # constraint -> partitions as tight
    of_broker: dict[int, list[int]] = field(default_factory=dict)  # broker -> constraints that can bind
    solo: dict[int, int] = field(default_factory=dict)  # broker -> a constraint that allows it no company


def _index(snapshot: ClusterSnapshot, brokers: Collection[int]) -> _Index:
    """One pass over the partitions: each set of roll brokers in an ISR with the tightest
    allowance among the partitions sharing it. Sets no batch can break (allowance >= members)
    are dropped; allowance <= 0 makes its members `solo`."""
    roll = set(brokers)
    min_isr = topic_min_isr(snapshot)
    tight: dict[tuple[int, ...], list[int]] = {}  # members -> [allowed, partition index, count]
    for i, p in enumerate(snapshot.partitions):
        members = roll.intersection(p.isr)
        if not members:
            continue
        a = allowance(p, min_isr.get(p.topic))
        if a is None or a >= len(members):
            continue
        key = tuple(sorted(members))
        cur = tight.get(key)
        if cur is None:
            tight[key] = [a, i, 1]
        elif a < cur[0]:
            cur[:] = [a, i, 1]
        elif a == cur[0]:
            cur[2] += 1
    ix = _Index(bit={b: 1 << k for k, b in enumerate(sorted(roll))})
    ix.of_broker = {b: [] for b in roll}
    for key, (a, i, n) in tight.items():
        c = len(ix.masks)
        mask = 0
        for b in key:
            mask |= ix.bit[b]
            if a <= 0:
                ix.solo.setdefault(b, c)
            else:
                ix.of_broker[b].append(c)
        ix.masks.append(mask)
        ix.allowed.append(a)
        ix.partition.append(i)
        ix.count.append(n)
    return ix


@dataclass
class _Batch:
    """A batch being filled: its brokers, the constraints' counts, the brokers they keep out."""

    nodes: list[int]
    taken: dict[int, int] = field(default_factory=dict)  # constraint -> brokers of it in the batch
    blocked: int = 0  # mask of brokers a saturated constraint keeps out
    blocked_by: dict[int, int] = field(default_factory=dict)  # a broker's bit -> that constraint
    kept_out: dict[int, int] = field(default_factory=dict)  # broker -> the constraint that kept it out


def _join(batch: _Batch, broker: int, ix: _Index) -> None:
    """Add `broker`: count it in each of its constraints; one that reaches its allowance keeps
    its other brokers out (their bits, each with that constraint for the why)."""
    batch.nodes.append(broker)
    for c in ix.of_broker[broker]:
        n = batch.taken.get(c, 0) + 1
        batch.taken[c] = n
        if n == ix.allowed[c]:
            newly = ix.masks[c] & ~batch.blocked
            batch.blocked |= ix.masks[c]
            while newly:
                low = newly & -newly
                batch.blocked_by[low] = c
                newly ^= low


def _next_batch(pool: Sequence[int], ix: _Index, limit: int) -> _Batch:
    """The first broker of `pool`, then each next one the rule allows beside those taken (first
    fit, in pool order), up to `limit`. A `solo` broker starts a batch alone or waits."""
    first = pool[0]
    batch = _Batch(nodes=[])
    _join(batch, first, ix)
    if first in ix.solo:
        return batch
    for b in pool[1:]:
        if len(batch.nodes) >= limit:
            break
        bit = ix.bit[b]
        if b in ix.solo:
            batch.kept_out[b] = ix.solo[b]
        elif batch.blocked & bit:
            batch.kept_out[b] = batch.blocked_by[bit]
        else:
            _join(batch, b, ix)
    return batch


def _limit(snapshot: ClusterSnapshot, ix: _Index, c: int, min_isr: dict[str, int | None]) -> PartitionLimit:
    """Constraint `c` as its tightest partition, for messages."""
    p = snapshot.partitions[ix.partition[c]]
    m = min_isr.get(p.topic)
    return PartitionLimit(
        partition=f"{p.topic}-{p.partition}",
        isr=list(p.isr),
        min_insync_replicas=m,
        never_safe=m is not None and len(p.replicas) <= m,
        at_once=ix.allowed[c],
    )


@dataclass
class _Planner:
    """What the batches of one plan share: the snapshot, its index, and the constraints that
    kept brokers apart so far (for `BatchPlan.apart`)."""

    snapshot: ClusterSnapshot
    ix: _Index
    limit: int
    min_isr: dict[str, int | None]
    apart: set[int] = field(default_factory=set)

    def batches(self, pool: list[int], prefix: str, group: str) -> list[RollBatch]:
        """`pool` (in roll order) cut into batches, each with its why (`prefix`: `rack b: ` or '')."""
        out = []
        while pool:
            batch = _next_batch(pool, self.ix, self.limit)
            out.append(RollBatch(nodes=batch.nodes, why=prefix + self._why(batch, group)))
            taken = set(batch.nodes)
            pool = [b for b in pool if b not in taken]
        return out

    def _why(self, batch: _Batch, group: str) -> str:
        first = batch.nodes[0]
        if first in self.ix.solo:
            self.apart.add(self.ix.solo[first])
            return f"broker {first} alone: {self._describe(self.ix.solo[first])}"
        n = len(batch.nodes)
        if n == 1:
            text = f"broker {first} alone"
        else:
            text = f"{n} brokers, no partition loses more than its ISR allows"
        self.apart.update(batch.kept_out.values())
        if batch.kept_out:
            broker, c = next(iter(batch.kept_out.items()))
            others = len(batch.kept_out) - 1
            text += f"; broker {broker} waits: {self._describe(c)}"
            text += f" ({others} more kept out)" if others else ""
        elif n < self.limit:
            text += f": the last {'one' if n == 1 else n} left{group}"
        return text

    def _describe(self, c: int) -> str:
        return _limit(self.snapshot, self.ix, c, self.min_isr).describe()

    def apart_limits(self) -> tuple[list[PartitionLimit], int]:
        """The sample and count of partitions that kept brokers apart."""
        limits = sorted((_limit(self.snapshot, self.ix, c, self.min_isr) for c in self.apart), key=_by_name)
        return limits[:MAX_LISTED], sum(self.ix.count[c] for c in self.apart)


def _by_name(p: PartitionLimit) -> tuple[str, int]:
    topic, _, number = p.partition.rpartition("-")
    return (topic, int(number))


def _alone(slot: RollSlot, limit: int) -> RollBatch:
    """A node restarted alone: a controller, a combined voter, or any node at maxConcurrent 1."""
    kind = "controller" if slot.role in ("controller", "active controller") else "broker"
    why = slot.why if limit == 1 else f"{slot.why}; one KRaft voter at a time"
    if limit == 1:
        why = f"maxConcurrent 1: {why}"
    return RollBatch(nodes=[slot.node], why=f"{kind} {slot.node} alone: {why}")


def plan_batches(
    snapshot: ClusterSnapshot, nodes: Iterable[int], *, max_concurrent: int = 1, batch_by: BatchBy = "Rack"
) -> BatchPlan:
    """The roll of `nodes` as batches of at most `max_concurrent` (see the module docstring),
    each with its why. batchBy Rack: the brokers of one rack (by name), rack by rack, then the
    brokers without a rack, each alone; None: first fit over all brokers in roll order. Brokers
    not in the metadata restart alone (rule 4 holds them anyway). Planned on `snapshot`; the
    executor checks each batch again live (`check_batch`)."""
    if max_concurrent < 1:
        raise ValueError(f"maxConcurrent must be at least 1, not {max_concurrent}")
    slots = roll_plan(snapshot, nodes)
    plan = BatchPlan(max_concurrent=max_concurrent, batch_by=batch_by)
    if max_concurrent == 1:
        return plan.model_copy(update={"batches": [_alone(s, 1) for s in slots]})
    racks = {b.id: b.rack for b in snapshot.brokers}
    brokers = [s.node for s in slots if s.role == "broker" and s.node in racks]
    planner = _Planner(snapshot, _index(snapshot, brokers), max_concurrent, topic_min_isr(snapshot))
    batches = [_alone(s, max_concurrent) for s in slots if s.role in ("controller", "active controller")]
    if batch_by == "Rack":
        for rack in sorted({r for b in brokers if (r := racks[b]) is not None}):
            batches += planner.batches(
                [b for b in brokers if racks[b] == rack], f"rack {rack}: ", " of the rack"
            )
        why = "no broker.rack, and batchBy Rack batches the brokers of one rack"
        batches += [RollBatch(nodes=[b], why=f"broker {b} alone: {why}") for b in brokers if racks[b] is None]
    else:
        batches += planner.batches(brokers, "", "")
    unknown = [s.node for s in slots if s.role == "broker" and s.node not in racks]
    batches += [RollBatch(nodes=[b], why=f"broker {b} alone: not in the cluster metadata") for b in unknown]
    batches += [_alone(s, max_concurrent) for s in slots if s.role in ("voter", "active voter")]
    apart, count = planner.apart_limits()
    return plan.model_copy(update={"batches": batches, "apart": apart, "apart_count": count})


def alone_reasons(snapshot: ClusterSnapshot, nodes: Collection[int]) -> list[str]:
    """Why some of `nodes` may not restart beside the others: a controller or a KRaft voter goes
    alone (the quorum), a node not in the metadata too. None for a set of one."""
    if len(set(nodes)) < 2:
        return []
    known = {b.id for b in snapshot.brokers}
    out = []
    for n in sorted(set(nodes)):
        role = roll_role(snapshot, n)
        if role in ("controller", "active controller"):
            out.append(f"controller {n} restarts alone (dedicated controllers go one at a time)")
        elif role != "broker":
            out.append(f"broker {n} is a KRaft voter ({role}) and restarts alone")
        elif n not in known:
            out.append(f"broker {n} is not in the cluster metadata and restarts alone")
    return out


def check_batch(snapshot: ClusterSnapshot, nodes: Collection[int]) -> BatchCheck:
    """Whether `nodes` may restart together now, on a live `snapshot`: the module's rule over
    every partition (one pass), and `alone_reasons`. For a set of one this is rule 2's ISR part
    (at or below min ISR with the broker in sync blocks); the executor still runs
    `check_restart_safety` for the rules about the rest of the cluster."""
    wanted = set(nodes)
    min_isr = topic_min_isr(snapshot)
    broken: list[tuple[Partition, int, list[int]]] = []
    for p in snapshot.partitions:
        hit = wanted.intersection(p.isr)
        if not hit:
            continue
        a = allowance(p, min_isr.get(p.topic))
        if a is not None and len(hit) > a:
            broken.append((p, a, sorted(hit)))
    broken.sort(key=lambda t: (t[0].topic, t[0].partition))
    blocking = [
        PartitionLimit(
            partition=f"{p.topic}-{p.partition}",
            isr=list(p.isr),
            min_insync_replicas=(m := min_isr.get(p.topic)),
            never_safe=m is not None and len(p.replicas) <= m,
            at_once=a,
            restarting=hit,
        )
        for p, a, hit in broken[:MAX_LISTED]
    ]
    alone = alone_reasons(snapshot, wanted)
    return BatchCheck(
        nodes=sorted(wanted),
        safe=not broken and not alone,
        alone=alone,
        blocking=blocking,
        blocking_count=len(broken),
    )
