"""spec.diagnostics: interval, history retention and the checks' toggles and thresholds."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from kafka_health.models.policy.base import SpecModel, section
from kafka_health.models.policy.constants import INT16_MAX, INT32_MAX, INT64_MAX, MAX_TOP_FINDINGS
from kafka_health.models.policy.durations import (
    DURATION_PATTERN,
    IntervalDuration,
    PositiveDuration,
    RetentionDuration,
    parse_duration,
)
from kafka_health.models.policy.rules import CelRule, rule_error


class Check(SpecModel):
    """A check that has no thresholds."""

    enabled: bool = Field(True, description="Run this check.")


class LeaderImbalanceCheck(Check):
    """Partitions not led by their preferred replica, per broker, and leader-count skew."""

    threshold_percent: int = Field(
        10,
        ge=0,
        le=100,
        description="Warn when a broker is preferred leader of more than this % of partitions it does not lead.",
    )
    skew_percent: int = Field(
        50,
        ge=0,
        le=1000,
        description="Warn when leader counts across live brokers spread (most minus fewest leaders) by "
        "more than this % of the mean leaders per broker; a spread of 2 is always tolerated.",
    )


class WindowedCheck(Check):
    """A check over the samples of a sliding window of history."""

    window: PositiveDuration = Field("15m", description="How much history the check looks at.")


class UnderReplicatedCheck(Check):
    """Partitions whose ISR is smaller than the replica set, each replica out of sync with its
    cause (broker down or fenced, reassigning, throttled, catching up, stuck, lagging)."""

    stuck_after: PositiveDuration = Field(
        "10m",
        description="A replica out of sync whose lag (bytes behind its leader) has not shrunk for this "
        "long is stuck; one whose lag shrank is catching up, with an ETA at its rate.",
    )


class LeaderFlappingCheck(WindowedCheck):
    """Leadership changes per partition and ISR churn per broker over the window."""

    max_leader_changes: int = Field(
        3,
        ge=1,
        le=INT32_MAX,
        description="Warn when a partition changes leader this many times or more in the window.",
    )
    max_isr_changes: int = Field(
        10,
        ge=1,
        le=INT32_MAX,
        description="Warn when a broker drops out of partitions' ISRs at this many separate samples or more "
        "in the window.",
    )


class TimeLag(StrEnum):
    """How lag in seconds is measured (docs/diagnostics.md, "Lag in seconds")."""

    INTERPOLATED = "Interpolated"  # over the log-end samples the history keeps: no extra read
    EXACT = "Exact"  # from the timestamp of the record at the committed offset: READ on the topic


class LagSeconds(SpecModel):
    """Limits on a group partition's lag in seconds; unset, lag in seconds is reported, not judged."""

    cel_rules = (
        CelRule(
            "!has(self.warning) || !has(self.critical) || self.warning < self.critical",
            "warning must be below critical",
            ".warning",
        ),
    )

    warning: int | None = Field(
        None,
        ge=1,
        le=INT32_MAX,
        description="Seconds behind at or above which a partition whose trend is OK warns (status WARN).",
    )
    critical: int | None = Field(
        None,
        ge=1,
        le=INT32_MAX,
        description="Seconds behind at or above which a partition that is OK or WARN is critical "
        "(status CRITICAL_LAG).",
    )

    @model_validator(mode="after")
    def _order(self) -> LagSeconds:
        if self.warning is not None and self.critical is not None and self.warning >= self.critical:
            raise rule_error(self.cel_rules[0])
        return self


class ConsumerLagCheck(WindowedCheck):
    """Consumer lag per group and partition, with a Burrow-style status over the window."""

    cel_rules = (
        CelRule(
            "!has(self.warningLag) || !has(self.criticalLag) || self.warningLag < self.criticalLag",
            "warningLag must be below criticalLag",
            ".warningLag",
        ),
    )

    warning_lag: int = Field(
        10_000,
        ge=0,
        le=INT64_MAX,
        description="Until the history holds 3 samples of a group partition (a new policy), a lag of this many "
        "messages makes a warning; with more samples, the Burrow-style status over them decides "
        "(docs/diagnostics.md).",
    )
    critical_lag: int = Field(
        1_000_000,
        ge=1,
        le=INT64_MAX,
        description="A lag of this many messages or more makes a critical finding (status CRITICAL_LAG), "
        "whatever its trend, unless the partition is already STALL, BLOCKED, STOP or REWIND.",
    )
    time_lag: TimeLag = Field(
        TimeLag.INTERPOLATED,
        description="How lag in seconds is measured: Interpolated (how long ago the log end was where the "
        "committed offset is, read between the history's samples: within one interval) or Exact (now minus "
        "the timestamp of the record at the committed offset, fetched every cycle for the partitions behind, "
        "the most lagging 2000 first; needs READ on their topics, and a partition not fetched falls back "
        "to Interpolated).",
    )
    max_lag_seconds: LagSeconds = section(
        LagSeconds,
        "Limits on lag in time: how long ago the log end was where the group's committed offset is now "
        "(interpolated over the history's samples; docs/diagnostics.md).",
    )

    @model_validator(mode="after")
    def _order(self) -> ConsumerLagCheck:
        if self.warning_lag >= self.critical_lag:
            raise rule_error(self.cel_rules[0])
        return self


