"""While a roll is in flight the full diagnosis runs at most every rollingRestart.diagnosisInterval
(controller/cycle.interval_seconds), never more often than spec.diagnostics.interval."""

from __future__ import annotations

from typing import Any

from kafka_health.controller.cycle import interval_seconds


def spec(interval: str, during: str | None = None) -> dict[str, Any]:
    rolling: dict[str, Any] = {} if during is None else {"diagnosisInterval": during}
    return {
        "cluster": {"bootstrapServers": ["k:9092"]},
        "diagnostics": {"interval": interval},
        "remediation": {"rollingRestart": rolling},
    }


def test_no_roll_keeps_the_diagnostics_interval() -> None:
    assert interval_seconds(spec("10s", "2m")) == 10.0


def test_a_roll_stretches_it_to_the_diagnosis_interval_default_two_minutes() -> None:
    assert interval_seconds(spec("10s"), rolling=True) == 120.0
    assert interval_seconds(spec("10s", "45s"), rolling=True) == 45.0


def test_never_more_often_than_the_diagnostics_interval() -> None:
    assert interval_seconds(spec("5m", "1m"), rolling=True) == 300.0


def test_an_invalid_spec_waits_the_default_minute_roll_or_not() -> None:
    bad = {"diagnostics": {"interval": "soon"}}
    assert interval_seconds(bad) == interval_seconds(bad, rolling=True) == 60.0
