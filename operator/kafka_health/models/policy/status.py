"""status: what the operator saw and did. Written by the operator only."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from kafka_health.models.policy.base import StatusModel
from kafka_health.models.policy.constants import (
    MAX_HISTORY,
    MAX_PLAN_ENTRIES,
    MAX_REQUESTS,
    MAX_TOP_FINDINGS,
    MAX_WITHHELD,
)
from kafka_health.models.policy.remediation import ActionType
from kafka_health.models.policy.requests import REQUEST_LIST
from kafka_health.models.policy.rules import Text
from kafka_health.models.reasons import RollWaitReason, WithheldReason


class ConditionType(StrEnum):
    READY = "Ready"
    HEALTHY = "Healthy"
    REMEDIATING = "Remediating"
    DEGRADED = "Degraded"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


ConditionReason = Annotated[
    str,
    Text(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", "CamelCase, e.g. 'ClusterUnreachable'", 1024),
]


class Condition(StatusModel):
    """A Kubernetes-style condition."""

    type: ConditionType = Field(description="Ready, Healthy, Remediating or Degraded.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: ConditionReason = Field(description="Machine-readable CamelCase reason.")
    message: str = Field("", max_length=32768, description="Human-readable details.")
    last_transition_time: AwareDatetime = Field(
        description="When status last changed (kept while unchanged)."
    )
    observed_generation: int | None = Field(
        None, ge=0, description="The spec generation this condition is about."
    )


class Health(StrEnum):
    HEALTHY = "Healthy"
    WARNING = "Warning"
    CRITICAL = "Critical"
    UNKNOWN = "Unknown"


class LastDiagnosis(StatusModel):
    """Counts of the latest diagnosis."""

    at: AwareDatetime = Field(
        description="When the snapshot was taken: everything this diagnosis reports is as of this time."
    )
    duration_seconds: float | None = Field(
        None,
        ge=0,
        description="How long the cycle took, from the snapshot to this status (reading the cluster, "
        "diagnosing it, reporting).",
    )
    diagnose_seconds: float | None = Field(None, ge=0, description="Of which diagnosing (Spark).")
    interval_seconds: float | None = Field(
        None, ge=0, description="spec.diagnostics.interval the cycle ran under, in seconds."
    )
    slow: bool | None = Field(
        None,
        description="The cycle took longer than the interval (durationSeconds > intervalSeconds): its "
        "findings are older than one interval when reported. Ready has reason SlowCycle meanwhile.",
    )
    total: int = Field(0, ge=0, description="Number of findings.")
    critical: int = Field(0, ge=0, description="Critical findings.")
    warning: int = Field(0, ge=0, description="Warnings.")
    info: int = Field(0, ge=0, description="Informational findings.")
    incidents: int = Field(0, ge=0, description="Number of incidents (the findings grouped by root cause).")
    missing: list[str] | None = Field(
        None, max_length=100, description="Parts of the cluster state that could not be read."
    )


class FindingSummary(StatusModel):
    """One of the worst findings."""

    check: str = Field(description="Check id, e.g. 'under_replicated'.")
    severity: Literal["info", "warning", "critical"] = Field(description="info, warning or critical.")
    subject: str = Field(description="What it is about, e.g. 'partition/topic=orders/partition=3'.")
    message: str = Field(description="One sentence a person can act on.")
    remediation: str | None = Field(None, description="The remediation it suggests, if any.")
    evidence: dict[str, str] | None = Field(None, description="The numbers behind it, as strings.")
    observed_at: AwareDatetime | None = Field(
        None, description="The time of the snapshot it was found in (lastDiagnosis.at): it is as of then."
    )


MAX_TOP_INCIDENTS = 10


class IncidentSummary(StatusModel):
    """One of the worst incidents: findings grouped by root cause (docs/diagnostics.md#incidents)."""

    id: str = Field(
        max_length=300, description="Stable while the cause persists: '<kind>:<root>', e.g. 'broker_down:2'."
    )
    severity: Literal["info", "warning", "critical"] = Field(description="The worst of its findings.")
    title: str = Field(max_length=1024, description="The cause and its reach, in one line.")
    remediation: str = Field(
        max_length=1024, description="What the operator would do about it, or why it will not act."
    )
    findings: int = Field(0, ge=0, description="How many findings it groups.")
    partitions: int = Field(0, ge=0, description="How many partitions it affects.")
    groups: int = Field(0, ge=0, description="How many consumer groups it affects.")


class RemediationStep(StrEnum):
    """status.currentRemediation.step: where the executor in flight is (one enum for every action).

    Rolling restart, per broker: CheckingSafety → DrainingLeadership → DeletingPod →
    WaitingPodReady → WaitingBrokerRegistered → WaitingUrpZero → RestoringLeadership, then
    WaitingForSafety between brokers (the pause, the wait for the next broker to be safe) and
    Done after the last one (the two leadership steps only with rollingRestart.drainLeadership). Preferred leader
    election: Electing. Offset reset: ResettingOffsets. Transaction abort: AbortingTransaction."""

    WAITING_FOR_SAFETY = "WaitingForSafety"
    """Rolling restart, between brokers: waiting for the next broker to be safe to restart (the pause
    between brokers, or the live re-check refused it); nothing is being touched."""
    CHECKING_SAFETY = "CheckingSafety"
    DRAINING_LEADERSHIP = "DrainingLeadership"
    """Rolling restart: moving the broker's leaderships to in-sync replicas before its pod is deleted."""
    DELETING_POD = "DeletingPod"
    WAITING_POD_READY = "WaitingPodReady"
    WAITING_BROKER_REGISTERED = "WaitingBrokerRegistered"
    WAITING_URP_ZERO = "WaitingUrpZero"
    RESTORING_LEADERSHIP = "RestoringLeadership"
    """Rolling restart: the broker back in every ISR; its replica orders and preferred leaderships restored."""
    DONE = "Done"
    ELECTING = "Electing"
    RESETTING_OFFSETS = "ResettingOffsets"
    ABORTING_TRANSACTION = "AbortingTransaction"


_LEGACY_STEPS = {"WaitingSafe": RemediationStep.WAITING_FOR_SAFETY}
"""Step values earlier versions persisted, read as today's (status written before the enum)."""
_LEGACY_POD_UID = re.compile(r"podUid=([0-9a-fA-F-]+)")


class DrainedPartition(StatusModel):
    """A partition whose replica order a leadership drain changed, with the order to put back."""

    topic: str = Field(description="The topic.")
    partition: int = Field(ge=0, description="The partition.")
    replicas: list[int] = Field(
        min_length=1, description="Its replica order before the drain (restored after)."
    )


class BatchMember(StatusModel):
    """A broker of the batch in flight, with the uid of its pod as recorded before the delete."""

    broker: int = Field(description="The node id.")
    pod_uid: str | None = Field(
        None, description="The uid of its pod being replaced (set before the delete, which carries it)."
    )


class CurrentRemediation(StatusModel):
    """The action in flight; written after every step so a restarted operator resumes it."""

    action: ActionType = Field(
        description="PreferredLeaderElection, RollingRestart, OffsetReset or TransactionAbort."
    )
    id: str = Field(description="The request id (or the plan id for automatic actions).")
    plan_id: str = Field(description="The plan being carried out.")
    step: RemediationStep = Field(description="The executor's current step, e.g. WaitingPodReady.")
    started_at: AwareDatetime = Field(description="When the action started.")
    step_started_at: AwareDatetime | None = Field(None, description="When the current step started.")
    step_deadline: AwareDatetime | None = Field(
        None,
        description="When the current step times out (a wait of a rolling restart: its timeouts.* counted "
        "from stepStartedAt); the roll halts if the step has not finished by then.",
    )
    brokers_planned: list[int] | None = Field(
        None, description="Rolling restart: the brokers to restart, in order."
    )
    brokers_done: list[int] | None = Field(
        None, description="Rolling restart: brokers restarted and healthy again."
    )
    current_broker: int | None = Field(None, description="Rolling restart: the broker being restarted now.")
    batch: list[BatchMember] | None = Field(
        None,
        max_length=100,
        description="Rolling restart with maxConcurrent > 1: the brokers restarted together (currentBroker is "
        "the first), each with its pod uid; a resumed operator continues the batch at its step.",
    )
    pod_uid: str | None = Field(
        None,
        description="Rolling restart: the uid of the broker's pod being replaced (recorded before the delete, "
        "which carries it as a precondition).",
    )
    waiting_since: AwareDatetime | None = Field(
        None,
        description="Rolling restart: between brokers, when the roll started waiting for the next broker "
        "to become safe to restart (timeouts.safeToRestart counts from it; timeouts.reassignment for "
        "ReassignmentInProgress).",
    )
    waiting_reason: RollWaitReason | None = Field(
        None,
        description="Rolling restart, while waiting: WaitingForSafety, WaitingForBrokerReady, or "
        "ReassignmentInProgress (only a partition reassignment in flight holds the next broker).",
    )
    never_safe_partitions: list[str] | None = Field(
        None,
        max_length=100,
        description="Rolling restart: partitions (RF <= min.insync.replicas) that are unavailable to acks=all "
        "producers while their broker restarts (neverSafePartitions: Proceed), the first 100.",
    )
    never_safe_count: int | None = Field(
        None, ge=0, description="Rolling restart: how many such partitions there are in all."
    )
    drained: list[DrainedPartition] | None = Field(
        None,
        description="Rolling restart: partitions whose replica order the leadership drain of the broker in "
        "flight changed (its original order, written before the change): restored once the broker is back "
        "in every ISR, also by an operator that resumes the roll.",
    )
    last_broker_finished_at: AwareDatetime | None = Field(
        None,
        description="Rolling restart: when the last broker became healthy (pauseBetweenBrokers counts from it).",
    )
    message: str | None = Field(
        None, description="Details of the step (for people: no state is read back from it)."
    )

    @field_validator("step", mode="before")
    @classmethod
    def _legacy_step(cls, value: object) -> object:
        return _LEGACY_STEPS.get(value, value) if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _legacy_pod_uid(cls, data: object) -> object:
        """Migration only: a roll persisted before `podUid` existed kept the uid in its message
        (`podUid=<uid>`); read it into the field once. Nothing else is parsed from messages."""
        if isinstance(data, dict) and not data.get("podUid") and not data.get("pod_uid"):
            match = _LEGACY_POD_UID.search(str(data.get("message") or ""))
            if match:
                return {**data, "podUid": match.group(1)}
        return data


class PendingPlan(StatusModel):
    """A plan waiting for approval (spec.remediation.requireApproval)."""

    plan_id: str = Field(
        description="Approve it with this id (annotation or spec.remediation.approvedPlanId)."
    )
    action: ActionType = Field(description="What would run.")
    id: str | None = Field(None, description="The request id, for requested actions.")
    summary: str = Field(description="One line: what the plan does.")
    details: list[str] | None = Field(None, max_length=100, description="The plan's lines (first 100).")
    created_at: AwareDatetime = Field(description="When the plan was first posted.")


class ActionOutcome(StrEnum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class ActionRecord(StatusModel):
    """One action taken (rate limits, cooldowns and the circuit breaker count these)."""

    action: ActionType = Field(description="The action type.")
    id: str | None = Field(None, description="Request id, for requested actions.")
    plan_id: str = Field(description="The plan carried out.")
    outcome: ActionOutcome = Field(description="Running, Succeeded or Failed.")
    started_at: AwareDatetime = Field(description="When it started.")
    finished_at: AwareDatetime | None = Field(None, description="When it ended.")
    message: str | None = Field(None, description="What happened.")
    generation: int = Field(
        0, ge=0, description="The spec generation it ran under (a spec change resets the circuit breaker)."
    )
    breaker_reset: str | None = Field(
        None, description="The reset-circuit-breaker annotation value in force when it ran."
    )


class RequestState(StrEnum):
    PENDING = "Pending"
    PLANNED = "Planned"
    WAITING = "Waiting"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    BLOCKED = "Blocked"

    @property
    def terminal(self) -> bool:
        """A request in a terminal state is never acted on again (once per id)."""
        return self in (RequestState.SUCCEEDED, RequestState.FAILED, RequestState.BLOCKED)


class RestartBegun(StatusModel):
    """A broker whose restart began (its pod deleted) but was not confirmed healthy when its roll
    halted. The next roll resumes it with its health check, not a second restart, while the
    broker's pod is no longer the one deleted (`plan.restart_resume.resume_step`)."""

    broker: int = Field(description="The node id whose restart began.")
    pod_uid: str = Field(description="The uid of the pod the roll deleted.")


class RollingRestartResult(StatusModel):
    """The outcome of one rolling restart request."""

    id: str = Field(description="The request id.")
    state: RequestState = Field(description="Pending, Planned, Running, Succeeded or Failed.")
    brokers_done: list[int] | None = Field(None, description="Brokers restarted so far.")
    started_at: AwareDatetime | None = Field(None, description="When the roll started.")
    finished_at: AwareDatetime | None = Field(None, description="When the roll ended.")
    message: str | None = Field(None, description="Details, e.g. why it halted.")
    restart_begun: RestartBegun | None = Field(
        None,
        description="A halted roll: the broker in flight, restart begun (pod deleted), not confirmed healthy. "
        "A new request that names it checks its health instead of restarting it again, while its pod is "
        "not the one deleted.",
    )
    batch_begun: list[RestartBegun] | None = Field(
        None,
        max_length=100,
        description="A roll halted with a batch in flight (maxConcurrent > 1): the other members whose restart "
        "began, as restartBegun is for the first; a new request checks their health instead of restarting "
        "them again.",
    )


class OffsetResetEntry(StatusModel):
    """One partition of an offset reset plan: current → target."""

    topic: str = Field(description="Topic.")
    partition: int = Field(description="Partition.")
    current: int | None = Field(None, description="Committed offset before the reset (absent: none).")
    target: int | None = Field(
        None, description="Offset after the reset (absent: cannot be computed, see note)."
    )
    log_start: int | None = Field(None, description="Earliest offset when planned.")
    log_end: int | None = Field(None, description="Latest offset when planned.")
    clamped: bool = Field(
        False, description="The strategy's offset was outside [logStart, logEnd] and was clamped."
    )
    note: str | None = Field(None, description="Why the target was adjusted or cannot be computed.")


class OffsetResetResult(StatusModel):
    """The plan and outcome of one offset reset request."""

    id: str = Field(description="The request id.")
    state: RequestState = Field(
        description="Pending, Planned (dry run / awaiting approval), Waiting (group not Empty), "
        "Running, Succeeded, Failed or Blocked (group stayed active past emptyGroupTimeout)."
    )
    group: str = Field(description="The consumer group.")
    plan: list[OffsetResetEntry] | None = Field(
        None, max_length=MAX_PLAN_ENTRIES, description="Per partition: current → target."
    )
    waiting_since: AwareDatetime | None = Field(
        None, description="When it began waiting for the group to be Empty."
    )
    saved_offsets: str | None = Field(
        None, description="ConfigMap holding the offsets before the reset (for rollback)."
    )
    finished_at: AwareDatetime | None = Field(None, description="When it was applied, failed or blocked.")
    message: str | None = Field(None, description="Details.")


class TransactionAbortResult(StatusModel):
    """The outcome of one transaction abort request."""

    id: str = Field(description="The request id.")
    state: RequestState = Field(
        description="Pending, Planned (dry run / awaiting approval), Running, Succeeded (aborted and gone "
        "when the partition was read again) or Failed (not hanging, not found, or the abort did not take)."
    )
    finished_at: AwareDatetime | None = Field(None, description="When it was aborted or failed.")
    message: str | None = Field(None, description="Details: the transaction, or why it was not aborted.")


class WithheldAction(StatusModel):
    """An action the operator would take but did not, and why."""

    action: ActionType = Field(description="The action type.")
    id: str | None = Field(None, description="The request id, for requested actions.")
    reason: WithheldReason = Field(description="Why it was withheld (CamelCase).")
    message: str = Field(description="The reason in words, with what would let it run.")
    since: AwareDatetime | None = Field(None, description="Withheld for this reason since.")
    retry_at: AwareDatetime | None = Field(None, description="When it may run at the earliest, if known.")


class KafkaHealthPolicyStatus(StatusModel):
    """What the operator saw and did. Written by the operator only."""

    observed_generation: int | None = Field(None, ge=0, description="The spec generation last processed.")
    health: Health = Field(
        Health.UNKNOWN, description="Healthy, Warning, Critical or Unknown (worst finding)."
    )
    conditions: list[Condition] | None = Field(
        None,
        max_length=8,
        description="Ready, Healthy, Remediating, Degraded.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    last_diagnosis: LastDiagnosis | None = Field(None, description="Counts of the latest diagnosis.")
    top_incidents: list[IncidentSummary] | None = Field(
        None,
        max_length=MAX_TOP_INCIDENTS,
        description=f"The worst incidents of the latest diagnosis (at most {MAX_TOP_INCIDENTS}; "
        "lastDiagnosis.incidents counts all).",
    )
    top_findings: list[FindingSummary] | None = Field(
        None, max_length=MAX_TOP_FINDINGS, description="The worst findings of the latest diagnosis."
    )
    remediation_summary: str | None = Field(
        None, max_length=256, description="One line: what remediation is doing or why it waits."
    )
    current_remediation: CurrentRemediation | None = Field(None, description="The action in flight.")
    pending_plan: PendingPlan | None = Field(None, description="The plan awaiting approval.")
    history: list[ActionRecord] | None = Field(
        None, max_length=MAX_HISTORY, description=f"The last {MAX_HISTORY} actions, oldest first."
    )
    rolling_restarts: list[RollingRestartResult] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Results of rolling restart requests, by id.",
        json_schema_extra=REQUEST_LIST,
    )
    offset_resets: list[OffsetResetResult] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Plans and results of offset reset requests, by id.",
        json_schema_extra=REQUEST_LIST,
    )
    transaction_aborts: list[TransactionAbortResult] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Results of transaction abort requests, by id.",
        json_schema_extra=REQUEST_LIST,
    )
    withheld: list[WithheldAction] | None = Field(
        None, max_length=MAX_WITHHELD, description="Actions not taken, each with its reason."
    )
    kopf: dict[str, Any] | None = Field(
        None,
        description="Kopf's own bookkeeping (handler progress); opaque.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
    )


def append_history(history: list[ActionRecord] | None, record: ActionRecord) -> list[ActionRecord]:
    """The history with `record` added, trimmed to the newest MAX_HISTORY."""
    return [*(history or []), record][-MAX_HISTORY:]
