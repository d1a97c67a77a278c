"""Every number a check compares against, with defaults a production cluster can start from.

One pydantic model so a run (`--threshold NAME=VALUE`) and, later, a policy can override any of
them with validation; a check never hard-codes a limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ThresholdError(ValueError):
    """An override names an unknown threshold or gives a value of the wrong type."""


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    # -- windows over the history
    window_minutes: float = Field(
        30, gt=0, description="History window for flapping, ISR churn, rebalances and lag samples."
    )
    max_findings_per_check: int = Field(
        500,
        ge=1,
        description="Findings kept per check (worst first); the rest are counted in one summary finding.",
    )

    # -- leadership
    leader_imbalance_ratio: float = Field(
        0.10,
        ge=0,
        description="Share of a broker's preferred partitions led elsewhere before it counts as imbalanced "
        "(Kafka's leader.imbalance.per.broker.percentage is 10).",
    )
    leader_skew_ratio: float = Field(
        0.20, ge=0, description="Leader-count spread (max - min) allowed, as a share of the mean per broker."
    )
    leader_skew_min_partitions: int = Field(
        2, ge=0, description="Leader-count spread always tolerated, whatever the ratio (small clusters)."
    )

    # -- flapping
    leader_flapping_changes: int = Field(
        3, ge=1, description="Leader changes of one partition within the window that count as flapping."
    )
    isr_churn_episodes: int = Field(
        3,
        ge=1,
        description="Separate samples in the window at which a broker dropped out of ISRs: a flapping broker.",
    )

    # -- replicas out of sync
    replica_stuck_minutes: float = Field(
        10,
        gt=0,
        description="A replica out of sync whose lag (bytes behind its leader) has not shrunk over this "
        "many minutes is stuck; one whose lag shrank is catching up.",
    )

    # -- consumer lag (Burrow-style)
    lag_window_samples: int = Field(
        10, ge=2, description="Newest snapshots (samples) of the window a lag status uses."
    )
    lag_min_samples: int = Field(
        3, ge=2, description="Samples needed for a Burrow-style status; fewer fall back to lag_warn_messages."
    )
    lag_warn_messages: int = Field(
        10_000, ge=0, description="Lag that warns when there is too little history to judge the trend."
    )
    lag_critical_messages: int = Field(
        1_000_000,
        ge=1,
        description="Lag at or above which a group partition is critical (CRITICAL_LAG) unless it is "
        "STALL, BLOCKED, STOP or REWIND, whatever the trend.",
    )
    lag_warn_seconds: float | None = Field(
        None,
        gt=0,
        description="Lag in seconds at or above which an OK group partition warns (WARN); None: off.",
    )
    lag_critical_seconds: float | None = Field(
        None,
        gt=0,
        description="Lag in seconds at or above which an OK or WARN group partition is critical "
        "(CRITICAL_LAG); None: off.",
    )
    offsets_retention_hours: float = Field(
        168, gt=0, description="The brokers' offsets.retention.minutes, in hours (Kafka's default: 7 days)."
    )
    offset_expiry_warn_hours: float = Field(
        24, ge=0, description="Warn when an empty group's committed offsets expire within this many hours."
    )

    # -- rebalances
    rebalance_storm_samples: int = Field(
        3, ge=1, description="Samples in the window showing a rebalance (or a changed member set)."
    )
    rebalance_storm_fraction: float = Field(
        0.25, ge=0, le=1, description="...and at least this share of the group's samples in the window."
    )
    reconciliation_stuck_minutes: float = Field(
        5,
        gt=0,
        description="A consumer-protocol group member (KIP-848) whose assignment has differed from its "
        "target for at least this many minutes is stuck reconciling.",
    )

    # -- disk
    disk_warn_percent: float = Field(80, ge=0, le=100)
    disk_critical_percent: float = Field(90, ge=0, le=100)
    disk_growth_window_hours: float = Field(6, gt=0, description="History used for the disk growth rate.")
    disk_min_samples: int = Field(3, ge=2, description="Samples needed to estimate a growth rate.")
    disk_full_warn_hours: float = Field(48, ge=0, description="Warn when a broker's disks fill sooner.")
    disk_full_critical_hours: float = Field(12, ge=0)

    # -- listener certificates
    certificate_warn_days: float = Field(
        30, gt=0, description="Warn when a broker's served certificate chain ends within this many days."
    )
    certificate_critical_days: float = Field(
        7, ge=0, description="Critical when it ends within this many days (or has ended)."
    )

    # -- durability
    min_replication_factor: int = Field(3, ge=1)
    min_insync_replicas: int = Field(2, ge=1, description="min.insync.replicas below this is a risk.")

    # -- quorum
    quorum_lag_records: int = Field(
        1000, ge=0, description="Metadata records a voter may trail the quorum leader."
    )
    quorum_caught_up_seconds: float = Field(
        30, ge=0, description="Seconds since a voter last caught up before it counts as lagging."
    )

    def with_overrides(self, overrides: Mapping[str, object]) -> Thresholds:
        """A copy with `overrides` applied and validated (strings are coerced: "0.2", "45")."""
        unknown = sorted(set(overrides) - set(type(self).model_fields))
        if unknown:
            known = ", ".join(sorted(type(self).model_fields))
            raise ThresholdError(f"unknown threshold(s) {', '.join(unknown)}; known: {known}")
        try:
            return type(self).model_validate({**self.model_dump(), **overrides})
        except ValidationError as exc:
            raise ThresholdError(str(exc)) from exc


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`["NAME=VALUE", ...]` → `{NAME: VALUE}` (the CLI's `--threshold` syntax)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ThresholdError(f"--threshold expects NAME=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out
