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
   when several are down); `snapshot_incomplete` of a topic with an offline partition on N; `quorum_voter_lagging`, `isr_churn` and `snapshot_incomplete` (its log
   dirs) of broker N; `leader_flapping` and partition `consumer_lag` of partitions with a replica
   on N that are offline (snapshot needed); `leader_skew` while any broker is down (its
   leaderships moved away; to the lowest down broker). While the operator's rolling restart
   restarts N, what N's restart explains is `planned_restart:<N>` instead (info, naming the
   request id; kafka_health.diagnose.planned), and a down broker the roll is not restarting
   claims first.
3. `quorum:cluster`: `quorum_no_leader`, `quorum_voter_lagging`, `snapshot_incomplete` of the quorum.
4. `disk:<N>`: `disk_usage`, `disk_time_to_full`, `log_dir_error`, `snapshot_incomplete` of N's log dirs.
5. `broker_out_of_sync:<N>`: partition findings whose out-of-sync brokers are all alive (the
   lowest id), `isr_churn` and `quorum_observer_lagging` of N, and `leader_flapping` of partitions
   with a replica on a churning N.
6. `never_safe_topic:<T>` when T has `min_isr_too_high` (min ISR ≥ RF) or `low_replication_factor`
   with RF 1: T's other topic findings and its remaining partition findings join it.
7. `topic_durability:<T>`: `low_replication_factor`, `low_min_isr`, `unclean_leader_election`.
8. `consumer_group:<G>`: `consumer_lag` (group and partitions), `offset_out_of_range`,
   `offset_expiry`, `rebalance_storm`, `snapshot_incomplete` of the group (`group:<G>`, and
   `group_offsets:<G>`: offsets Kafka left out for a topic the principal may not DESCRIBE).
9. `leadership:cluster`: `leader_imbalance`, `leader_skew` (no broker down).
10. `check:<check>`: anything else, one incident per check.

A check's "N findings in total; only the M worst are listed" notice joins the incident holding
most of that check's findings. An incident's severity is the worst of its members'. Its id,
`<kind>:<root>`, stays the same while the cause persists, so Events are posted when an incident
appears and when it resolves, not every cycle.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_health.diagnose import planned as planned_mod
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

# The planner's remediation ids (kafka_health_spark.findings; repeated here to keep this module
# free of Spark): a finding's `remediation` is one of these or a hint for a person.
PREFERRED_LEADER_ELECTION = "preferred_leader_election"
ROLLING_RESTART = "rolling_restart"
OFFSET_RESET = "offset_reset"

REPLICATION_CHECKS = frozenset({"offline_partition", "under_replicated", "under_min_isr", "at_min_isr"})
TOPIC_DURABILITY_CHECKS = frozenset({"low_replication_factor", "low_min_isr", "unclean_leader_election"})
GROUP_CHECKS = frozenset({"consumer_lag", "offset_out_of_range", "offset_expiry", "rebalance_storm"})
DISK_CHECKS = frozenset({"disk_usage", "disk_time_to_full", "log_dir_error"})
LEADERSHIP_CHECKS = frozenset({"leader_imbalance", "leader_skew"})

_KIND_ORDER = {kind: i for i, kind in enumerate(IncidentKind)}

Root = tuple[IncidentKind, str]


def _ids(value: object) -> list[int]:
    """Broker ids from evidence text such as "1,2" ("none" or missing: none)."""
    if value is None:
        return []
    if isinstance(value, int | float):
        return [int(value)]
    return [int(x) for x in str(value).split(",") if x.strip().lstrip("-").isdigit()]


def _single_copy(f: Finding) -> bool:
    """A topic finding whose evidence says replication factor 1 (or less)."""
    rf = _ids(f.evidence.get("replication_factor"))
    return bool(rf) and rf[0] <= 1


def _part(f: Finding) -> tuple[str, str]:
    """A snapshot_incomplete finding's part, split: ('log_dirs', '2'), ('group', 'billing')."""
    kind, _, detail = str(f.evidence.get("part", "")).partition(":")
    return kind, detail


def _is_cap_notice(f: Finding) -> bool:
    return f.subject.kind is SubjectKind.CLUSTER and set(f.evidence) == {"total", "listed"}


