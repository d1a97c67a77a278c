"""spec.remediation: mode, windows, approval, rate limits, circuit breaker and the actions' settings."""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from croniter import CroniterBadDateError, croniter
from pydantic import Field, field_validator

from kafka_health.models.policy.base import SpecModel, section
from kafka_health.models.policy.constants import MAX_HISTORY, MAX_REQUESTS
from kafka_health.models.policy.durations import Duration, PositiveDuration, WindowDuration
from kafka_health.models.policy.requests import (
    REQUEST_LIST,
    OffsetResetRequest,
    RollingRestartRequest,
    TransactionAbortRequest,
    unique_ids,
)
from kafka_health.models.policy.rules import Text, spec_error
from kafka_health.models.policy.text import CronExpression, RequestId, TimeZoneName


class Mode(StrEnum):
    OBSERVE = "Observe"
    DRY_RUN = "DryRun"
    ENFORCE = "Enforce"


class ActionType(StrEnum):
    PREFERRED_LEADER_ELECTION = "PreferredLeaderElection"
    ROLLING_RESTART = "RollingRestart"
    OFFSET_RESET = "OffsetReset"
    TRANSACTION_ABORT = "TransactionAbort"


_RANDOM_CRON_FIELD = re.compile(r"(?<![A-Za-z])[RHrh](?![A-Za-z])")
"""croniter's 'R' (random) and 'H' (hashed) values; not inside names such as MAR or THU."""


