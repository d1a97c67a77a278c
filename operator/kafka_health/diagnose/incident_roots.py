"""Which incident a finding belongs to: the rules of `kafka_health.diagnose.incidents`, in order.

Each rule is a function of one finding and the context (the down and churning brokers, the
never-safe topics, the offline partitions); the first that names a root claims the finding, so
every finding is in exactly one incident. The order is the one the incidents module's docstring
lists (1 to 12).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafka_health.diagnose import planned as planned_mod
from kafka_health.models.findings import Finding, IncidentKind, SubjectKind
from kafka_health.models.snapshot import ClusterSnapshot

REPLICATION_CHECKS = frozenset({"offline_partition", "under_replicated", "under_min_isr", "at_min_isr"})
TOPIC_DURABILITY_CHECKS = frozenset({"low_replication_factor", "low_min_isr", "unclean_leader_election"})
GROUP_CHECKS = frozenset(
    {
        "consumer_lag",
        "offset_out_of_range",
        "offset_expiry",
        "rebalance_storm",
        "reconciliation_stuck",
        "streams_group_not_ready",
        "streams_members_idle",
    }
)
DISK_CHECKS = frozenset({"disk_usage", "disk_time_to_full", "log_dir_error"})
LEADERSHIP_CHECKS = frozenset({"leader_imbalance", "leader_skew"})
CERTIFICATE_CHECKS = frozenset({"listener_certificate_expiry", "listener_certificate_mismatch"})

Root = tuple[IncidentKind, str]


def broker_ids(value: object) -> list[int]:
    """Broker ids from evidence text such as "1,2" ("none" or missing: none)."""
    if value is None:
        return []
    if isinstance(value, int | float):
        return [int(value)]
    return [int(x) for x in str(value).split(",") if x.strip().lstrip("-").isdigit()]


def _single_copy(f: Finding) -> bool:
    """A topic finding whose evidence says replication factor 1 (or less)."""
    rf = broker_ids(f.evidence.get("replication_factor"))
    return bool(rf) and rf[0] <= 1


def _part(f: Finding) -> tuple[str, str]:
    """A snapshot_incomplete finding's part, split: ('log_dirs', '2'), ('group', 'billing')."""
    kind, _, detail = str(f.evidence.get("part", "")).partition(":")
    return kind, detail


def is_cap_notice(f: Finding) -> bool:
    """A check's "N findings in total; only the M worst are listed" notice."""
    return f.subject.kind is SubjectKind.CLUSTER and set(f.evidence) == {"total", "listed"}


@dataclass
class _Offline:
    """What the snapshot says of the partitions the findings ask about."""

    replicas: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    offline: set[tuple[str, int]] = field(default_factory=set)
    offline_topics: dict[str, int] = field(default_factory=dict)
    offsets_partitions: int = 0
    """How many partitions `__consumer_offsets` has (a group's coordinator is one of them)."""

    @classmethod
    def of(cls, findings: list[Finding], snapshot: ClusterSnapshot, down: Iterable[int]) -> _Offline:
        out = cls()
        alive = {b.id for b in snapshot.brokers if b.alive}
        # Replica lists only for the partitions a finding asks about (a snapshot may hold 1M):
        # those of lag and flapping findings, and the partitions whose offsets went unread.
        asked = {
            (f.subject.topic, f.subject.partition)
            for f in findings
            if f.check in ("leader_flapping", "consumer_lag") and f.subject.partition is not None
        } | {
            (_part(f)[1], p)
            for f in findings
            if f.check == "snapshot_incomplete" and _part(f)[0] == "offsets"
            for p in broker_ids(f.evidence.get("partitions"))
        }
        # A group went unread: every coordinator partition (which one is the group's depends on
        # how many there are), to tell whether a planned restart explains it.
        groups_unread = any(f.check == "snapshot_incomplete" and _part(f)[0] == "group" for f in findings)
        for p in snapshot.partitions:
            if groups_unread and p.topic == planned_mod.OFFSETS_TOPIC:
                out.offsets_partitions += 1
                out.replicas[(p.topic, p.partition)] = p.replicas
            elif asked and (p.topic, p.partition) in asked:
                out.replicas[(p.topic, p.partition)] = p.replicas
            if p.leader is None or p.leader not in alive:
                out.offline.add((p.topic, p.partition))
                on = [b for b in p.replicas if b in down]
                if on:
                    out.offline_topics[p.topic] = min(out.offline_topics.get(p.topic, on[0]), *on)
        return out