@dataclass
class _Context:
    """What the rules need besides the finding itself."""

    down: dict[int, Finding]
    churning: set[int]
    never_safe: set[str]
    replicas: dict[tuple[str, int], list[int]]
    offline: set[tuple[str, int]]
    offline_topics: dict[str, int]
    """Topics with an offline partition that has a replica on a down broker → the lowest such broker."""
    snapshot: ClusterSnapshot | None
    planned: planned_mod.Planned = field(default_factory=dict)
    """Brokers a rolling restart is restarting now (kafka_health.diagnose.planned)."""

    def pick(self, brokers: Iterable[int]) -> int:
        """The lowest id, a broker the roll is not restarting first (its trouble is not planned)."""
        return min(brokers, key=lambda b: (b in self.planned, b))

    @classmethod
    def of(
        cls,
        findings: list[Finding],
        snapshot: ClusterSnapshot | None,
        planned: planned_mod.Planned | None = None,
    ) -> _Context:
        down = {
            f.subject.broker: f
            for f in findings
            if f.check == "broker_missing" and f.subject.broker is not None and not _is_cap_notice(f)
        }
        churning = {
            f.subject.broker for f in findings if f.check == "isr_churn" and f.subject.broker is not None
        }
        never_safe = {
            f.subject.topic
            for f in findings
            if f.subject.topic is not None
            and f.subject.kind is SubjectKind.TOPIC
            and (f.check == "min_isr_too_high" or (f.check == "low_replication_factor" and _single_copy(f)))
        }
        replicas: dict[tuple[str, int], list[int]] = {}
        offline: set[tuple[str, int]] = set()
        offline_topics: dict[str, int] = {}
        if snapshot is not None and (down or churning):
            alive = {b.id for b in snapshot.brokers if b.alive}
            # Replica lists only for the partitions a finding asks about (a snapshot may hold 1M).
            asked = {
                (f.subject.topic, f.subject.partition)
                for f in findings
                if f.check in ("leader_flapping", "consumer_lag") and f.subject.partition is not None
            }
            for p in snapshot.partitions:
                if asked and (p.topic, p.partition) in asked:
                    replicas[(p.topic, p.partition)] = p.replicas
                if p.leader is None or p.leader not in alive:
                    offline.add((p.topic, p.partition))
                    on = [b for b in p.replicas if b in down]
                    if on:
                        offline_topics[p.topic] = min(offline_topics.get(p.topic, on[0]), *on)
        return cls(down, churning, never_safe, replicas, offline, offline_topics, snapshot, planned or {})


