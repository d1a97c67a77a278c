"""A broker that a rolling restart is restarting on request is absent by plan, not by outage.

While the operator's roll restarts broker N (its pod deleted, waiting for the pod, the broker's
registration, URP 0), N is not registered, its partitions are under-replicated and its log dirs
cannot be read: the diagnosis's findings say so, and without this module they made a critical
`broker_down:N` incident, a Warning Event and `Degraded=True ClusterPartlyUnreadable` for the
whole roll. Here those findings become one info incident, `planned_restart:N`, naming the
roll's request id, and `log_dirs:N` an expected gap in the snapshot. Everything else stays as it
is: another broker down, a partition whose out-of-sync brokers include one the roll is not
restarting, any other unreadable part, a halted roll (it is no longer in flight, so its broker
is no longer planned).

Pure functions of the policy's `status.currentRemediation` (as read before the snapshot and at
the end of the cycle: the roll may move on while the cluster is diagnosed) and of the findings
and missing parts; `kafka_health.diagnose.incidents.group_incidents` and
`kafka_health.report.status.status_after_cycle` apply them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_health.models.findings import Diagnosis, Finding, IncidentKind, Severity
from kafka_health.models.policy import ActionType, CurrentRemediation, RemediationStep

RESTARTING_STEPS = frozenset(
    {
        RemediationStep.DELETING_POD,
        RemediationStep.WAITING_POD_READY,
        RemediationStep.WAITING_BROKER_REGISTERED,
        RemediationStep.WAITING_URP_ZERO,
    }
)
"""The steps in which the roll's current broker is away or catching up because of the roll.
Not CheckingSafety: its pod is not deleted yet, so an absence then is not the roll's doing."""

REPLICATION_CHECKS = frozenset({"offline_partition", "under_replicated", "under_min_isr", "at_min_isr"})
# Checks about broker N itself that a restart of N explains.
_BROKER_CHECKS = frozenset({"broker_missing", "isr_churn", "quorum_voter_lagging", "quorum_observer_lagging"})


@dataclass(frozen=True)
class PlannedRestart:
    """Broker `broker` is being restarted by the rolling restart `request_id` (at `step`)."""

    broker: int
    request_id: str
    step: str


Planned = Mapping[int, PlannedRestart]
Root = tuple[IncidentKind, str]


def restarting(current: CurrentRemediation | None) -> PlannedRestart | None:
    """The broker a roll in flight is restarting now, per its recorded step (None: none)."""
    if (
        current is None
        or current.action is not ActionType.ROLLING_RESTART
        or current.current_broker is None
        or current.step not in RESTARTING_STEPS
    ):
        return None
    return PlannedRestart(current.current_broker, current.id, str(current.step))


def planned_restarts(
    before: CurrentRemediation | None, after: CurrentRemediation | None
) -> dict[int, PlannedRestart]:
    """The brokers whose absence a snapshot taken between the two reads of the policy's
    `status.currentRemediation` may owe to the roll: the broker restarting at either read, and
    the brokers the same roll finished in between (restarted while the snapshot was read)."""
    out: dict[int, PlannedRestart] = {}
    for current in (before, after):
        p = restarting(current)
        if p is not None:
            out[p.broker] = p
    if (
        before is not None
        and after is not None
        and before.action is ActionType.ROLLING_RESTART
        and after.action is ActionType.ROLLING_RESTART
        and before.id == after.id
    ):
        done_before = set(before.brokers_done or [])
        for b in after.brokers_done or []:
            if b not in done_before:
                out.setdefault(b, PlannedRestart(b, after.id, str(RemediationStep.DONE)))
    return out


def expected_missing(part: str, planned: Planned) -> bool:
    """`log_dirs:N` of a broker being restarted: it answers no DescribeLogDirs meanwhile."""
    kind, _, detail = part.partition(":")
    return kind == "log_dirs" and detail.isdigit() and int(detail) in planned


def unexpected_missing(missing: Iterable[str], planned: Planned) -> list[str]:
    """The unread parts of a snapshot that the planned restarts do not explain."""
    return [m for m in missing if not expected_missing(m, planned)]


def _ids(value: object) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int | float):
        return {int(value)}
    return {int(x) for x in str(value).split(",") if x.strip().lstrip("-").isdigit()}


def planned_root(root: Root | None, f: Finding, planned: Planned) -> Root | None:
    """`root` (the incident `group_incidents`'s rules gave `f`), or `planned_restart:N` when it is
    broker N's and N's restart explains `f`: its `broker_down:N` or `broker_out_of_sync:N`
    findings, its unreadable log dirs, its own quorum findings. A partition finding whose
    out-of-sync brokers include one the roll is not restarting goes to that broker's
    `broker_out_of_sync` incident instead (the rules already prefer a down broker that is not
    planned). Real disk findings of N (`disk_usage`, ...) stay `disk:N`."""
    if root is None or not planned:
        return root
    kind, key = root
    s = f.subject
    if kind is IncidentKind.QUORUM and f.check in _BROKER_CHECKS and s.broker in planned:
        return IncidentKind.PLANNED_RESTART, str(s.broker)
    if kind not in (IncidentKind.BROKER_DOWN, IncidentKind.BROKER_OUT_OF_SYNC, IncidentKind.DISK):
        return root
    if not key.isdigit() or int(key) not in planned:
        return root
    if kind is IncidentKind.DISK and not (
        f.check == "snapshot_incomplete" and expected_missing(str(f.evidence.get("part", "")), planned)
    ):
        return root
    if f.check in REPLICATION_CHECKS:
        others = _ids(f.evidence.get("out_of_sync")) - set(planned)
        if others:
            return IncidentKind.BROKER_OUT_OF_SYNC, str(min(others))
    return IncidentKind.PLANNED_RESTART, key


def describe(
    p: PlannedRestart, partitions: int, counts: Mapping[str, float | int | str | None], groups: int
) -> tuple[str, dict[str, float | int | str | None], str]:
    """Title, extra evidence and remediation text of a `planned_restart` incident; `counts`: the
    snapshot's under-replicated and offline partitions with a replica on the broker, if read."""
    reach = f"{partitions} partition{'' if partitions == 1 else 's'} wait for it"
    if "under_replicated" in counts and "offline" in counts:
        reach = f"{counts['under_replicated']} under-replicated, {counts['offline']} offline meanwhile"
    title = (
        f"Broker {p.broker} is being restarted by rolling restart {p.request_id} ({p.step}), as "
        f"requested: {reach}"
        + (f"; {groups} consumer group{'' if groups == 1 else 's'} read from them." if groups else ".")
    )
    return (
        title,
        {"request_id": p.request_id, "step": p.step},
        f"No action: planned. The roll waits for broker {p.broker}'s pod, its registration and URP 0 "
        "before the next broker, and halts (Degraded=True RemediationHalted) if it does not come back "
        "within its timeouts.",
    )


def worst_unplanned(diagnosis: Diagnosis) -> Severity | None:
    """The worst severity of the diagnosis's findings, not counting those a planned restart
    explains (the members of a `planned_restart` incident): the policy's health while a roll
    restarts a broker on request. Every finding is in exactly one incident, so this is the worst
    incident severity (a planned_restart's is info)."""
    if not any(i.kind is IncidentKind.PLANNED_RESTART for i in diagnosis.incidents):
        return diagnosis.worst
    return max((i.severity for i in diagnosis.incidents), key=lambda s: s.rank, default=None)
