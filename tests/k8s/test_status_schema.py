"""The status of a slow cycle survives the real API server's structural schema (issue 12, item 5):
an undeclared status field would be pruned without a word, and the report would lose it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from kafka_health.models.findings import Diagnosis, Finding, Severity, Subject, SubjectKind
from kafka_health.models.policy import KafkaHealthPolicyStatus
from kafka_health.report.status import CycleOutcome, status_after_cycle, status_patch
from kafka_health.testbed.controlplane import ControlPlane
from tests.k8s.operator_process import bare_policy, kubectl


def test_slow_cycle_status_fields_are_stored(k8s_control_plane: ControlPlane, crds: None) -> None:
    cp = k8s_control_plane
    ns = bare_policy(cp, "status", "slow")
    taken = datetime(2026, 11, 23, 7, 29, 40, tzinfo=UTC)
    finding = Finding(
        check="broker_missing",
        severity=Severity.CRITICAL,
        subject=Subject(kind=SubjectKind.BROKER, broker=1),
        message="broker 1 is not registered",
    )
    status = status_after_cycle(
        KafkaHealthPolicyStatus(),
        CycleOutcome(
            diagnosis=Diagnosis(cluster="c", taken_at=taken, findings=[finding], duration_seconds=2.0)
        ),
        now=taken + timedelta(seconds=140),
        generation=1,
        top_n=10,
        interval=timedelta(seconds=60),
    )
    patch = json.dumps({"status": status_patch(status)})
    kubectl(cp, "patch", "khp", "slow", "-n", ns, "--subresource=status", "--type=merge", "-p", patch)
    stored = json.loads(kubectl(cp, "get", "khp", "slow", "-n", ns, "-o", "json").stdout)["status"]
    last = stored["lastDiagnosis"]
    assert (last["durationSeconds"], last["intervalSeconds"], last["slow"]) == (140.0, 60.0, True)
    assert last["diagnoseSeconds"] == 2.0
    assert stored["topFindings"][0]["observedAt"] == "2026-11-23T07:29:40Z"
    ready = next(c for c in stored["conditions"] if c["type"] == "Ready")
    degraded = next(c for c in stored["conditions"] if c["type"] == "Degraded")
    assert (ready["status"], ready["reason"]) == ("True", "SlowCycle")
    assert (degraded["status"], degraded["reason"]) == ("False", "AsExpected")
    kubectl(cp, "delete", "namespace", ns, "--wait=false")