class RebalanceStormCheck(WindowedCheck):
    """A group seen rebalancing in many samples of the window."""

    min_percent: int = Field(
        30,
        ge=1,
        le=100,
        description="Warn when the group is seen rebalancing in at least this % of the window's samples "
        "(and in at least 3 of them).",
    )


class ReconciliationCheck(Check):
    """Consumer-protocol group members (KIP-848) stuck reconciling their assignment with their target."""

    stuck_after: PositiveDuration = Field(
        "5m",
        description="A member whose assignment has differed from its target for this long is stuck "
        "(e.g. blocked in its rebalance callback, or not polling).",
    )


class DiskUsageCheck(Check):
    """Disk usage per broker and time to full."""

    cel_rules = (
        CelRule(
            "!has(self.warningPercent) || !has(self.criticalPercent) || self.warningPercent < self.criticalPercent",
            "warningPercent must be below criticalPercent",
            ".warningPercent",
        ),
    )

    warning_percent: int = Field(80, ge=1, le=100, description="Used % of a log dir that makes a warning.")
    critical_percent: int = Field(
        90, ge=1, le=100, description="Used % of a log dir that makes a critical finding."
    )
    time_to_full_warning: PositiveDuration = Field(
        "24h", description="Warn when a log dir will be full within this time at its growth rate."
    )

    @model_validator(mode="after")
    def _order(self) -> DiskUsageCheck:
        if self.warning_percent >= self.critical_percent:
            raise rule_error(self.cel_rules[0])
        return self


class DurabilityCheck(Check):
    """Topic settings that risk data loss."""

    min_replication_factor: int = Field(
        3, ge=1, le=INT16_MAX, description="Warn on topics with fewer replicas."
    )
    min_insync_replicas: int = Field(
        2, ge=1, le=INT16_MAX, description="Warn on topics whose min.insync.replicas is lower."
    )


class QuorumCheck(Check):
    """KRaft quorum: a leader exists and voters keep up; brokers missing from the cluster."""

    max_voter_lag: int = Field(
        1000, ge=0, le=INT64_MAX, description="Warn when a voter is more records behind the leader."
    )


class CertificatesCheck(Check):
    """The certificates brokers serve on the TLS listener the operator reaches them through."""

    cel_rules = (
        CelRule(
            "!has(self.warningDays) || !has(self.criticalDays) || self.criticalDays < self.warningDays",
            "criticalDays must be below warningDays",
            ".criticalDays",
        ),
    )

    warning_days: int = Field(
        30,
        ge=1,
        le=3650,
        description="Warn when a broker's served certificate chain ends within this many days.",
    )
    critical_days: int = Field(
        7, ge=0, le=3650, description="Critical when it ends within this many days (or has ended)."
    )

    @model_validator(mode="after")
    def _order(self) -> CertificatesCheck:
        if self.critical_days >= self.warning_days:
            raise rule_error(self.cel_rules[0])
        return self


class HangingTransactionsCheck(Check):
    """Transactions no coordinator will ever end (KIP-664), found as kafka-transactions.sh
    find-hanging finds them. Off by default: reading the producers of a partition needs READ on
    its topic (and the transactional ids DESCRIBE on TRANSACTIONAL_ID), more than the rest of
    the diagnosis asks."""

    enabled: bool = Field(
        False,
        description="Look for hanging transactions (needs READ on TOPIC and DESCRIBE on "
        "TRANSACTIONAL_ID, see the ACL table in docs/policy.md).",
    )
    max_transaction_timeout_minutes: int = Field(
        15,
        ge=1,
        le=10080,
        description="Only transactions whose producer was last heard from longer ago than this are "
        "looked at (the brokers' transaction.max.timeout.ms; kafka-transactions find-hanging "
        "--max-transaction-timeout).",
    )


