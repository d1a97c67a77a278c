"""A policy's `spec.diagnostics.checks` → the Spark `Thresholds` and the set of enabled checks.

The policy speaks in the user's terms (percentages, durations); the checks in theirs (ratios,
minutes, hours). This is the one place that translates, so a threshold in the CRD always
means what its description says.
"""

from __future__ import annotations

from kafka_health.diagnose.incidents import group_incidents
from kafka_health.models.findings import Diagnosis, Finding
from kafka_health.models.policy import Checks, KafkaHealthPolicySpec, NeverSafePartitions, parse_duration
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark.thresholds import Thresholds

# Which policy toggle governs each check id the diagnosis emits.
CHECK_TOGGLES: dict[str, str] = {
    "offline_partition": "offline_partitions",
    "under_replicated": "under_replicated",
    "under_min_isr": "min_isr",
    "at_min_isr": "min_isr",
    "leader_imbalance": "leader_imbalance",
    "leader_skew": "leader_imbalance",
    "leader_flapping": "leader_flapping",
    "isr_churn": "leader_flapping",
    "consumer_lag": "consumer_lag",
    "offset_expiry": "consumer_lag",
    "offset_out_of_range": "consumer_lag",
    "rebalance_storm": "rebalance_storm",
    "reconciliation_stuck": "reconciliation",
    "disk_usage": "disk_usage",
    "disk_time_to_full": "disk_usage",
    "log_dir_error": "disk_usage",
    "low_replication_factor": "durability",
    "low_min_isr": "durability",
    "min_isr_too_high": "durability",
    "unclean_leader_election": "durability",
    "quorum_no_leader": "quorum",
    "quorum_voter_lagging": "quorum",
    "quorum_observer_lagging": "quorum",
    "broker_missing": "quorum",
    "listener_certificate_expiry": "certificates",
    "listener_certificate_mismatch": "certificates",
    "hanging_transaction": "hanging_transactions",
}


def thresholds_for(checks: Checks) -> Thresholds:
    """The Spark thresholds a policy's check settings mean."""
    lag = checks.consumer_lag
    flapping = checks.leader_flapping
    windows = [
        parse_duration(str(c.window)).total_seconds() / 60 for c in (flapping, lag, checks.rebalance_storm)
    ]
    return Thresholds().with_overrides(
        {
            "window_minutes": max(windows),
            "leader_imbalance_ratio": checks.leader_imbalance.threshold_percent / 100,
            "leader_skew_ratio": checks.leader_imbalance.skew_percent / 100,
            "leader_flapping_changes": flapping.max_leader_changes,
            "isr_churn_episodes": flapping.max_isr_changes,
            "lag_warn_messages": lag.warning_lag,
            "lag_critical_messages": lag.critical_lag,
            "lag_warn_seconds": lag.max_lag_seconds.warning,
            "lag_critical_seconds": lag.max_lag_seconds.critical,
            "rebalance_storm_fraction": checks.rebalance_storm.min_percent / 100,
            "disk_warn_percent": checks.disk_usage.warning_percent,
            "disk_critical_percent": checks.disk_usage.critical_percent,
            "disk_full_warn_hours": parse_duration(
                str(checks.disk_usage.time_to_full_warning)
            ).total_seconds()
            / 3600,
            "min_replication_factor": checks.durability.min_replication_factor,
            "min_insync_replicas": checks.durability.min_insync_replicas,
            "quorum_lag_records": checks.quorum.max_voter_lag,
            "certificate_warn_days": checks.certificates.warning_days,
            "certificate_critical_days": checks.certificates.critical_days,
            "replica_stuck_minutes": parse_duration(str(checks.under_replicated.stuck_after)).total_seconds()
            / 60,
            "reconciliation_stuck_minutes": parse_duration(
                str(checks.reconciliation.stuck_after)
            ).total_seconds()
            / 60,
        }
    )


def enabled(finding: Finding, checks: Checks) -> bool:
    """False when the policy turned off the check that made `finding` (unknown ids stay on)."""
    toggle = CHECK_TOGGLES.get(finding.check)
    if toggle is None:
        return True
    return bool(getattr(checks, toggle).enabled)


ROLL_CONSEQUENCE: dict[NeverSafePartitions, str] = {
    NeverSafePartitions.REFUSE: " A rolling restart of its brokers is refused while it stays so "
    "(spec.remediation.rollingRestart.neverSafePartitions: Refuse).",
    NeverSafePartitions.PROCEED: " A rolling restart goes ahead and it is unavailable to acks=all producers "
    "while each of its brokers restarts (spec.remediation.rollingRestart.neverSafePartitions: Proceed).",
}


def with_roll_consequence(diagnosis: Diagnosis, never_safe: NeverSafePartitions) -> Diagnosis:
    """`min_isr_too_high` findings say what this policy's rolling restarts will do about the topic,
    so the finding and the roll never disagree."""
    suffix = ROLL_CONSEQUENCE[never_safe]
    findings = [
        f.model_copy(update={"message": f.message + suffix}) if f.check == "min_isr_too_high" else f
        for f in diagnosis.findings
    ]
    return diagnosis.model_copy(update={"findings": findings})


def for_policy(
    diagnosis: Diagnosis, spec: KafkaHealthPolicySpec, snapshot: ClusterSnapshot | None
) -> Diagnosis:
    """The diagnosis as a policy reports it: only the checks it enables, `min_isr_too_high` in its
    roll's words, and the incidents grouped again from those findings (so every reported finding
    is in exactly one incident, and no incident holds a finding the policy turned off)."""
    kept = [f for f in diagnosis.findings if enabled(f, spec.diagnostics.checks)]
    d = with_roll_consequence(
        diagnosis.model_copy(update={"findings": kept}),
        spec.remediation.rolling_restart.never_safe_partitions,
    )
    return d.model_copy(update={"incidents": group_incidents(d.findings, snapshot)})
