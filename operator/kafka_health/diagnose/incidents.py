"""Incidents: the findings of a diagnosis grouped by root cause.

One stopped broker makes a finding per partition and check (under-replicated, at min ISR, ...),
plus its own `broker_missing`; a person wants one line: broker 2 is down, these partitions and
groups are hit, this is what the operator does about it. `group_incidents` is that grouping: a
pure function of the findings (and, when given, the snapshot they came from), run by
`run_diagnosis` after the Spark checks.

The rules, in order — a finding belongs to the first rule that claims it, so every finding is in
exactly one incident (`IncidentKind` documents each kind):

1. `cluster_unreachable` → `cluster_unreachable:cluster`; `visibility` → `visibility:cluster`.
2. `broker_down:<N>` for every `broker_missing` broker N. It claims: that finding; the partition
   findings (`offline_partition`, `under_replicated`, `under_min_isr`, `at_min_isr`) whose
   out-of-sync brokers, leader, or (offline) replicas include a down broker (the lowest such id,
   when several are down); `snapshot_incomplete` of a topic with an offline partition on N; `quorum_voter_lagging`, `isr_churn`, `broker_recovering` and `snapshot_incomplete` (its log
   dirs) of broker N; `leader_flapping` and partition `consumer_lag` of partitions with a replica
   on N that are offline (snapshot needed); `leader_skew` while any broker is down (its
   leaderships moved away; to the lowest down broker). While the operator's rolling restart
   restarts N, what N's restart explains is `planned_restart:<N>` instead (info, naming the
   request id; kafka_health.diagnose.planned), and a down broker the roll is not restarting
   claims first.
3. `quorum:cluster`: `quorum_no_leader`, `quorum_voter_lagging`, `snapshot_incomplete` of the quorum.
4. `disk:<N>`: `disk_usage`, `disk_time_to_full`, `log_dir_error`, `snapshot_incomplete` of N's log dirs.
5. `reassignment:cluster`: `partition_reassigning`, and the partition findings whose out-of-sync
   brokers are all replicas a reassignment in flight is adding (their `reassigning` evidence).
6. `broker_out_of_sync:<N>`: partition findings whose out-of-sync brokers are all alive (the
   lowest id), `isr_churn` and `quorum_observer_lagging` of N, and `leader_flapping` of partitions
   with a replica on a churning N.
7. `never_safe_topic:<T>` when T has `min_isr_too_high` (min ISR ≥ RF) or `low_replication_factor`
   with RF 1: T's other topic findings and its remaining partition findings join it.
8. `topic_durability:<T>`: `low_replication_factor`, `low_min_isr`, `unclean_leader_election`.
9. `consumer_group:<G>`: `consumer_lag` (group and partitions), `offset_out_of_range`,
   `offset_expiry`, `rebalance_storm`, `reconciliation_stuck`, `snapshot_incomplete` of the group (`group:<G>`, and
   `group_offsets:<G>`: offsets Kafka left out for a topic the principal may not DESCRIBE).
10. `leadership:cluster`: `leader_imbalance`, `leader_skew` (no broker down).
11. `certificates:cluster`: `listener_certificate_expiry`, `listener_certificate_mismatch`,
    `snapshot_incomplete` of a broker's certificates (`certificates:<N>`).
12. `check:<check>`: anything else, one incident per check.

A check's "N findings in total; only the M worst are listed" notice joins the incident holding
most of that check's findings. An incident's severity is the worst of its members'. Its id,
`<kind>:<root>`, stays the same while the cause persists, so Events are posted when an incident
appears and when it resolves, not every cycle.

The rules are `kafka_health.diagnose.incident_roots`, one function per step above; what an
incident says (title, remediation) is `kafka_health.diagnose.incident_texts`, one describer per kind.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_health.diagnose import planned as planned_mod
from kafka_health.diagnose.incident_roots import (
    DISK_CHECKS,
    GROUP_CHECKS,
    LEADERSHIP_CHECKS,
    REPLICATION_CHECKS,
    TOPIC_DURABILITY_CHECKS,
    Context,
    Root,
    root_of,
)
from kafka_health.diagnose.incident_texts import (
    MAX_HINTS,
    OFFSET_RESET,
    PREFERRED_LEADER_ELECTION,
    ROLLING_RESTART,
    Evidence,
    Reach,
    describe,
)
from kafka_health.models.findings import (
    MAX_INCIDENT_GROUPS,
    MAX_INCIDENT_PARTITIONS,
    Diagnosis,
    Finding,
    Incident,
    IncidentKind,
    PartitionRef,
    Severity,
    Subject,
    SubjectKind,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark.findings import sort_findings

__all__ = [
    "DISK_CHECKS",
    "GROUP_CHECKS",
    "LEADERSHIP_CHECKS",
    "MAX_HINTS",
    "OFFSET_RESET",
    "PREFERRED_LEADER_ELECTION",
    "REPLICATION_CHECKS",
    "ROLLING_RESTART",
    "TOPIC_DURABILITY_CHECKS",
    "Evidence",
    "Root",
    "group_incidents",
    "incidents_of",
]

_KIND_ORDER = {kind: i for i, kind in enumerate(IncidentKind)}


@dataclass
class _Group:
    kind: IncidentKind
    root: str
    members: list[Finding] = field(default_factory=list)


def group_incidents(
    findings: Iterable[Finding],
    snapshot: ClusterSnapshot | None = None,
    planned: planned_mod.Planned | None = None,
) -> list[Incident]:
    """The incidents of `findings` (worst first). Every finding is a member of exactly one.

    `snapshot` (the one the findings came from) adds what the findings cannot say: every
    partition and consumer group a down broker affects (findings are capped per check), and
    which partitions are offline. `planned`: the brokers a rolling restart is restarting now;
    what their restart explains is a `planned_restart` incident (kafka_health.diagnose.planned)."""
    ordered = list(findings)
    ctx = Context.of(ordered, snapshot, planned)
    groups: dict[Root, _Group] = {}
    notices: list[Finding] = []
    for f in ordered:
        root = planned_mod.planned_root(root_of(f, ctx), f, ctx.planned, ctx.replicas, ctx.offsets_partitions)
        if root is None:
            notices.append(f)
            continue
        groups.setdefault(root, _Group(*root)).members.append(f)
    for notice in notices:
        holders = Counter(root for root, g in groups.items() for m in g.members if m.check == notice.check)
        root = holders.most_common(1)[0][0] if holders else (IncidentKind.CHECK, notice.check)
        groups.setdefault(root, _Group(*root)).members.append(notice)
    incidents = [_incident(g, ctx) for g in groups.values()]
    return sorted(incidents, key=lambda i: (-i.severity.rank, _KIND_ORDER[i.kind], i.id))


def _worst(members: list[Finding]) -> Severity:
    return max((f.severity for f in members), key=lambda s: s.rank)


def _subject(kind: IncidentKind, root: str) -> Subject:
    if kind in (
        IncidentKind.BROKER_DOWN,
        IncidentKind.PLANNED_RESTART,
        IncidentKind.DISK,
        IncidentKind.BROKER_OUT_OF_SYNC,
    ):
        return Subject(kind=SubjectKind.BROKER, broker=int(root))
    if kind in (IncidentKind.NEVER_SAFE_TOPIC, IncidentKind.TOPIC_DURABILITY):
        return Subject(kind=SubjectKind.TOPIC, topic=root)
    if kind is IncidentKind.CONSUMER_GROUP:
        return Subject(kind=SubjectKind.GROUP, group=root)
    return Subject(kind=SubjectKind.CLUSTER)


def _member_partitions(members: list[Finding]) -> list[PartitionRef]:
    seen = {
        (f.subject.topic, f.subject.partition)
        for f in members
        if f.subject.kind is SubjectKind.PARTITION
        and f.subject.topic is not None
        and f.subject.partition is not None
    }
    return [PartitionRef(topic=t, partition=p) for t, p in sorted(seen)]


def _member_groups(members: list[Finding]) -> list[str]:
    return sorted({f.subject.group for f in members if f.subject.group is not None})


def _broker_down_reach(broker: int, members: list[Finding], ctx: Context) -> Reach:
    """From the snapshot when there is one (every partition, not only the listed findings):
    partitions with a replica on the broker that it left the ISR of or that are offline; the
    groups with committed offsets on them."""
    snap = ctx.snapshot
    if snap is None or not snap.partitions:
        return Reach(_member_partitions(members), _member_groups(members))
    alive = {b.id for b in snap.brokers if b.alive}
    hit: set[tuple[str, int]] = set()
    urp = offline = 0
    for p in snap.partitions:
        if broker not in p.replicas:
            continue
        is_offline = p.leader is None or p.leader not in alive
        is_urp = broker not in p.isr and len(p.isr) < len(p.replicas)
        if is_offline or is_urp:
            hit.add((p.topic, p.partition))
            offline += is_offline
            urp += is_urp
    groups = sorted(
        g.group_id
        for g in snap.groups
        if any((o.topic, o.partition) in hit for o in g.offsets if o.committed_offset is not None)
    )
    listed = heapq.nsmallest(MAX_INCIDENT_PARTITIONS, hit)
    parts = [PartitionRef(topic=t, partition=p) for t, p in listed]
    return Reach(parts, groups, {"under_replicated": urp, "offline": offline}, total=len(hit))


def _incident(g: _Group, ctx: Context) -> Incident:
    members = sort_findings(g.members)
    severity = _worst(members)
    kind, root = g.kind, g.root
    reach = (
        _broker_down_reach(int(root), members, ctx)
        if kind in (IncidentKind.BROKER_DOWN, IncidentKind.PLANNED_RESTART)
        else Reach(_member_partitions(members), _member_groups(members))
    )
    if kind is IncidentKind.PLANNED_RESTART:  # absent on request: info, whatever its findings say
        severity, action = Severity.INFO, None
        title, evidence, remediation = planned_mod.describe(
            ctx.planned[int(root)], reach.n_partitions, reach.evidence, len(reach.groups)
        )
    else:
        title, evidence, remediation, action = describe(kind, root, members, reach)
    return Incident(
        id=f"{kind.value}:{root}",
        kind=kind,
        severity=severity,
        subject=_subject(kind, root),
        title=title,
        evidence={"findings": len(members), **reach.evidence, **evidence},
        remediation=remediation,
        action=action,
        partitions=reach.partitions[:MAX_INCIDENT_PARTITIONS],
        partitions_total=reach.n_partitions,
        groups=reach.groups[:MAX_INCIDENT_GROUPS],
        groups_total=len(reach.groups),
        findings=members,
    )


def incidents_of(diagnosis: Diagnosis) -> list[Incident]:
    """The diagnosis's incidents; grouped here (without a snapshot) for a Diagnosis built with
    findings but no incidents, e.g. read from a file written before incidents existed."""
    if diagnosis.incidents or not diagnosis.findings:
        return diagnosis.incidents
    return group_incidents(diagnosis.findings)
