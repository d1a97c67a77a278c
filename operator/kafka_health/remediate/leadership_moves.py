"""A roll's leadership drain and restore, for one broker: the two steps around its restart.

The rule is `plan.leadership_drain` (why a drain, what is reordered, elected, left alone); this
module applies it, as numbered steps:

DrainingLeadership (after CheckingSafety, before DeletingPod):
1. Read live state; plan the drain, starting from the original orders a resumed roll persisted.
2. Persist every original order (`current.drained`) BEFORE any change, so an operator killed
   from here on restores them when it resumes.
3. Reorder (AlterPartitionReassignments, same replica sets), then elect the preferred leaders
   of the partitions the broker leads.
4. Wait, up to `timeouts.leadership`, until it leads nothing but the partitions no other in-sync
   replica can take. Past it, the restart goes ahead and its controlled shutdown moves the rest;
   a refused call (no ALTER on CLUSTER) is said and the restart goes ahead likewise: the drain
   makes a restart gentler, the restart safety rules decided that it is safe.

RestoringLeadership (after WaitingUrpZero):
5. Put back the original orders whose replica sets are unchanged, elect the broker where it is
   preferred again, wait up to `timeouts.leadership`; `current.drained` is cleared with the
   broker done. What could not
   be restored is said (the post-roll election and Kafka's auto leader rebalance act on it).

One log line per step that does not complete.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.models.policy import DrainedPartition, RemediationStep, parse_duration
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.leadership_drain import (
    Key,
    drain_plan,
    listed,
    restore_plan,
    restored,
    still_leads,
)

if TYPE_CHECKING:
    from kafka_health.remediate.broker_restart import BrokerRestart

log = logging.getLogger(__name__)
Step = RemediationStep
DRAIN_POLL_SECONDS = 0.2  # a drain takes well under a second: poll finer than the restart waits


@dataclass(frozen=True)
class LeadershipMoves:
    """What a drain or a restore did, for the outcome, status and the LeadershipDrained Event."""

    reordered: int
    elected: int
    left: list[Key]  # still led by the broker after the drain / not restored after the restore
    stuck: list[Key]  # drain: led by the broker, no other replica in sync
    seconds: float
    problem: str | None = None  # a refused or failed call

    def drained_text(self, who: str) -> str:
        text = f"{who}: leaderships drained in {self.seconds:.1f}s ({self.elected} moved, {self.reordered} reordered)"
        if self.stuck:
            text += f"; {len(self.stuck)} cannot move (no other in-sync replica): {listed(self.stuck)}"
        if self.left:
            text += (
                f"; still leading {len(self.left)} ({listed(self.left)}): its controlled shutdown moves them"
            )
        return text + (f"; {self.problem}" if self.problem else "")

    def restored_summary(self) -> str:
        text = (
            f"leaderships restored in {self.seconds:.1f}s ({self.reordered} orders, {self.elected} elected)"
        )
        if self.left:
            text += f"; not restored: {listed(self.left)}"
        return text + (f"; {self.problem}" if self.problem else "")

    def restored_text(self, who: str) -> str:
        return f"{who}: {self.restored_summary()}"


def _kept(run: BrokerRestart) -> dict[Key, list[int]]:
    return {(d.topic, d.partition): list(d.replicas) for d in run.state.drained or []}


def _live(run: BrokerRestart) -> ClusterSnapshot:
    return collect_snapshot(run.env.admin, run.env.cluster_name, run.env.clock, safety_only=True)


def _apply(admin: KafkaAdmin, orders: Mapping[Key, list[int]], elect: list[Key]) -> list[str]:
    """Reorder, then elect; the problems met (each call's refusal), none when both went through."""
    problems: list[str] = []
    try:
        answer = admin.reorder_replicas(orders)
        if answer.errors:
            first = next(iter(answer.errors.values()))
            problems.append(f"reorder refused for {listed(answer.errors)}: {first}")
    except AdminCallError as exc:
        problems.append(f"reorder failed: {exc}")
    try:
        elected = admin.elect_preferred(elect)
        failed = {k: why for k, (kind, why) in elected.items() if kind not in ("elected", "not_needed")}
        if failed:
            problems.append(f"election refused for {listed(failed)}: {next(iter(failed.values()))}")
    except AdminCallError as exc:
        problems.append(f"election failed: {exc}")
    return problems


def _wait(run: BrokerRestart, left: Callable[[ClusterSnapshot], list[Key]]) -> tuple[list[Key], str | None]:
    """Poll live state until `left` is empty or timeouts.leadership passes: (what is left, and
    why it is unknown when no read succeeded: never taken as nothing left)."""
    deadline = time.monotonic() + parse_duration(run.env.timeouts.leadership).total_seconds()
    remaining: list[Key] | None = None
    unread: str | None = None
    while True:
        try:
            remaining, unread = left(_live(run)), None
        except AdminCallError as exc:
            unread = f"leadership not read: {exc}"
            log.warning("%s: %s; polling again", run.who, unread)
        if remaining == [] or time.monotonic() >= deadline:
            return remaining or [], unread if remaining is None else None
        run.env.sleep(DRAIN_POLL_SECONDS)


def drain(run: BrokerRestart) -> LeadershipMoves:
    """Steps 1-4: move the broker's leaderships away; the step stays DrainingLeadership."""
    started = time.monotonic()
    before = _kept(run)
    plan = drain_plan(_live(run), run.broker, before)
    kept = {**before, **plan.original}
    drained = [DrainedPartition(topic=t, partition=p, replicas=o) for (t, p), o in sorted(kept.items())]
    run.save(
        Step.DRAINING_LEADERSHIP,
        f"{run.who}: moving {len(plan.elect)} leaderships to in-sync replicas ({len(plan.reorder)} reordered) "
        f"before deleting its pod (uid {run.old_uid})",
        run.env.timeouts.leadership,
        pod_uid=run.old_uid,
        drained=drained or None,
    )
    problems = _apply(run.env.admin, plan.reorder, plan.elect) if not plan.empty else []
    left, unread = _wait(run, lambda snap: still_leads(snap, run.broker, plan.stuck))
    problems += [unread] if unread else []
    moves = LeadershipMoves(
        reordered=len(plan.reorder),
        elected=len(plan.elect),
        left=left,
        stuck=plan.stuck,
        seconds=time.monotonic() - started,
        problem="; ".join(problems) or None,
    )
    if left or problems:
        log.warning("%s", moves.drained_text(run.who))
    return moves


def restore(run: BrokerRestart) -> LeadershipMoves:
    """Step 5: the original orders back, the broker's preferred leaderships elected; `drained` cleared."""
    started = time.monotonic()
    kept = _kept(run)
    run.save(
        Step.RESTORING_LEADERSHIP, f"{run.who}: restoring {len(kept)} replica orders and its leaderships"
    )
    plan = restore_plan(_live(run), run.broker, kept)
    # The orders first (the controller answers once they are applied): the broker is then the
    # preferred replica again, and the election gives it its leaderships.
    problems = _apply(run.env.admin, plan.reorder, plan.elect) if plan.reorder or plan.elect else []
    left, unread = _wait(run, lambda snap: restored(snap, plan))
    problems += [unread] if unread else []
    if plan.changed:
        problems.append(
            f"replica sets changed since the drain, orders left as they are: {listed(plan.changed)}"
        )
    moves = LeadershipMoves(
        reordered=len(plan.reorder),
        elected=len(plan.elect),
        left=left,
        stuck=[],
        seconds=time.monotonic() - started,
        problem="; ".join(problems) or None,
    )
    if left or problems:
        log.warning("%s", moves.restored_text(run.who))
    return moves  # `current.drained` is cleared with the broker done (`finish_broker`)


def restore_orders_after_failure(run: BrokerRestart) -> str:
    """A halted restart: put the original orders back now (no wait, no election), so no partition
    keeps a drained order; what it did, for the halt's message."""
    kept = _kept(run)
    if not kept:
        return ""
    try:
        plan = restore_plan(_live(run), run.broker, kept)
        problems = _apply(run.env.admin, plan.reorder, []) if plan.reorder else []
    except AdminCallError as exc:
        problems = [str(exc)]
    if problems:
        return f"; the drained replica orders were NOT restored ({'; '.join(problems)}): {listed(kept)}"
    run.save(run.state.step, run.state.message or "", drained=None)
    return f"; the {len(kept)} drained replica orders were restored"
