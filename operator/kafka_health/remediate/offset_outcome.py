"""What an offset reset (or its rollback) did: per partition before, target and after, and the
outcome as the request's state, status entry and history record. Split from `offset_reset.py`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.collect import security_errors
from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    OffsetResetResult,
    RequestState,
)
from kafka_health.plan.decision import RequestUpdate

Key = tuple[str, int]


class ResetState(StrEnum):
    APPLIED = "Applied"
    """Every partition committed at its target and verified."""
    ALREADY_APPLIED = "AlreadyApplied"
    """The saved-offsets record for this id exists: the reset ran (or may have run) before; nothing done."""
    NOT_EMPTY = "NotEmpty"
    """The group has members: nothing changed."""
    FAILED = "Failed"
    """Some partition (or the whole call) failed; see the partitions and the message."""


class PartitionReset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    partition: int
    before: int | None = Field(None, description="Committed offset read live before (None: none).")
    target: int | None = None
    after: int | None = Field(None, description="Committed offset read back afterwards.")
    clamped: bool = False
    note: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.target is not None and self.after == self.target


class OffsetResetOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: ResetState
    group: str
    request_id: str
    message: str
    saved_offsets: str | None = Field(
        None, description="Where the offsets before are saved (ConfigMap or file)."
    )
    partitions: list[PartitionReset] = Field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether this call may have altered committed offsets."""
        return self.state in (ResetState.APPLIED, ResetState.FAILED) and self.saved_offsets is not None

    def denied(self) -> str | None:
        """The ACL the principal lacks when Kafka refused this reset for authorization: READ on the
        GROUP or on a TOPIC for the offset commit (from a partition's error), DESCRIBE on the GROUP
        for the live read before it (from the message); None otherwise."""
        if self.state is not ResetState.FAILED:
            return None
        commit = f"alter_consumer_group_offsets:{self.group}"
        for p in self.partitions:
            if p.error and (found := security_errors.authorization_denied(commit, p.error, p.topic)):
                return found
        part = f"group:{self.group}" if "could not read the group live" in self.message else commit
        return security_errors.authorization_denied(part, self.message)

    def explained(self) -> str:
        """The message, led by the ACL to grant when Kafka refused for authorization: the
        request's result and the history entry say what to do, not only that it failed (the
        policy's summary is the latest cycle's and is soon replaced)."""
        denied = self.denied()
        return self.message if denied is None else f"{denied}; {self.message}"

    def request_state(self) -> RequestState:
        """Applied / AlreadyApplied → Succeeded; NotEmpty → Waiting (the planner's group gate turns a
        long wait into Blocked); Failed → Failed."""
        return {
            ResetState.APPLIED: RequestState.SUCCEEDED,
            ResetState.ALREADY_APPLIED: RequestState.SUCCEEDED,
            ResetState.NOT_EMPTY: RequestState.WAITING,
            ResetState.FAILED: RequestState.FAILED,
        }[self.state]

    def request_update(self, waiting_since: datetime | None = None) -> RequestUpdate:
        return RequestUpdate(
            action=ActionType.OFFSET_RESET,
            id=self.request_id,
            state=self.request_state(),
            message=self.explained()[:1000],
            waiting_since=waiting_since if self.state is ResetState.NOT_EMPTY else None,
        )

    def result(self, previous: OffsetResetResult | None, now: datetime) -> OffsetResetResult:
        """status.offsetResets[id] after this run (the plan kept from `previous`)."""
        state = self.request_state()
        return OffsetResetResult(
            id=self.request_id,
            state=state,
            group=self.group,
            plan=previous.plan if previous else None,
            waiting_since=previous.waiting_since if previous and state is RequestState.WAITING else None,
            saved_offsets=self.saved_offsets or (previous.saved_offsets if previous else None),
            finished_at=now if state.terminal else None,
            message=self.explained()[:1000],
        )

    def record(
        self,
        *,
        plan_id: str,
        started_at: datetime,
        finished_at: datetime,
        generation: int,
        breaker_reset: str | None,
    ) -> ActionRecord | None:
        """The status.history entry; None when nothing was attempted (NotEmpty, AlreadyApplied)."""
        if self.state in (ResetState.NOT_EMPTY, ResetState.ALREADY_APPLIED):
            return None
        return ActionRecord(
            action=ActionType.OFFSET_RESET,
            id=self.request_id,
            plan_id=plan_id,
            outcome=ActionOutcome.SUCCEEDED if self.state is ResetState.APPLIED else ActionOutcome.FAILED,
            started_at=started_at,
            finished_at=finished_at,
            message=self.explained()[:1000],
            generation=generation,
            breaker_reset=breaker_reset,
        )

    def lines(self) -> list[str]:
        """`GROUP TOPIC PARTITION BEFORE TARGET AFTER RESULT` rows."""
        out = []
        for p in self.partitions:
            result = "ok" if p.ok else (p.error or "not verified")
            out.append(
                f"{self.group} {p.topic} {p.partition} {dash(p.before)} {dash(p.target)} {dash(p.after)} {result}"
            )
        return out


def dash(value: int | None) -> str:
    return "-" if value is None else str(value)
