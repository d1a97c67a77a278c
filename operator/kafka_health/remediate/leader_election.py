"""Preferred leader election executor: carries out an `ElectionPlan`, batch by batch.

Before each batch the cluster metadata is read again (live, never the analytics snapshot), and
a partition is sent to Kafka only when its preferred replica is still alive, in the ISR and not
already the leader; the others are reported without being sent. Per partition the outcome is
one of `elected`, `not_needed`, `preferred_not_available` or `failed` (with a message). The
executor never raises for a partition; a failed call (metadata unreadable, ElectLeaders timed
out) ends the run with `failed_reason` set and the partitions not attempted reported as failed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin, TopicPartitionKey
from kafka_health.models.policy import ActionOutcome, ActionRecord, ActionType
from kafka_health.plan.leader_election_plan import ElectionPlan, TopicPartition
from kafka_health.remediate import access


class ElectionStatus(StrEnum):
    ELECTED = "elected"
    NOT_NEEDED = "not_needed"
    PREFERRED_NOT_AVAILABLE = "preferred_not_available"
    FAILED = "failed"


class PartitionElection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    partition: int
    status: ElectionStatus
    message: str | None = None
    preferred: int | None = Field(None, description="The preferred replica (first of the replicas).")
    leader_before: int | None = Field(None, description="The leader read live just before the batch.")
    sent: bool = Field(False, description="Sent to Kafka (False: settled by the live re-check).")
    batch: int = Field(0, description="1-based batch number.")

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class ElectionOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partitions: list[PartitionElection] = Field(default_factory=list)
    batches_done: int = 0
    batches_total: int = 0
    failed_reason: str | None = Field(None, description="Why the run stopped early (secret-free).")
    refused: str | None = Field(
        None,
        description="Why nothing was sent: partitions hidden from the principal, or totals it "
        "cannot check (`remediate.access`); the ACL is named.",
    )

    def count(self, status: ElectionStatus) -> int:
        return sum(1 for p in self.partitions if p.status is status)

    @property
    def counts(self) -> dict[str, int]:
        found = Counter(p.status.value for p in self.partitions)
        return {s.value: found.get(s.value, 0) for s in ElectionStatus}

    @property
    def succeeded(self) -> bool:
        """No call failed and no partition failed (not needed / not available are not failures)."""
        return self.failed_reason is None and self.count(ElectionStatus.FAILED) == 0

    def denied(self) -> str | None:
        """The ACL the principal lacks when Kafka refused the election for authorization
        (`authorization denied: the principal lacks ALTER on CLUSTER kafka-cluster (grant it: …)`),
        from the call's or a partition's error; None otherwise."""
        if (
            self.refused is not None
            and security_errors.kind_of(self.refused) is security_errors.Kind.AUTHORIZATION
        ):
            return self.refused
        texts = [self.failed_reason or ""]
        texts += [p.message or "" for p in self.partitions if p.status is ElectionStatus.FAILED]
        return next(
            (m for t in texts if (m := security_errors.authorization_denied("elect_leaders", t)) is not None),
            None,
        )

    @property
    def action_outcome(self) -> ActionOutcome:
        return ActionOutcome.SUCCEEDED if self.succeeded else ActionOutcome.FAILED

    def summary(self) -> str:
        c = self.counts
        text = (
            f"preferred leader election: {c['elected']} elected, {c['not_needed']} not needed, "
            f"{c['preferred_not_available']} preferred not available, {c['failed']} failed "
            f"({self.batches_done}/{self.batches_total} batches)"
        )
        if self.failed_reason:
            text += f"; stopped: {self.failed_reason}"
        else:
            failed = [p for p in self.partitions if p.status is ElectionStatus.FAILED]
            if failed:
                text += f"; e.g. {failed[0]}: {failed[0].message}"
        return text

    def record(
        self,
        *,
        plan_id: str,
        started_at: datetime,
        finished_at: datetime,
        generation: int,
        breaker_reset: str | None,
        request_id: str | None = None,
    ) -> ActionRecord:
        """The status.history entry for this run (a missing ACL named after the summary)."""
        denied = self.denied()
        return ActionRecord(
            action=ActionType.PREFERRED_LEADER_ELECTION,
            id=request_id,
            plan_id=plan_id,
            outcome=self.action_outcome,
            started_at=started_at,
            finished_at=finished_at,
            message=(self.summary() + (f"; {denied}" if denied else ""))[:1000],
            generation=generation,
            breaker_reset=breaker_reset,
        )


Progress = Callable[[int, ElectionOutcome], None]


class ElectResult(NamedTuple):
    """Kafka's answer for one partition of an ElectLeaders request, typed; it still unpacks as
    the `(status, message)` pair `KafkaAdmin.elect_preferred` returns (a StrEnum equals its text)."""

    status: ElectionStatus
    message: str | None


def elect_preferred(
    admin: KafkaAdmin, partitions: Iterable[TopicPartitionKey]
) -> dict[TopicPartitionKey, ElectResult]:
    """One ElectLeaders (PREFERRED) request for `partitions` (`KafkaAdmin.elect_preferred`), each
    answer typed: `elected`, `not_needed` (ELECTION_NOT_NEEDED), `preferred_not_available`
    (PREFERRED_LEADER_NOT_AVAILABLE) or `failed`, as the client decided by Kafka's error code.
    Raises AdminCallError when the whole request failed (it may still have been applied)."""
    answer = admin.elect_preferred(partitions)
    return {key: ElectResult(ElectionStatus(status), message) for key, (status, message) in answer.items()}


class Recheck(NamedTuple):
    """A batch re-checked on fresh metadata, before anything is sent."""

    send: list[TopicPartition]
    """Still electable: the preferred replica alive, in the ISR, not leading."""
    settled: list[PartitionElection]
    """Settled without sending (not needed, preferred not available, gone)."""
    seen: dict[TopicPartitionKey, tuple[int | None, int | None]]
    """(preferred, leader) per partition, as read."""


def _recheck(batch: list[TopicPartition], admin: KafkaAdmin, number: int) -> Recheck:
    """The batch on fresh metadata: what to send, what is settled without sending (`Recheck`)."""
    md = admin.metadata()
    alive = {b.id for b in md.brokers}
    live = {(p.topic, p.partition): p for p in md.partitions}
    send: list[TopicPartition] = []
    settled: list[PartitionElection] = []
    seen: dict[TopicPartitionKey, tuple[int | None, int | None]] = {}
    for tp in batch:
        p = live.get((tp.topic, tp.partition))
        if p is None:
            settled.append(
                PartitionElection(
                    topic=tp.topic,
                    partition=tp.partition,
                    status=ElectionStatus.FAILED,
                    message="partition not in the cluster metadata any more",
                    batch=number,
                )
            )
            continue
        preferred = p.preferred_leader
        seen[(tp.topic, tp.partition)] = (preferred, p.leader)
        base = {
            "topic": tp.topic,
            "partition": tp.partition,
            "preferred": preferred,
            "leader_before": p.leader,
            "batch": number,
        }
        if preferred is not None and p.leader == preferred:
            settled.append(
                PartitionElection(
                    **base, status=ElectionStatus.NOT_NEEDED, message="the preferred replica leads already"
                )
            )
        elif preferred is None or preferred not in alive:
            settled.append(
                PartitionElection(
                    **base,
                    status=ElectionStatus.PREFERRED_NOT_AVAILABLE,
                    message=f"not sent: preferred replica {preferred} is not alive (checked live)",
                )
            )
        elif preferred not in p.isr:
            settled.append(
                PartitionElection(
                    **base,
                    status=ElectionStatus.PREFERRED_NOT_AVAILABLE,
                    message=f"not sent: preferred replica {preferred} is not in the ISR "
                    f"{sorted(p.isr)} (checked live)",
                )
            )
        else:
            send.append(tp)
    return Recheck(send, settled, seen)


def execute_election(
    admin: KafkaAdmin,
    plan: ElectionPlan,
    *,
    progress: Progress | None = None,
    guard: Callable[[], None] = lambda: None,
) -> ElectionOutcome:
    """Run the plan's batches in order; see the module docstring. `progress(batch_number,
    outcome_so_far)` is called after each batch (persist the step there). `guard()` runs right
    before each ElectLeaders request: it raises (the operator's LeaseLost) to stop between batches."""
    outcome = ElectionOutcome(batches_total=len(plan.batches))
    for index, batch in enumerate(plan.batches, start=1):
        try:
            send, settled, seen = _recheck(batch, admin, index)
            outcome.partitions.extend(settled)
            if send:
                guard()
            results = elect_preferred(admin, [(tp.topic, tp.partition) for tp in send]) if send else {}
        except AdminCallError as exc:
            outcome.failed_reason = f"batch {index}: {exc}"
            done = {(p.topic, p.partition) for p in outcome.partitions}
            for later in [tp for b in plan.batches[index - 1 :] for tp in b]:
                if (later.topic, later.partition) not in done:
                    outcome.partitions.append(
                        PartitionElection(
                            topic=later.topic,
                            partition=later.partition,
                            status=ElectionStatus.FAILED,
                            message=f"not done: {exc}",
                            batch=index,
                        )
                    )
            break
        for tp in send:
            answer = results[(tp.topic, tp.partition)]
            preferred, leader = seen[(tp.topic, tp.partition)]
            outcome.partitions.append(
                PartitionElection(
                    topic=tp.topic,
                    partition=tp.partition,
                    status=answer.status,
                    message=answer.message,
                    preferred=preferred,
                    leader_before=leader,
                    sent=True,
                    batch=index,
                )
            )
        outcome.batches_done = index
        if progress is not None:
            progress(index, outcome)
    outcome.partitions.sort(key=lambda p: (p.topic, p.partition))
    return outcome


def refused_election(plan: ElectionPlan, why: str) -> ElectionOutcome:
    """The outcome of an election refused before its first batch (nothing sent): every planned
    partition failed with `why`, which is also the run's `failed_reason` and `refused`."""
    reason = f"refused before any batch: {why}; nothing elected"
    return ElectionOutcome(
        partitions=[
            PartitionElection(
                topic=tp.topic,
                partition=tp.partition,
                status=ElectionStatus.FAILED,
                message="not done: refused",
            )
            for batch in plan.batches
            for tp in batch
        ],
        batches_total=len(plan.batches),
        failed_reason=reason,
        refused=why,
    )


def execute_visible_election(
    admin: KafkaAdmin,
    plan: ElectionPlan,
    *,
    progress: Progress | None = None,
    guard: Callable[[], None] = lambda: None,
) -> ElectionOutcome:
    """`execute_election`, after checking live that the principal sees every partition the
    brokers hold (`access.hidden_refusal`): an election planned on a partial view would report
    partitions as led by their preferred replica that it never saw, so with anything hidden (or
    the totals unchecked, or the metadata unreadable) nothing is sent (`refused_election`)."""

    try:
        why = access.hidden_refusal(admin, admin.metadata())
    except AdminCallError as exc:
        why = f"the cluster metadata could not be read to check what is hidden: {exc}"
    if why is not None:
        return refused_election(plan, why)
    return execute_election(admin, plan, progress=progress, guard=guard)
