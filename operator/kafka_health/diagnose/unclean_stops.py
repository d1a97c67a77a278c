"""Unclean stops seen (issue 36, point 3): a broker container whose last state says it was
killed -- exit 137 (SIGKILL: the kubelet's kill after terminationGracePeriodSeconds, or the OOM
killer) or reason OOMKilled. A broker killed so skips its controlled shutdown: its logs are
recovered on the next start (KRaft keeps it fenced meanwhile) and its leaderships moved without
the clean hand-over.

Kubernetes keeps a container's `lastState` until it ends again, so a kill of last month would
stay a finding for good: one is reported while it ended less than `RECENT` (24 h) ago (or when
its end time is unknown). Only kills inside a pod are seen this way -- the kubelet restarting
the container in place (the OOM killer, a failed liveness probe); a pod deleted and recreated
(a roll) starts with no lastState. Pure: the pods' last states are read at the edge
(k8s/client.py) and turned into `LastTermination`s by the cycle (controller/observe.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from kafka_health.models.findings import Finding, Severity, Subject, SubjectKind
from kafka_health.models.snapshot import Broker

CHECK = "unclean_stop"
SIGKILL_EXIT = 137
RECENT = timedelta(hours=24)


class LastTermination(BaseModel):
    """A broker pod's container as its last termination left it (containerStatuses[].lastState)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    broker: int
    pod: str
    container: str
    exit_code: int
    reason: str | None = None
    grace_period_seconds: int | None = None
    restart_count: int = 0
    finished_at: datetime | None = None


def killed(t: LastTermination) -> bool:
    """The container was killed, not stopped: SIGKILL (exit 137) or the OOM killer."""
    return t.exit_code == SIGKILL_EXIT or t.reason == "OOMKilled"


def _grace(t: LastTermination) -> str:
    return "unset" if t.grace_period_seconds is None else f"{t.grace_period_seconds} s"


def fix_for(t: LastTermination) -> str:
    """The fix the finding names: OOMKilled means memory, a plain SIGKILL the grace period."""
    if t.reason == "OOMKilled":
        return "raise the container memory limit or lower the broker heap (KAFKA_HEAP_OPTS)"
    return (
        f"raise terminationGracePeriodSeconds (now {_grace(t)}) so the controlled shutdown "
        "finishes before the kubelet's SIGKILL"
    )


def recent(t: LastTermination, now: datetime) -> bool:
    """Ended less than RECENT before `now`, or at an unknown time."""
    return t.finished_at is None or now - t.finished_at < RECENT


def unclean_stop_findings(terminations: Iterable[LastTermination], now: datetime) -> list[Finding]:
    """One warning per broker whose container was last killed (recently), naming the pod, the
    grace period, the exit and the fix; clean stops (exit 0 or 143) are not findings."""
    findings = []
    for t in sorted(terminations, key=lambda t: t.broker):
        if not killed(t) or not recent(t, now):
            continue
        # The container named: a sidecar killed is not the broker killed.
        how = f"container {t.container}, exit {t.exit_code}" + (f", {t.reason}" if t.reason else "")
        findings.append(
            Finding(
                check=CHECK,
                severity=Severity.WARNING,
                subject=Subject(kind=SubjectKind.BROKER, broker=t.broker),
                message=(
                    f"broker {t.broker} (pod {t.pod}, terminationGracePeriodSeconds {_grace(t)}) was "
                    f"killed ({how}), not stopped cleanly: its logs are recovered on start; "
                    f"{fix_for(t)}"
                ),
                evidence={
                    "pod": t.pod,
                    "container": t.container,
                    "exit_code": t.exit_code,
                    "reason": t.reason,
                    "grace_period_seconds": t.grace_period_seconds,
                    "restart_count": t.restart_count,
                    "finished_at": t.finished_at.isoformat() if t.finished_at else None,
                },
                remediation=fix_for(t),
            )
        )
    return findings


RECOVERING = "broker_recovering"


def recovering_findings(brokers: Iterable[Broker], running_pods: Mapping[int, str]) -> list[Finding]:
    """A broker registered but fenced while its pod's containers run (`running_pods`: node id →
    pod name, for the pods whose containers all run): its process is up, so it is not simply down.
    A KRaft broker stays fenced while it loads (after an unclean stop, recovers) its logs and
    catches up with the metadata -- or while its process is paused, which Kafka cannot tell
    apart. The roll refuses to restart another broker meanwhile (rule `recovering`); this says
    why the broker is missing. It groups with the broker's `broker_down` incident."""
    out = []
    for b in sorted(brokers, key=lambda b: b.id):
        pod = running_pods.get(b.id)
        if b.alive or not b.fenced or pod is None:
            continue
        out.append(
            Finding(
                check=RECOVERING,
                severity=Severity.WARNING,
                subject=Subject(kind=SubjectKind.BROKER, broker=b.id),
                message=(
                    f"broker {b.id} is registered but fenced while its pod {pod} runs: it is recovering "
                    "its logs or catching up with the metadata (or its process is paused); no broker "
                    "is restarted by a roll meanwhile"
                ),
                evidence={"pod": pod},
                remediation="wait for it to unfence; if it stays fenced, read its log for log recovery "
                "progress or a stuck process (a paused JVM, a full disk)",
            )
        )
    return out