def _root(f: Finding, ctx: _Context) -> Root | None:  # noqa: C901, PLR0912, PLR0915
    """The incident a finding belongs to (None: a cap notice, placed afterwards)."""
    s = f.subject
    check = f.check
    if _is_cap_notice(f):
        return None
    if check == "cluster_unreachable":
        return IncidentKind.CLUSTER_UNREACHABLE, "cluster"
    if check == "visibility":
        return IncidentKind.VISIBILITY, "cluster"

    # 2. A broker down.
    if check == "broker_missing" and s.broker is not None:
        return IncidentKind.BROKER_DOWN, str(s.broker)
    if s.broker in ctx.down and check in ("quorum_voter_lagging", "isr_churn"):
        return IncidentKind.BROKER_DOWN, str(s.broker)
    if check == "snapshot_incomplete":
        kind, detail = _part(f)
        if kind == "log_dirs" and detail.isdigit() and int(detail) in ctx.down:
            return IncidentKind.BROKER_DOWN, detail
        if kind in ("offsets", "partitions") and detail in ctx.offline_topics:
            return IncidentKind.BROKER_DOWN, str(ctx.offline_topics[detail])
    out_of_sync = _ids(f.evidence.get("out_of_sync"))
    if check in REPLICATION_CHECKS and s.kind is SubjectKind.PARTITION:
        # Out of sync, or (no leader) every replica: the ISR of an offline partition may keep its
        # last member.
        leader = f.evidence.get("leader")
        implicated = set(out_of_sync) | set(_ids(leader))
        if leader is None or check == "offline_partition":
            implicated |= set(_ids(f.evidence.get("replicas")))
        hit = implicated & set(ctx.down)
        if hit:
            return IncidentKind.BROKER_DOWN, str(ctx.pick(hit))
    if s.kind is SubjectKind.PARTITION and s.topic is not None and s.partition is not None:
        tp = (s.topic, s.partition)
        on = sorted(set(ctx.replicas.get(tp, [])) & set(ctx.down))
        if on and (check == "leader_flapping" or (check == "consumer_lag" and tp in ctx.offline)):
            return IncidentKind.BROKER_DOWN, str(ctx.pick(on))
    if check == "leader_skew" and ctx.down:
        return IncidentKind.BROKER_DOWN, str(ctx.pick(ctx.down))

    # 3. The quorum.
    if check in ("quorum_no_leader", "quorum_voter_lagging"):
        return IncidentKind.QUORUM, "cluster"
    if check == "snapshot_incomplete" and _part(f)[0] == "quorum":
        return IncidentKind.QUORUM, "cluster"

    # 4. Disks.
    if check in DISK_CHECKS and s.broker is not None:
        return IncidentKind.DISK, str(s.broker)
    if check == "snapshot_incomplete":
        kind, detail = _part(f)
        if kind == "log_dirs" and detail.isdigit():
            return IncidentKind.DISK, detail

    # 5. A live broker out of sync.
    if check in REPLICATION_CHECKS and out_of_sync:
        return IncidentKind.BROKER_OUT_OF_SYNC, str(ctx.pick(out_of_sync))
    if check in ("isr_churn", "quorum_observer_lagging") and s.broker is not None:
        return IncidentKind.BROKER_OUT_OF_SYNC, str(s.broker)
    if check == "leader_flapping" and s.topic is not None and s.partition is not None:
        on = sorted(set(ctx.replicas.get((s.topic, s.partition), [])) & ctx.churning)
        if on:
            return IncidentKind.BROKER_OUT_OF_SYNC, str(on[0])

    # 6, 7. Topics.
    if (
        s.topic is not None
        and s.topic in ctx.never_safe
        and (s.kind is SubjectKind.TOPIC or check in REPLICATION_CHECKS)
    ):
        return IncidentKind.NEVER_SAFE_TOPIC, s.topic
    if check in TOPIC_DURABILITY_CHECKS and s.topic is not None:
        return IncidentKind.TOPIC_DURABILITY, s.topic

    # 8. Consumer groups.
    if check in GROUP_CHECKS and s.group is not None:
        return IncidentKind.CONSUMER_GROUP, s.group
    if check == "snapshot_incomplete":
        kind, detail = _part(f)
        if kind in ("group", "group_offsets") and detail:
            return IncidentKind.CONSUMER_GROUP, detail

    # 9. Leadership.
    if check in LEADERSHIP_CHECKS:
        return IncidentKind.LEADERSHIP, "cluster"

    # 10. Anything else: one incident per check.
    return IncidentKind.CHECK, check


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
    ctx = _Context.of(ordered, snapshot, planned)
    groups: dict[Root, _Group] = {}
    notices: list[Finding] = []
    for f in ordered:
        root = planned_mod.planned_root(_root(f, ctx), f, ctx.planned)
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


def _count(members: list[Finding], check: str) -> int:
    """Findings of `check` among the members, counting the ones a cap notice left out."""
    listed = sum(1 for f in members if f.check == check and not _is_cap_notice(f))
    for f in members:
        if f.check == check and _is_cap_notice(f):
            return int(f.evidence.get("total") or listed)
    return listed


def _hints(members: list[Finding]) -> list[str]:
    """The members' own remediation hints (not the planner's ids), distinct, in order."""
    out: list[str] = []
    for f in members:
        r = f.remediation
        if r and r not in (PREFERRED_LEADER_ELECTION, ROLLING_RESTART, OFFSET_RESET) and r not in out:
            out.append(r)
    return out


MAX_HINTS = 3


def _hint(members: list[Finding]) -> str:
    """ " To fix: <the members' hints>." (empty when they give none)."""
    hints = _hints(members)
    if not hints:
        return ""
    more = f" (and {len(hints) - MAX_HINTS} more in its findings)" if len(hints) > MAX_HINTS else ""
    return f" To fix: {'; '.join(h.rstrip('.') for h in hints[:MAX_HINTS])}{more}."


@dataclass
class _Reach:
    """The partitions and groups an incident affects."""

    partitions: list[PartitionRef]
    groups: list[str]
    evidence: dict[str, float | int | str | None] = field(default_factory=dict)
    total: int | None = None
    """How many partitions in all, when `partitions` lists only the first MAX_INCIDENT_PARTITIONS."""


def _broker_down_reach(broker: int, members: list[Finding], ctx: _Context) -> _Reach:
    """From the snapshot when there is one (every partition, not only the listed findings):
    partitions with a replica on the broker that it left the ISR of or that are offline; the
    groups with committed offsets on them."""
    snap = ctx.snapshot
    if snap is None or not snap.partitions:
        return _Reach(_member_partitions(members), _member_groups(members))
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
    return _Reach(parts, groups, {"under_replicated": urp, "offline": offline}, total=len(hit))