class Checks(SpecModel):
    """Per-check toggles and thresholds."""

    offline_partitions: Check = section(Check, "Partitions without a leader.")
    under_replicated: UnderReplicatedCheck = section(
        UnderReplicatedCheck, "Partitions whose ISR is smaller than the replica set, and why."
    )
    min_isr: Check = section(Check, "Partitions under or at min.insync.replicas.")
    leader_imbalance: LeaderImbalanceCheck = section(
        LeaderImbalanceCheck, "Leaders off their preferred replica."
    )
    leader_flapping: LeaderFlappingCheck = section(LeaderFlappingCheck, "Leader and ISR churn.")
    consumer_lag: ConsumerLagCheck = section(ConsumerLagCheck, "Consumer group lag.")
    rebalance_storm: RebalanceStormCheck = section(RebalanceStormCheck, "Groups that keep rebalancing.")
    reconciliation: ReconciliationCheck = section(
        ReconciliationCheck, "Group members stuck reconciling their assignment (KIP-848 groups)."
    )
    disk_usage: DiskUsageCheck = section(DiskUsageCheck, "Log dir usage and time to full.")
    durability: DurabilityCheck = section(DurabilityCheck, "Replication factor, min ISR, unclean election.")
    quorum: QuorumCheck = section(QuorumCheck, "KRaft quorum health and missing brokers.")
    certificates: CertificatesCheck = section(
        CertificatesCheck, "Expiry and issuers of the certificates the brokers serve (TLS connections)."
    )
    hanging_transactions: HangingTransactionsCheck = section(
        HangingTransactionsCheck, "Open transactions no coordinator will end (off by default)."
    )


_WINDOWED = ("leaderFlapping", "consumerLag", "rebalanceStorm")
_DEFAULT_WINDOW = "15m"


def _window_of(check: str) -> str:
    return (
        f"(has(self.checks.{check}) && has(self.checks.{check}.window) "
        f"? self.checks.{check}.window : '{_DEFAULT_WINDOW}')"
    )


_ONE_WINDOW = CelRule(
    f"!has(self.checks) || ({_window_of(_WINDOWED[0])} == {_window_of(_WINDOWED[1])} "
    f"&& {_window_of(_WINDOWED[1])} == {_window_of(_WINDOWED[2])})",
    "checks.leaderFlapping.window, checks.consumerLag.window and checks.rebalanceStorm.window are one "
    "history window: set all three to the same value (e.g. '15m')",
    ".checks",
)
_WINDOW_IN_RETENTION = CelRule(
    "!has(self.checks) || !has(self.checks.leaderFlapping) || !has(self.checks.leaderFlapping.window) "
    f"|| !self.checks.leaderFlapping.window.matches(r'{DURATION_PATTERN}') "
    "|| !has(self.historyRetention) || !self.historyRetention.matches(r'" + DURATION_PATTERN + "') "
    "|| duration(self.checks.leaderFlapping.window) <= duration(self.historyRetention)",
    "the checks' window must not be longer than historyRetention (history older than that is deleted)",
    ".checks",
)


class DiagnosticsSpec(SpecModel):
    """How often and how deeply the cluster is diagnosed."""

    cel_rules = (_ONE_WINDOW, _WINDOW_IN_RETENTION)

    interval: IntervalDuration = Field("60s", description="Time between diagnosis cycles (at least 10s).")
    history_retention: RetentionDuration = Field(
        "168h",
        description="How long snapshot history is kept, in whole days (e.g. 168h = 7 days): history is "
        "stored and deleted by UTC date.",
    )
    top_findings: int = Field(
        10, ge=0, le=MAX_TOP_FINDINGS, description="How many of the worst findings status.topFindings shows."
    )
    checks: Checks = section(Checks, "Per-check toggles and thresholds.")

    @model_validator(mode="after")
    def _windows(self) -> DiagnosticsSpec:
        c = self.checks
        windows = {c.leader_flapping.window, c.consumer_lag.window, c.rebalance_storm.window}
        if len(windows) != 1:
            raise rule_error(_ONE_WINDOW)
        if parse_duration(c.leader_flapping.window) > parse_duration(self.history_retention):
            raise rule_error(_WINDOW_IN_RETENTION)
        return self
