"""The cycle's side of "a planned roll is not an outage" (kafka_health.diagnose.planned).

A diagnosis cycle reads the policy's `status.currentRemediation` right before its snapshot
(`roll_in_flight`) and again when it reports (`finish_cycle`); the brokers the roll restarted
between the two reads are planned (`planned_restarts`), and `with_planned` regroups the cycle's
findings so their absence is a `planned_restart` info incident and their log dirs an expected
gap, not `Degraded=True` nor a Warning Event.
"""

from __future__ import annotations

from dataclasses import replace

from kafka_health.diagnose.incidents import group_incidents
from kafka_health.diagnose.planned import planned_restarts
from kafka_health.k8s.client import K8s, K8sError
from kafka_health.models.policy import ActionType, CurrentRemediation, parse_status
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.report.status import CycleOutcome


def roll_in_flight(
    k8s: K8s, namespace: str, name: str, *, rolling: bool, base: CurrentRemediation | None
) -> CurrentRemediation | None:
    """status.currentRemediation as stored now, when a roll may be in flight (this process drives
    one: `rolling`, or the status last read had one: `base`); None otherwise or when unreadable
    (the read at the end of the cycle then decides alone)."""
    if not rolling and (base is None or base.action is not ActionType.ROLLING_RESTART):
        return None
    try:
        stored = k8s.read_policy(namespace, name)
    except K8sError:
        return None
    return parse_status((stored or {}).get("status")).current_remediation


def with_planned(
    outcome: CycleOutcome,
    before: CurrentRemediation | None,
    after: CurrentRemediation | None,
    snapshot: ClusterSnapshot | None,
) -> CycleOutcome:
    """`outcome` with the brokers the roll was restarting on request while `snapshot` was read
    (status `before` the snapshot and `after` it) taken as planned; unchanged when there are none."""
    planned = planned_restarts(before, after)
    if not planned or outcome.diagnosis is None:
        return outcome
    d = outcome.diagnosis
    d = d.model_copy(update={"incidents": group_incidents(d.findings, snapshot, planned)})
    return replace(outcome, diagnosis=d, planned=planned)
