"""The policy's limits on lag in seconds reach the diagnosis's thresholds, and only when set."""

from __future__ import annotations

from kafka_health.diagnose.from_policy import thresholds_for
from kafka_health.models.policy.diagnostics import Checks


def test_unset_limits_leave_lag_in_seconds_unjudged() -> None:
    t = thresholds_for(Checks())
    assert (t.lag_warn_seconds, t.lag_critical_seconds) == (None, None)


def test_limits_in_seconds_become_thresholds() -> None:
    checks = Checks.model_validate({"consumerLag": {"maxLagSeconds": {"warning": 300, "critical": 1800}}})
    t = thresholds_for(checks)
    assert (t.lag_warn_seconds, t.lag_critical_seconds) == (300, 1800)


def test_one_limit_alone() -> None:
    t = thresholds_for(Checks.model_validate({"consumerLag": {"maxLagSeconds": {"critical": 900}}}))
    assert (t.lag_warn_seconds, t.lag_critical_seconds) == (None, 900)