class MaintenanceWindow(SpecModel):
    """A recurring window: opens at each time the cron schedule fires and stays open for `duration`."""

    name: RequestId | None = Field(None, description="A name for messages (e.g. 'nightly').")
    schedule: CronExpression = Field(
        description="When the window opens: 5-field cron 'minute hour day-of-month month day-of-week', "
        "evaluated in timeZone."
    )
    duration: WindowDuration = Field(
        description="How long the window stays open (more than 0s, at most 24h)."
    )
    time_zone: TimeZoneName = Field(
        "UTC", description="IANA time zone of the schedule, e.g. 'Europe/Berlin'. DST is handled."
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        if not croniter.is_valid(value) or (not value.startswith("@") and len(value.split()) != 5):
            raise spec_error(
                f"{value!r} is not a valid cron schedule: use 5 fields 'minute hour day-of-month month "
                "day-of-week' with values in range (e.g. '0 2 * * *', '30 1 * * SAT')"
            )
        if _RANDOM_CRON_FIELD.search(value):
            raise spec_error(
                f"{value!r} uses 'R' or 'H' (a random or hashed value, a croniter extension): the window "
                "would open at a different time at every evaluation; write the minute and hour, e.g. '17 2 * * *'"
            )
        try:
            # From a leap year's first day: a schedule that fires at all fires within 8 years.
            croniter(value, datetime(2000, 1, 1)).get_next(datetime)
        except CroniterBadDateError:
            raise spec_error(
                f"{value!r} never fires (a day that no month has, e.g. 30 February or 31 April): "
                "the window would never open"
            ) from None
        return value

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise spec_error(
                f"{value!r} is not an IANA time zone: use e.g. 'UTC', 'Europe/Berlin', 'America/New_York'"
            ) from None
        return value


class RateLimit(SpecModel):
    """At most maxActions of this type per `per`, and `cooldown` after each one ends."""

    max_actions: int = Field(1, ge=1, le=MAX_HISTORY, description="Actions of this type allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field(
        "0s", description="Minimum time between the end of one action of this type and the next."
    )


class ElectionRateLimit(RateLimit):
    """Rate limit of preferred leader elections."""

    max_actions: int = Field(6, ge=1, le=MAX_HISTORY, description="Elections allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("5m", description="Minimum time between the end of one election and the next.")


class RestartRateLimit(RateLimit):
    """Rate limit of rolling restarts."""

    max_actions: int = Field(2, ge=1, le=MAX_HISTORY, description="Rolling restarts allowed per `per`.")
    per: PositiveDuration = Field("24h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("30m", description="Minimum time between the end of one roll and the next.")


class OffsetResetRateLimit(RateLimit):
    """Rate limit of offset resets."""

    max_actions: int = Field(10, ge=1, le=MAX_HISTORY, description="Offset resets allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("0s", description="Minimum time between the end of one reset and the next.")


class TransactionAbortRateLimit(RateLimit):
    """Rate limit of transaction aborts."""

    max_actions: int = Field(10, ge=1, le=MAX_HISTORY, description="Transaction aborts allowed per `per`.")
    per: PositiveDuration = Field("1h", description="The sliding period maxActions counts over.")
    cooldown: Duration = Field("0s", description="Minimum time between the end of one abort and the next.")


class RateLimits(SpecModel):
    """Rate limits and cooldowns per action type (counted from status.history)."""

    preferred_leader_election: ElectionRateLimit = section(ElectionRateLimit, "Preferred leader elections.")
    rolling_restart: RestartRateLimit = section(RestartRateLimit, "Rolling restarts.")
    offset_reset: OffsetResetRateLimit = section(OffsetResetRateLimit, "Offset resets.")
    transaction_abort: TransactionAbortRateLimit = section(TransactionAbortRateLimit, "Transaction aborts.")

    def for_action(self, action: ActionType) -> RateLimit:
        return {
            ActionType.PREFERRED_LEADER_ELECTION: self.preferred_leader_election,
            ActionType.ROLLING_RESTART: self.rolling_restart,
            ActionType.OFFSET_RESET: self.offset_reset,
            ActionType.TRANSACTION_ABORT: self.transaction_abort,
        }[action]


class CircuitBreaker(SpecModel):
    """Stops all automatic actions after consecutive failures, until the spec changes or
    the annotation kafkahealth.io/reset-circuit-breaker gets a new value."""

    max_failures: int = Field(
        3, ge=1, le=MAX_HISTORY, description="Consecutive failed actions that open the breaker."
    )


class PreferredLeaderElection(SpecModel):
    """Moves leadership back to preferred replicas when leaders are imbalanced."""

    enabled: bool = Field(True, description="Elect preferred leaders automatically when imbalanced.")
    imbalance_threshold: int = Field(
        10,
        ge=0,
        le=100,
        description="Act when, for some broker, more than this % of the partitions it is preferred leader of "
        "are led by another broker (Kafka's leader.imbalance.per.broker.percentage).",
    )
    batch_size: int = Field(50, ge=1, le=10_000, description="Partitions per ElectLeaders request.")
    require_maintenance_window: bool = Field(False, description="Elect only inside a maintenance window.")


class RestartTimeouts(SpecModel):
    """How long to wait after each broker restart before halting the roll."""

    pod_ready: PositiveDuration = Field("10m", description="For the new pod to become Ready.")
    broker_registered: PositiveDuration = Field(
        "5m", description="For the broker to register with the cluster again."
    )
    urp_zero: PositiveDuration = Field("15m", description="For under-replicated partitions to return to 0.")
    leadership: PositiveDuration = Field(
        "1m",
        description="For the broker's leaderships to move to other in-sync replicas before its restart, and "
        "back after (drainLeadership). Not a halt: past it the restart goes ahead (its controlled shutdown "
        "moves what is left), or the roll goes on (the post-roll election gives back what is left).",
    )
    safe_to_restart: PositiveDuration = Field(
        "15m",
        description="Between brokers: for the next broker to become safe to restart (every restart safety "
        "rule passes and every broker pod is Ready), counted from when the roll started waiting. "
        "On timeout the roll halts (Degraded, RemediationHalted).",
    )
    reassignment: PositiveDuration = Field(
        "6h",
        description="Between brokers: for the partition reassignments in flight that involve the next broker "
        "to complete (restart safety rule 5; the roll waits as ReassignmentInProgress, not as an unsafe "
        "broker), counted from when the roll started waiting. On timeout the roll halts (RemediationHalted).",
    )


class NeverSafePartitions(StrEnum):
    """What a roll does about partitions that can never roll safely (RF <= min.insync.replicas)."""

    REFUSE = "Refuse"
    """The roll does not start (nor restart a broker holding one); withheld as NeverSafePartitions."""
    PROCEED = "Proceed"
    """The roll goes ahead; status and the RollStarted Event name the partitions that will be
    unavailable to acks=all producers while their broker restarts."""


class ReassignmentsInFlight(StrEnum):
    """What a roll does about partition reassignments in flight when it would start."""

    REFUSE = "Refuse"
    """The roll does not start while a reassignment involves a broker it restarts; withheld as
    ReassignmentInProgress until they complete."""
    PROCEED = "Proceed"
    """The roll starts; it still holds before each broker a reassignment involves (restart safety
    rule 5, up to timeouts.reassignment)."""


class BatchBy(StrEnum):
    """Which brokers a roll with maxConcurrent > 1 may restart together."""

    RACK = "Rack"
    """Only brokers of one rack (broker.rack) go together: with rack-aware replicas a rack holds at
    most one replica of a partition."""
    NONE = "None"
    """Any brokers, as long as the batch rule holds for every partition."""


class RollingRestart(SpecModel):
    """Rolling broker restarts: one broker at a time, each gated by the restart safety rules."""

    require_maintenance_window: bool = Field(
        True, description="Restart only inside a maintenance window (none defined: never)."
    )
    timeouts: RestartTimeouts = section(RestartTimeouts, "Timeouts after each broker restart.")
    pause_between_brokers: Duration = Field(
        "30s", description="Wait after a broker is healthy before the next."
    )
    drain_leadership: bool = Field(
        False,
        description="Before each broker's pod is deleted, move its leaderships to in-sync replicas (a replica "
        "reorder that moves no data, then a preferred election), and restore them once it is back in every "
        "ISR (needs ALTER on CLUSTER). Off by default: measured on the testbed it does not lower the worst "
        "producer latency of a roll yet (docs/remediation-rolling-restart.md). false: leaderships move by "
        "each broker's controlled shutdown.",
    )
    max_concurrent: int = Field(
        1,
        ge=1,
        le=100,
        description="Brokers restarted together (a batch). 1 (default): one at a time. Above 1: brokers go "
        "together only when, between them, they hold no more replicas of any partition than its ISR can lose "
        "while staying at or above min.insync.replicas (never its last in-sync replica), re-checked on live "
        "state before each batch; KRaft voters (controllers, combined nodes) always go alone, the active "
        "controller last. A batch refused on live state restarts its first broker alone.",
    )
    batch_by: BatchBy = Field(
        BatchBy.RACK,
        description="With maxConcurrent > 1, Rack (default): a batch holds brokers of one rack only "
        "(broker.rack). None: any brokers the batch rule allows.",
    )
    diagnosis_interval: Duration = Field(
        "2m",
        description="While a roll is in flight, the full diagnosis runs at most this often (never more often "
        "than spec.diagnostics.interval): the restarting brokers get the CPU it would take. The roll itself "
        "re-checks the restart safety rules on live Kafka state before each broker regardless.",
    )
    post_roll_preferred_election: bool = Field(
        True, description="After the last broker, elect preferred leaders for the restarted brokers."
    )
    never_safe_partitions: NeverSafePartitions = Field(
        NeverSafePartitions.REFUSE,
        description="Partitions whose replication factor is <= min.insync.replicas can never roll safely: "
        "while a broker holding one restarts, acks=all producers to it fail (RF 1: it is offline). "
        "Refuse (default): the roll does not start while a broker to restart holds one. "
        "Proceed: roll anyway; status and the RollStarted Event name them.",
    )
    reassignments_in_flight: ReassignmentsInFlight = Field(
        ReassignmentsInFlight.REFUSE,
        description="Partition reassignments in flight (kafka-reassign-partitions, Cruise Control, a rebalance) "
        "that involve brokers the roll restarts. Refuse (default): the roll does not start until they complete "
        "(ReassignmentInProgress). Proceed: it starts, and holds before each broker a reassignment involves, "
        "up to timeouts.reassignment. Either way a reassignment's new replicas are never taken for a failed broker.",
    )
    requests: list[RollingRestartRequest] | None = Field(
        None, max_length=MAX_REQUESTS, description="Restart requests by id.", json_schema_extra=REQUEST_LIST
    )

    @field_validator("requests")
    @classmethod
    def _ids(cls, value: list[RollingRestartRequest] | None) -> list[RollingRestartRequest] | None:
        unique_ids(value or [])
        return value


class OffsetResets(SpecModel):
    """Consumer-group offset resets by id."""

    require_maintenance_window: bool = Field(False, description="Reset only inside a maintenance window.")
    requests: list[OffsetResetRequest] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Offset reset requests by id.",
        json_schema_extra=REQUEST_LIST,
    )

    @field_validator("requests")
    @classmethod
    def _ids(cls, value: list[OffsetResetRequest] | None) -> list[OffsetResetRequest] | None:
        unique_ids(value or [])
        return value


class TransactionAborts(SpecModel):
    """Aborts of hanging transactions by request (`kafka-health abort-transaction`'s rule: only a
    transaction no coordinator will end, its producer silent for longer than
    diagnostics.checks.hangingTransactions.maxTransactionTimeoutMinutes)."""

    require_maintenance_window: bool = Field(False, description="Abort only inside a maintenance window.")
    requests: list[TransactionAbortRequest] | None = Field(
        None,
        max_length=MAX_REQUESTS,
        description="Transaction abort requests by id.",
        json_schema_extra=REQUEST_LIST,
    )

    @field_validator("requests")
    @classmethod
    def _ids(cls, value: list[TransactionAbortRequest] | None) -> list[TransactionAbortRequest] | None:
        unique_ids(value or [])
        return value


class RemediationSpec(SpecModel):
    """What the operator may do about findings, and the guardrails around it."""

    mode: Mode = Field(
        Mode.OBSERVE,
        description="Observe: diagnose only. DryRun: plan and show plans in status, act on nothing. "
        "Enforce: act, within the guardrails.",
    )
    paused: bool = Field(False, description="Start no action and take no further step of one in flight.")
    maintenance_windows: list[MaintenanceWindow] | None = Field(
        None, max_length=20, description="When actions that require a window may run (any window open)."
    )
    require_approval: bool = Field(
        False,
        description="Post each plan in status.pendingPlan and act only once it is approved: by the "
        "annotation kafkahealth.io/approve-plan=<planId> or by approvedPlanId.",
    )
    approved_plan_id: Annotated[str, Text(r"^[a-z0-9-]+$", "a planId from status.pendingPlan", 63)] | None = (
        Field(None, description="GitOps approval: the planId (from status.pendingPlan) that may run.")
    )
    rate_limits: RateLimits = section(RateLimits, "Rate limits and cooldowns per action type.")
    circuit_breaker: CircuitBreaker = section(CircuitBreaker, "Stop acting after repeated failures.")
    preferred_leader_election: PreferredLeaderElection = section(
        PreferredLeaderElection, "Automatic preferred leader election."
    )
    rolling_restart: RollingRestart = section(RollingRestart, "Rolling broker restarts by request.")
    offset_resets: OffsetResets = section(OffsetResets, "Consumer-group offset resets by request.")
    transaction_aborts: TransactionAborts = section(
        TransactionAborts, "Aborts of hanging transactions by request (only a hanging one is aborted)."
    )
