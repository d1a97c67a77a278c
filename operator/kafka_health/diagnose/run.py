"""`run_diagnosis`: the bridge from a snapshot (and its history) to a `Diagnosis`, through Spark.

It reads files only through Spark (the history, when given) and talks to neither Kafka nor
Kubernetes, so it runs the same in the operator, the CLI and the tests.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from kafka_health.diagnose.incidents import group_incidents
from kafka_health.diagnose.missing import judged, missing_findings
from kafka_health.diagnose.streams_groups import streams_findings
from kafka_health.models.findings import Diagnosis
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark import jobs
from kafka_health_spark.findings import sort_findings
from kafka_health_spark.frames import build_frames
from kafka_health_spark.runner import run_checks
from kafka_health_spark.session import bind_to_thread
from kafka_health_spark.slot_windows import SlotWindows
from kafka_health_spark.summary import summarize
from kafka_health_spark.thresholds import Thresholds

if TYPE_CHECKING:
    from kafka_health_spark.reuse import ReusedPlans
    from kafka_health_spark.windows import HistoryWindows


def run_diagnosis(
    snapshot: ClusterSnapshot,
    history_root: str | Path | None,
    thresholds: Thresholds | None,
    spark: SparkSession,
    *,
    with_summary: bool = True,
    windows: HistoryWindows | SlotWindows | None = None,
    plans: ReusedPlans | None = None,
) -> Diagnosis:
    """Every check over `snapshot` (and the history under `history_root`, if any), plus a finding
    for each part the snapshot could not read, grouped into incidents by root cause
    (`kafka_health.diagnose.incidents`). Without metadata nothing is diagnosed.

    `windows` (the operator's, per policy) serves the history windows from memory; they are
    read from `history_root` only when they hold nothing yet. `plans` (the operator's, per
    policy, where `reuse.available`) runs the checks and the summary through plans built once,
    over the history windows `windows` keeps in the JVM (then a `SlotWindows`)."""
    started = time.monotonic()
    bind_to_thread(spark)  # the caller may be any thread: the operator's workers, the CLI's main
    t = thresholds or Thresholds()
    findings = missing_findings(
        snapshot.missing,
        brokers_all_alive=all(b.alive for b in snapshot.brokers),
        hidden=sum(len(ps) for ps in snapshot.hidden.values()),
        visible=len(snapshot.partitions),
    )
    summary = None
    if snapshot.reachable:
        root = str(history_root) if history_root is not None else None
        if plans is not None:
            if not isinstance(windows, SlotWindows):
                raise ValueError(
                    "reused plans read the history windows a SlotWindows keeps: pass windows=SlotWindows(...)"
                )
            windows.prepare(t, snapshot.taken_at)
            reused, summary = plans.diagnose(snapshot, t, windows, with_summary=with_summary)
            findings += reused
        else:
            past, transitions = None, None
            if windows is not None:
                windows.prepare(t, snapshot.taken_at)
                past, transitions = windows.past, windows.transitions
            frames = build_frames(spark, snapshot, root, t, past=past, transitions=transitions)
            # The summary's few jobs run beside the checks' (Spark schedules concurrent jobs).
            try:
                with ThreadPoolExecutor(max_workers=1, thread_name_prefix="summary") as pool:
                    pending = pool.submit(jobs.carry(spark, summarize), frames) if with_summary else None
                    findings += run_checks(frames, t)
                    summary = pending.result() if pending is not None else None
            finally:
                frames.release()
        findings += streams_findings(snapshot.groups, snapshot.hidden)
    findings = sort_findings(judged(findings, snapshot.missing))
    return Diagnosis(
        cluster=snapshot.cluster,
        taken_at=snapshot.taken_at,
        incidents=group_incidents(findings, snapshot),
        findings=findings,
        missing=[m.part for m in snapshot.missing],
        duration_seconds=round(time.monotonic() - started, 3),
        certificates_not_after={c.broker: c.not_after for c in snapshot.listener_certificates},
        summary=summary,
    )
