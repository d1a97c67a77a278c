"""Run checks over the frames and bring their (capped) findings to the driver.

Each check is one small Spark job, collected on its own, a few at a time: small plans keep
Spark's optimizer and code generation cheap (one union of every check is slower than its
parts), and concurrent jobs let the driver plan one while the executors run another.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from kafka_health.models.findings import Finding
from kafka_health_spark import jobs
from kafka_health_spark.checks import Check, all_checks
from kafka_health_spark.findings import collect_findings, sort_findings
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

CONCURRENT_CHECKS = 4


def run_checks(
    frames: Frames, thresholds: Thresholds, checks: Sequence[Check] | None = None
) -> list[Finding]:
    """Every check's findings (each capped at `max_findings_per_check`), worst first.

    The check threads' jobs carry the caller's job tag (`jobs.tagged`), if it has one."""
    selected = list(checks) if checks is not None else all_checks()
    cap = thresholds.max_findings_per_check

    def run(check: Check) -> list[Finding]:
        return collect_findings(
            check(frames, thresholds), cap, key=(frames.cluster, check.__name__), top_k=frames.small_cluster
        )

    with ThreadPoolExecutor(max_workers=CONCURRENT_CHECKS, thread_name_prefix="check") as pool:
        results = list(pool.map(jobs.carry(frames.brokers.sparkSession, run), selected))
    return sort_findings(f for found in results for f in found)
