"""What the planner returns: one action (or none) and, for everything not done, the reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.policy import (
    ActionType,
    OffsetResetEntry,
    PendingPlan,
    RequestState,
    RollWaitReason,
    TransactionAbortRequest,
    WithheldAction,
)
from kafka_health.plan.leader_election_plan import ElectionPlan
from kafka_health.plan.offset_reset_plan import OffsetResetPlan
from kafka_health.plan.restart_safety import RestartSafety


class Verdict(StrEnum):
    ACT = "Act"
    """Start `action` (or, for a roll in flight, restart its next broker)."""
    RESUME = "Resume"
    """An action is in flight (status.currentRemediation): let its executor continue it."""
    DRY_RUN = "DryRun"
    """`action` is what Enforce would do now; post it in status, do nothing."""
    AWAIT_APPROVAL = "AwaitApproval"
    """`action` needs approval: post `pending_plan` in status."""
    HALT = "Halt"
    """The roll in flight waited longer than `timeouts.safeToRestart` for its next broker to
    become safe: stop it (Failed, Degraded) and touch nothing else."""
    NONE = "None"
    """Nothing to do, or everything withheld (see `withheld`)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RestartStep(_Model):
    """The next broker of a rolling restart, after the safety rules passed for it."""

    request_id: str
    order: list[int] = Field(description="Brokers still to restart, in order (the next first).")
    done: list[int] = Field(default_factory=list)
    next_broker: int
    safety: RestartSafety
    post_roll_election: bool = True
    never_safe: list[str] = Field(
        default_factory=list,
        description="Roll start (neverSafePartitions: Proceed): partitions (RF <= min ISR) of the roll's "
        "brokers, unavailable to acks=all producers while their broker restarts; the first 100.",
    )
    never_safe_count: int = 0


class RollWait(_Model):
    """A roll in flight waiting for its next broker to become safe (or its pods Ready)."""

    reason: RollWaitReason
    broker: int = Field(description="The broker that is next.")
    since: datetime = Field(description="Waiting since (carried over from status while it lasts).")
    deadline: datetime = Field(description="since + timeouts.safeToRestart: the roll halts then.")
    rules: list[str] = Field(description="The blocking rules, e.g. under_replicated, min_isr, one_at_a_time.")
    partitions: list[str] = Field(default_factory=list, description="The first blocking partitions.")
    message: str
    started: bool = Field(False, description="This decision starts the wait (status had no waitingSince).")


class _Planned(_Model):
    """What every planned action says: which request, the plan's id, and in words what it does."""

    id: str | None = Field(None, description="Request id (None for automatic elections).")
    plan_id: str = Field(description="Deterministic id of this plan (approval refers to it).")
    summary: str
    details: list[str] = Field(default_factory=list)


class PlannedElection(_Planned):
    action: Literal[ActionType.PREFERRED_LEADER_ELECTION] = ActionType.PREFERRED_LEADER_ELECTION
    election: ElectionPlan


class PlannedRestart(_Planned):
    action: Literal[ActionType.ROLLING_RESTART] = ActionType.ROLLING_RESTART
    restart: RestartStep


class PlannedOffsetReset(_Planned):
    action: Literal[ActionType.OFFSET_RESET] = ActionType.OFFSET_RESET
    offset_reset: OffsetResetPlan


class PlannedTransactionAbort(_Planned):
    action: Literal[ActionType.TRANSACTION_ABORT] = ActionType.TRANSACTION_ABORT
    abort: TransactionAbortRequest
    timeout_minutes: int = Field(description="The producer's silence an abort requires (0: not checked).")


PlannedAction = Annotated[
    PlannedElection | PlannedRestart | PlannedOffsetReset | PlannedTransactionAbort,
    Field(discriminator="action"),
]
"""One action the planner chose, its plan typed by its kind (an election cannot carry a roll's step)."""


class RequestUpdate(_Model):
    """What status.rollingRestarts / offsetResets / transactionAborts should now say about a request."""

    action: ActionType
    id: str
    state: RequestState
    message: str
    waiting_since: datetime | None = None
    plan: list[OffsetResetEntry] | None = None


class Decision(_Model):
    verdict: Verdict
    action: PlannedAction | None = None
    reason: str = Field(description="One sentence: why this verdict.")
    withheld: list[WithheldAction] = Field(default_factory=list)
    pending_plan: PendingPlan | None = None
    request_updates: list[RequestUpdate] = Field(default_factory=list)
    roll_wait: RollWait | None = Field(None, description="Set while a roll in flight waits for safety.")

    @property
    def acts(self) -> bool:
        """True when an executor must do something now: against Kafka or Kubernetes (Act, Resume),
        or ending a roll that waited too long (Halt: status only, nothing touched)."""
        return self.verdict in (Verdict.ACT, Verdict.RESUME, Verdict.HALT)


def merge_withheld(
    previous: Sequence[WithheldAction] | None, current: Sequence[WithheldAction], now: datetime
) -> list[WithheldAction]:
    """`current` with `since` carried over from `previous` where action, id and reason are unchanged."""
    before = {(w.action, w.id, w.reason): w.since for w in previous or []}
    out = []
    for item in current:
        since = before.get((item.action, item.id, item.reason)) or item.since or now
        out.append(item.model_copy(update={"since": since}))
    return out
