"""Run checks over the frames as one Spark plan and bring the (capped) findings to the driver."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_health.models.findings import Finding
from kafka_health_spark.checks import Check, all_checks
from kafka_health_spark.findings import collect_findings, union_all
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def run_checks(
    frames: Frames, thresholds: Thresholds, checks: Sequence[Check] | None = None
) -> list[Finding]:
    """Every check's finding rows, unioned and collected once, worst first."""
    selected = list(checks) if checks is not None else all_checks()
    rows = union_all(check(frames, thresholds) for check in selected)
    return collect_findings(rows, thresholds.max_findings_per_check)