@dataclass
class Context:
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
    offsets_partitions: int = 0
    """How many partitions `__consumer_offsets` has, read when a group went unread."""

    def pick(self, brokers: Iterable[int]) -> int:
        """The lowest id, a broker the roll is not restarting first (its trouble is not planned)."""
        return min(brokers, key=lambda b: (b in self.planned, b))

    @classmethod
    def of(
        cls,
        findings: list[Finding],
        snapshot: ClusterSnapshot | None,
        planned: planned_mod.Planned | None = None,
    ) -> Context:
        down = {
            f.subject.broker: f
            for f in findings
            if f.check == "broker_missing" and f.subject.broker is not None and not is_cap_notice(f)
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
        seen = (
            _Offline.of(findings, snapshot, down)
            if snapshot is not None and (down or churning or planned)
            else _Offline()
        )
        return cls(
            down,
            churning,
            never_safe,
            seen.replicas,
            seen.offline,
            seen.offline_topics,
            snapshot,
            planned or {},
            seen.offsets_partitions,
        )


# 1. What hides the cluster.
def _cluster(f: Finding, ctx: Context) -> Root | None:
    if f.check == "cluster_unreachable":
        return IncidentKind.CLUSTER_UNREACHABLE, "cluster"
    if f.check == "visibility":
        return IncidentKind.VISIBILITY, "cluster"
    return None


# 2. A broker down.
def _broker_down_own(f: Finding, ctx: Context) -> Root | None:
    """The broker's own findings, and the parts of the snapshot it left unread."""
    s, check = f.subject, f.check
    if check == "broker_missing" and s.broker is not None:
        return IncidentKind.BROKER_DOWN, str(s.broker)
    if s.broker in ctx.down and check in ("quorum_voter_lagging", "isr_churn", "broker_recovering"):
        return IncidentKind.BROKER_DOWN, str(s.broker)
    if check == "snapshot_incomplete":
        kind, detail = _part(f)
        if kind == "log_dirs" and detail.isdigit() and int(detail) in ctx.down:
            return IncidentKind.BROKER_DOWN, detail
        if kind in ("offsets", "partitions") and detail in ctx.offline_topics:
            return IncidentKind.BROKER_DOWN, str(ctx.offline_topics[detail])
    return None


def _broker_down_partitions(f: Finding, ctx: Context) -> Root | None:
    """Partition findings a down broker explains."""
    s, check = f.subject, f.check
    if check in REPLICATION_CHECKS and s.kind is SubjectKind.PARTITION:
        # Out of sync, or (no leader) every replica: the ISR of an offline partition may keep its
        # last member.
        leader = f.evidence.get("leader")
        implicated = set(broker_ids(f.evidence.get("out_of_sync"))) | set(broker_ids(leader))
        if leader is None or check == "offline_partition":
            implicated |= set(broker_ids(f.evidence.get("replicas")))
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
    return None


# 3. The quorum.
def _quorum(f: Finding, ctx: Context) -> Root | None:
    if f.check in ("quorum_no_leader", "quorum_voter_lagging"):
        return IncidentKind.QUORUM, "cluster"
    if f.check == "snapshot_incomplete" and _part(f)[0] == "quorum":
        return IncidentKind.QUORUM, "cluster"
    return None


# 4. Disks.
def _disk(f: Finding, ctx: Context) -> Root | None:
    if f.check in DISK_CHECKS and f.subject.broker is not None:
        return IncidentKind.DISK, str(f.subject.broker)
    if f.check == "snapshot_incomplete":
        kind, detail = _part(f)
        if kind == "log_dirs" and detail.isdigit():
            return IncidentKind.DISK, detail
    return None


# 5. Reassignments in flight.
def _reassignment(f: Finding, ctx: Context) -> Root | None:
    """A partition being reassigned, and the partition findings whose out-of-sync replicas are all
    ones its reassignment is adding (the check's `reassigning` evidence)."""
    if f.check == "partition_reassigning":
        return IncidentKind.REASSIGNMENT, "cluster"
    if f.check in REPLICATION_CHECKS and f.evidence.get("reassigning") is not None:
        return IncidentKind.REASSIGNMENT, "cluster"
    return None


# 6. A live broker out of sync.
def _out_of_sync(f: Finding, ctx: Context) -> Root | None:
    s, check = f.subject, f.check
    out_of_sync = broker_ids(f.evidence.get("out_of_sync"))
    if check in REPLICATION_CHECKS and out_of_sync:
        return IncidentKind.BROKER_OUT_OF_SYNC, str(ctx.pick(out_of_sync))
    if check in ("isr_churn", "quorum_observer_lagging") and s.broker is not None:
        return IncidentKind.BROKER_OUT_OF_SYNC, str(s.broker)
    if check == "leader_flapping" and s.topic is not None and s.partition is not None:
        on = sorted(set(ctx.replicas.get((s.topic, s.partition), [])) & ctx.churning)
        if on:
            return IncidentKind.BROKER_OUT_OF_SYNC, str(on[0])
    return None


# 7, 8. Topics.
def _topic(f: Finding, ctx: Context) -> Root | None:
    s, check = f.subject, f.check
    if (
        s.topic is not None
        and s.topic in ctx.never_safe
        and (s.kind is SubjectKind.TOPIC or check in REPLICATION_CHECKS)
    ):
        return IncidentKind.NEVER_SAFE_TOPIC, s.topic
    if check in TOPIC_DURABILITY_CHECKS and s.topic is not None:
        return IncidentKind.TOPIC_DURABILITY, s.topic
    return None


# 9. Consumer groups.
def _group(f: Finding, ctx: Context) -> Root | None:
    if f.check in GROUP_CHECKS and f.subject.group is not None:
        return IncidentKind.CONSUMER_GROUP, f.subject.group
    if f.check == "snapshot_incomplete":
        kind, detail = _part(f)
        if kind in ("group", "group_offsets") and detail:
            return IncidentKind.CONSUMER_GROUP, detail
    return None


# 10. Leadership.
def _leadership(f: Finding, ctx: Context) -> Root | None:
    return (IncidentKind.LEADERSHIP, "cluster") if f.check in LEADERSHIP_CHECKS else None


# 11. Listener certificates.
def _certificates(f: Finding, ctx: Context) -> Root | None:
    if f.check in CERTIFICATE_CHECKS:
        return IncidentKind.CERTIFICATES, "cluster"
    if f.check == "snapshot_incomplete" and _part(f)[0] == "certificates":
        return IncidentKind.CERTIFICATES, "cluster"
    return None


_RULES: tuple[Callable[[Finding, Context], Root | None], ...] = (
    _cluster,
    _broker_down_own,
    _broker_down_partitions,
    _quorum,
    _disk,
    _reassignment,
    _out_of_sync,
    _topic,
    _group,
    _leadership,
    _certificates,
)


def root_of(f: Finding, ctx: Context) -> Root | None:
    """The incident a finding belongs to (None: a cap notice, placed afterwards)."""
    if is_cap_notice(f):
        return None
    for rule in _RULES:
        root = rule(f, ctx)
        if root is not None:
            return root
    # 12. Anything else: one incident per check.
    return IncidentKind.CHECK, f.check