def _incident(g: _Group, ctx: _Context) -> Incident:
    members = sort_findings(g.members)
    severity = _worst(members)
    kind, root = g.kind, g.root
    reach = (
        _broker_down_reach(int(root), members, ctx)
        if kind in (IncidentKind.BROKER_DOWN, IncidentKind.PLANNED_RESTART)
        else _Reach(_member_partitions(members), _member_groups(members))
    )
    if kind is IncidentKind.PLANNED_RESTART:  # absent on request: info, whatever its findings say
        severity, action = Severity.INFO, None
        n = reach.total if reach.total is not None else len(reach.partitions)
        title, evidence, remediation = planned_mod.describe(
            ctx.planned[int(root)], n, reach.evidence, len(reach.groups)
        )
    else:
        title, evidence, remediation, action = _describe(kind, root, members, reach)
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
        partitions_total=reach.total if reach.total is not None else len(reach.partitions),
        groups=reach.groups[:MAX_INCIDENT_GROUPS],
        groups_total=len(reach.groups),
        findings=members,
    )


Evidence = dict[str, float | int | str | None]
_NO_ACTION = "No automatic action"


def _describe(  # noqa: C901, PLR0912, PLR0915
    kind: IncidentKind, root: str, members: list[Finding], reach: _Reach
) -> tuple[str, Evidence, str, str | None]:
    """Title, extra evidence, remediation text and the automatic action id of an incident."""
    first = members[0]
    n_parts = reach.total if reach.total is not None else len(reach.partitions)
    n_groups = len(reach.groups)

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    if kind is IncidentKind.BROKER_DOWN:
        missing = next((f for f in members if f.check == "broker_missing"), first)
        fenced = missing.evidence.get("fenced") in (1, True, "1")
        state = "fenced (registered, not serving)" if fenced else "not registered in the cluster"
        reach_text = [plural(n_parts, "partition") + " affected"]
        if reach.evidence:
            reach_text = [
                f"{reach.evidence['under_replicated']} under-replicated",
                f"{reach.evidence['offline']} offline",
            ]
        at_min = _count(members, "at_min_isr")
        under_min = _count(members, "under_min_isr")
        if under_min:
            reach_text.append(f"{under_min} under min ISR")
        if at_min:
            reach_text.append(f"{at_min} at min ISR")
        title = f"Broker {root} is {state}"
        if n_parts or reach.evidence:
            title += ": " + ", ".join(reach_text)
        title += f"; {plural(n_groups, 'consumer group')} read from them." if n_groups else "."
        return (
            title,
            {"fenced": 1 if fenced else 0, "under_min_isr": under_min, "at_min_isr": at_min},
            f"{_NO_ACTION}: the operator does not start brokers, and restarts no other broker while "
            f"partitions are under-replicated. Start broker {root} (check its process or pod, and its "
            "log); once it is back in every ISR, a preferred leader election returns its leaderships.",
            None,
        )

    if kind is IncidentKind.QUORUM:
        no_leader = any(f.check == "quorum_no_leader" for f in members)
        voters = sorted(
            {
                f.subject.broker
                for f in members
                if f.check == "quorum_voter_lagging" and f.subject.broker is not None
            }
        )
        if no_leader:
            title = "The KRaft controller quorum has no leader: no metadata change can happen."
        elif voters:
            title = f"Controller voter(s) {', '.join(map(str, voters))} trail the quorum leader."
        else:
            title = first.message
        return (
            title,
            {"lagging_voters": ",".join(map(str, voters)) or None},
            f"{_NO_ACTION}: remediation is withheld while the quorum has no leader, and a rolling "
            "restart never takes a voter the quorum needs." + _hint(members),
            None,
        )

    if kind is IncidentKind.DISK:
        worst = first
        return (
            f"Broker {root}'s disk: " + worst.message.removeprefix(f"Broker {root}'s "),
            {},
            f"{_NO_ACTION}: the operator changes neither retention nor storage." + _hint(members),
            None,
        )

    if kind is IncidentKind.BROKER_OUT_OF_SYNC:
        churn = next((f for f in members if f.check == "isr_churn"), None)
        out = len({(p.topic, p.partition) for p in reach.partitions})
        parts = []
        if out:
            parts.append(f"out of sync on {plural(out, 'partition')}")
        if churn is not None:
            parts.append(f"dropped out of ISRs {churn.evidence.get('episodes')} times in the window")
        title = f"Broker {root} is alive but " + " and ".join(parts or ["out of sync"]) + "."
        return (
            title,
            {},
            f"{_NO_ACTION}: a rolling restart waits until every partition is back in sync. Check broker "
            f"{root}: its disk, network and GC pauses"
            + (
                "; a rolling restart of it can be requested (spec.remediation.rollingRestart)."
                if churn is not None
                else "."
            ),
            None,
        )

    if kind is IncidentKind.NEVER_SAFE_TOPIC:
        topic_finding = next(
            (f for f in members if f.check in ("min_isr_too_high", "low_replication_factor")), first
        )
        rf = topic_finding.evidence.get("replication_factor")
        min_isr = topic_finding.evidence.get("min_insync_replicas")
        n = topic_finding.evidence.get("partitions")
        return (
            f"Topic {root} can never be safe: replication factor {rf}, min.insync.replicas {min_isr}"
            + (f" ({plural(int(n), 'partition')})." if isinstance(n, int | float) else "."),
            {"replication_factor": rf, "min_insync_replicas": min_isr},
            f"{_NO_ACTION}: topic configuration is its owner's. Rolling restarts refuse while it exists "
            "(spec.remediation.rollingRestart.neverSafePartitions: Proceed rolls anyway and names its "
            "partitions)." + _hint(members),
            None,
        )

    if kind is IncidentKind.TOPIC_DURABILITY:
        checks = sorted({f.check for f in members})
        return (
            f"Topic {root}'s durability settings are weaker than the policy asks: {', '.join(checks)}.",
            {},
            f"{_NO_ACTION}: topic configuration is its owner's." + _hint(members),
            None,
        )

    if kind is IncidentKind.CONSUMER_GROUP:
        summary = next(
            (f for f in members if f.check == "consumer_lag" and f.subject.kind is SubjectKind.GROUP), first
        )
        others = sorted({f.check for f in members if f.check != "consumer_lag"})
        title = summary.message + (
            f" Also: {', '.join(others)}." if others and summary.check == "consumer_lag" else ""
        )
        resettable = any(f.remediation == OFFSET_RESET for f in members)
        text = (
            "An offset reset runs only on request (spec.remediation.offsetResets, with the group "
            "stopped), never automatically."
            if resettable
            else f"{_NO_ACTION}: the operator does not touch consumers."
        )
        return title, {"status": summary.evidence.get("status")}, text + _hint(members), None

    if kind is IncidentKind.LEADERSHIP:
        electable = any(f.remediation == PREFERRED_LEADER_ELECTION for f in members)
        brokers = sorted(
            {
                f.subject.broker
                for f in members
                if f.check == "leader_imbalance" and f.subject.broker is not None
            }
        )
        parts = []
        if brokers:
            parts.append(
                f"broker(s) {', '.join(map(str, brokers))} lead less than their preferred partitions"
            )
        if any(f.check == "leader_skew" for f in members):
            parts.append("leader counts are skewed across brokers")
        title = "Leadership is off balance: " + "; ".join(parts) + "."
        if electable:
            return (
                title,
                {},
                "Preferred leader election: automatic in Enforce mode when the live imbalance is over "
                "spec.remediation.preferredLeaderElection's threshold (in a maintenance window when one "
                "is required), or on request with the kafkahealth.io/elect-leaders annotation.",
                PREFERRED_LEADER_ELECTION,
            )
        return title, {}, f"{_NO_ACTION}." + _hint(members), None

    if kind is IncidentKind.VISIBILITY:
        return (
            first.message,
            {k: first.evidence.get(k) for k in ("hidden_partitions", "visible_partitions")},
            f"{_NO_ACTION}: grant the ACL named; until then the diagnosis covers only what the principal "
            "sees, and the operator runs no remediation (KafkaAuthorizationDenied)."
            if first.message.lower().startswith("authorization denied")
            else f"{_NO_ACTION}: the brokers' log dirs are read again next cycle.",
            None,
        )

    if kind is IncidentKind.CLUSTER_UNREACHABLE:
        return (
            first.message,
            {},
            f"{_NO_ACTION}: nothing is planned on a cluster that cannot be read." + _hint(members),
            None,
        )

    # CHECK: one incident per check.
    title = first.message if len(members) == 1 else f"{root}: {len(members)} findings; worst: {first.message}"
    return title, {}, f"{_NO_ACTION}." + (_hint(members) or " See its findings."), None


def incidents_of(diagnosis: Diagnosis) -> list[Incident]:
    """The diagnosis's incidents; grouped here (without a snapshot) for a Diagnosis built with
    findings but no incidents, e.g. read from a file written before incidents existed."""
    if diagnosis.incidents or not diagnosis.findings:
        return diagnosis.incidents
    return group_incidents(diagnosis.findings)
