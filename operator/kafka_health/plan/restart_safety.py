"""The rolling-restart safety rules (docs/safety.md, "Rolling restart"; docs/design.md, "Safety
rules"), checked before EACH broker on live state, one pure function per rule.

1. Cluster-wide: no under-replicated and no offline partition.
2. For every partition with a replica on the candidate: not (ISR < minISR) and not
   (ISR == minISR and the candidate is in the ISR). Partitions whose RF <= minISR can never
   roll safely: they are skipped by this rule and reported (`skipped`).
3. KRaft quorum: the other caught-up voters still form a majority of all voters; the active
   controller goes last (of the dedicated controllers when it is one, else of the whole roll).
4. One broker at a time: every other broker is registered.
5. No partition reassignment in flight involves the candidate (a replica of the partition, or
   being added or removed): its restart would stall the move, whose new replicas are out of sync
   on purpose. Rule 1 does not count those new replicas: a partition out of sync only on replicas
   a reassignment is adding is not under-replicated by a failure.
Never safe (neverSafePartitions: Refuse): a partition rule 2 skipped blocks the candidate.
A rule that cannot be evaluated (min.insync.replicas, the quorum or the reassignments unknown)
blocks: unknown is not safe.

Dedicated (controller-only) KRaft nodes are the voters that are not registered brokers. They
hold no partitions: rules 1 and 2 do not apply to them, rules 3 and 4 do. The roll restarts
them first (`order_brokers`): follower controllers by id, the active controller last among
them; then the brokers (non-voters, combined voters, the active combined controller last).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.reasons import BlockerRule
from kafka_health.models.snapshot import ClusterSnapshot, Partition, Quorum, QuorumVoter
from kafka_health.plan.reassignment_safety import being_added, only_added_out_of_sync, rule_5_reassignment
from kafka_health.plan.safety_model import MAX_LISTED, Blocker

MAX_VOTER_LAG = 100
"""Records a controller voter may trail the quorum leader and still count as caught up."""
MAX_VOTER_LAG_MS = 5_000
"""Milliseconds since a voter last caught up within which it still counts as caught up."""

log = logging.getLogger(__name__)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SkippedPartition(_Model):
    """A partition that can never roll safely (RF <= min.insync.replicas): unavailable to acks=all while its broker restarts."""

    topic: str
    partition: int
    replication_factor: int
    min_insync_replicas: int


class RestartSafety(_Model):
    broker: int
    safe: bool
    blockers: list[Blocker] = Field(default_factory=list)
    skipped: list[SkippedPartition] = Field(default_factory=list)

    def summary(self) -> str:
        if self.safe:
            extra = f"; {len(self.skipped)} partition(s) with RF <= min ISR skipped" if self.skipped else ""
            return f"broker {self.broker} may restart now{extra}"
        return f"broker {self.broker} may not restart now: " + "; ".join(b.message for b in self.blockers)


def _name(p: Partition) -> str:
    return f"{p.topic}-{p.partition}"


def _listed(partitions: Iterable[Partition]) -> list[str]:
    return sorted(_name(p) for p in partitions)[:MAX_LISTED]


def _block_on(blockers: list[Blocker], rule: BlockerRule, partitions: list[Partition], message: str) -> None:
    """A blocker naming the first of `partitions`; none when the rule found no partition."""
    if partitions:
        blockers.append(Blocker(rule=rule, message=message, partitions=_listed(partitions)))


def topic_min_isr(snapshot: ClusterSnapshot) -> dict[str, int | None]:
    """Each topic's min.insync.replicas as read; a topic missing here (or None) is unknown, which
    the rules treat as not safe, never as a default."""
    return {c.topic: c.min_insync_replicas for c in snapshot.topic_configs}


def voter_caught_up(voter: QuorumVoter, snapshot: ClusterSnapshot, *, max_lag: int, max_lag_ms: int) -> bool:
    """A voter is caught up when its lag (records) is known and small, or else it caught up recently."""
    quorum = snapshot.quorum
    if quorum is not None and voter.id == quorum.leader_id:
        return True
    if voter.lag is not None:
        return voter.lag <= max_lag
    if voter.last_caught_up_ms is not None:
        taken_ms = int(snapshot.taken_at.timestamp() * 1000)
        return taken_ms - voter.last_caught_up_ms <= max_lag_ms
    return False


def check_restart_safety(
    snapshot: ClusterSnapshot,
    broker: int,
    *,
    remaining: Collection[int] = (),
    max_voter_lag: int = MAX_VOTER_LAG,
    max_voter_lag_ms: int = MAX_VOTER_LAG_MS,
    refuse_never_safe: bool = False,
) -> RestartSafety:
    """Whether `broker` may be restarted now: the numbered rules of the module docstring, one
    pure function each (rule 4 first: it explains most of what follows when violated), their
    blockers in that order. `remaining`: brokers of the roll not yet restarted (the candidate
    included); the active controller is refused while others remain. `refuse_never_safe`
    (neverSafePartitions: Refuse): a partition of the candidate with RF <= min.insync.replicas
    blocks it (rule `never_safe`) instead of being skipped."""
    dedicated = broker in controller_only_nodes(snapshot)
    # Rules 1 and 2 concern partitions: a controller-only node holds none, so its restart changes no ISR.
    partitions = [] if dedicated else snapshot.partitions
    one_at_a_time = rule_4_one_at_a_time(snapshot, broker, dedicated=dedicated)
    replicated = rule_1_fully_replicated(partitions, broker, adding=being_added(snapshot.reassignments))
    isr_blockers, skipped = rule_2_min_isr(snapshot, partitions, broker)
    blockers = [
        *one_at_a_time,
        *replicated,
        *isr_blockers,
        *rule_3_quorum(
            snapshot,
            broker,
            remaining,
            dedicated=dedicated,
            max_voter_lag=max_voter_lag,
            max_voter_lag_ms=max_voter_lag_ms,
        ),
        *never_safe_rule(skipped, broker, refuse=refuse_never_safe),
        *_refused(
            "rule 5 (no partition reassignment on the broker)",
            broker,
            rule_5_reassignment(snapshot, broker, dedicated=dedicated),
        ),
    ]
    return RestartSafety(broker=broker, safe=not blockers, blockers=blockers, skipped=skipped)


def _refused(rule: str, broker: int, blockers: list[Blocker]) -> list[Blocker]:
    """`blockers`, logged as ONE line when the rule refuses the broker."""
    if blockers:
        log.info(
            "restart of broker %s refused by %s: %s", broker, rule, "; ".join(b.message for b in blockers)
        )
    return blockers


def rule_4_one_at_a_time(snapshot: ClusterSnapshot, broker: int, *, dedicated: bool) -> list[Blocker]:
    """Rule 4: the candidate is known (a registered broker or a dedicated controller), and every
    other broker is registered and alive."""
    blockers = []
    if broker not in {b.id for b in snapshot.brokers} and not dedicated:
        message = f"broker {broker} is not in the cluster metadata"
        blockers.append(Blocker(rule=BlockerRule.UNKNOWN_BROKER, message=message))
    down = sorted((b for b in snapshot.brokers if not b.alive), key=lambda b: b.id)
    if down:
        blockers.append(
            Blocker(
                rule=BlockerRule.ONE_AT_A_TIME,
                message=f"{', '.join(f'broker {b.id} {b.state}' for b in down)}: one broker at a time",
            )
        )
    return _refused("rule 4 (one broker at a time)", broker, blockers)


def rule_4_recovering(snapshot: ClusterSnapshot, broker: int, running: Collection[int]) -> list[Blocker]:
    """Rule 4, named for the case Strimzi refuses on: another broker is registered but fenced
    while its process runs (`running`: the broker ids whose pod containers run). A KRaft broker
    stays fenced until it has caught up with the metadata and its LogManager has loaded (and,
    after an unclean stop, recovered) its logs, so this is a broker still recovering -- or a
    paused (SIGSTOPped) process, which Kafka cannot tell apart and which must be refused too.
    A fenced broker whose process does not run is simply down (`one_at_a_time`)."""
    recovering = sorted(
        b.id for b in snapshot.brokers if b.id != broker and not b.alive and b.fenced and b.id in running
    )
    if not recovering:
        return []
    names = ", ".join(f"broker {b}" for b in recovering)
    message = (
        f"{names} fenced while its process runs (log recovery or metadata catch-up, or paused): "
        "never restart while a broker is recovering"
    )
    return _refused("rule 4 (recovering)", broker, [Blocker(rule=BlockerRule.RECOVERING, message=message)])


def rule_1_fully_replicated(
    partitions: Sequence[Partition], broker: int, *, adding: Mapping[tuple[str, int], set[int]]
) -> list[Blocker]:
    """Rule 1: cluster-wide, no offline and no under-replicated partition (a partition out of
    sync only on replicas a reassignment is `adding` is left to rule 5)."""
    offline = [p for p in partitions if p.leader is None]
    urp = [p for p in partitions if len(p.isr) < len(p.replicas) and not only_added_out_of_sync(p, adding)]
    blockers: list[Blocker] = []
    _block_on(blockers, BlockerRule.OFFLINE, offline, f"{len(offline)} offline partition(s)")
    _block_on(
        blockers,
        BlockerRule.UNDER_REPLICATED,
        urp,
        f"{len(urp)} under-replicated partition(s) in the cluster",
    )
    return _refused("rule 1 (no offline or under-replicated partition)", broker, blockers)


def rule_2_min_isr(
    snapshot: ClusterSnapshot, partitions: Sequence[Partition], broker: int
) -> tuple[list[Blocker], list[SkippedPartition]]:
    """Rule 2, for every partition with a replica on the candidate: min.insync.replicas known,
    not (ISR < minISR), not (ISR == minISR with the candidate in it). Partitions whose RF <=
    minISR can never roll safely: skipped here and returned (sorted), for `never_safe_rule`."""
    min_isr = topic_min_isr(snapshot)
    unknown: list[Partition] = []
    below: list[Partition] = []
    at_min_in_isr: list[Partition] = []
    skipped: list[SkippedPartition] = []
    for p in partitions:
        if broker not in p.replicas:
            continue
        m = min_isr.get(p.topic)
        if m is None:
            unknown.append(p)
        elif len(p.replicas) <= m:
            skipped.append(
                SkippedPartition(
                    topic=p.topic,
                    partition=p.partition,
                    replication_factor=len(p.replicas),
                    min_insync_replicas=m,
                )
            )
        elif len(p.isr) < m:
            below.append(p)
        elif len(p.isr) == m and broker in p.isr:
            at_min_in_isr.append(p)
    blockers: list[Blocker] = []
    _block_on(
        blockers,
        BlockerRule.MIN_ISR_UNKNOWN,
        unknown,
        f"min.insync.replicas unknown for {len(unknown)} partition(s) on broker {broker}",
    )
    _block_on(blockers, BlockerRule.MIN_ISR, below, f"{len(below)} partition(s) under min ISR")
    _block_on(
        blockers,
        BlockerRule.MIN_ISR,
        at_min_in_isr,
        f"{len(at_min_in_isr)} partition(s) at min ISR with broker {broker} in the ISR "
        "(restarting it would stop acks=all writes)",
    )
    skipped.sort(key=lambda s: (s.topic, s.partition))
    return _refused("rule 2 (min ISR)", broker, blockers), skipped


def rule_3_quorum(
    snapshot: ClusterSnapshot,
    broker: int,
    remaining: Collection[int],
    *,
    dedicated: bool,
    max_voter_lag: int,
    max_voter_lag_ms: int,
) -> list[Blocker]:
    """Rule 3, the KRaft quorum: known, with a leader; without the candidate the other caught-up
    voters are still a majority; the active controller goes last (of the dedicated controllers
    when it is one, the brokers coming after them; else of the whole roll)."""
    quorum = snapshot.quorum
    if quorum is None:
        blockers = [Blocker(rule=BlockerRule.QUORUM_UNKNOWN, message="the KRaft quorum could not be read")]
        return _refused("rule 3 (KRaft quorum)", broker, blockers)
    if quorum.leader_id is None:
        blockers = [Blocker(rule=BlockerRule.QUORUM, message="the KRaft quorum has no leader")]
        return _refused("rule 3 (KRaft quorum)", broker, blockers)
    blockers = []
    voters = quorum.voters
    if any(v.id == broker for v in voters):
        majority = len(voters) // 2 + 1
        others = [
            v
            for v in voters
            if v.id != broker
            and voter_caught_up(v, snapshot, max_lag=max_voter_lag, max_lag_ms=max_voter_lag_ms)
        ]
        if len(others) < majority:
            message = (
                f"without voter {broker}, {len(others)} caught-up voter(s) of {len(voters)} "
                f"would remain; a majority needs {majority}"
            )
            blockers.append(Blocker(rule=BlockerRule.QUORUM, message=message))
    controllers = controller_only_nodes(snapshot)
    before = [b for b in remaining if b != broker and (not dedicated or b in controllers)]
    if broker == quorum.leader_id and before:
        blockers.append(
            Blocker(
                rule=BlockerRule.CONTROLLER_LAST,
                message=f"{'controller' if dedicated else 'broker'} {broker} is the active controller: "
                f"it goes last{' of the controllers' if dedicated else ''} "
                f"(still to restart first: {', '.join(map(str, sorted(before)))})",
            )
        )
    return _refused("rule 3 (KRaft quorum)", broker, blockers)


def never_safe_rule(skipped: Sequence[SkippedPartition], broker: int, *, refuse: bool) -> list[Blocker]:
    """neverSafePartitions: Refuse: the candidate's partitions with RF <= min.insync.replicas
    (`skipped` by rule 2) block it instead of being skipped."""
    if not (refuse and skipped):
        return []
    blocker = Blocker(
        rule=BlockerRule.NEVER_SAFE,
        message=f"{len(skipped)} partition(s) on broker {broker} have RF <= min.insync.replicas and "
        "would be unavailable to acks=all producers while it restarts (neverSafePartitions: Refuse)",
        partitions=[f"{s.topic}-{s.partition}" for s in skipped[:MAX_LISTED]],
    )
    return _refused("the never-safe rule", broker, [blocker])


def never_safe_partitions(snapshot: ClusterSnapshot, brokers: Collection[int]) -> list[SkippedPartition]:
    """Partitions with a replica on any of `brokers` whose RF <= min.insync.replicas: they can
    never roll safely (while their broker restarts, acks=all producers to them fail; RF 1:
    offline). Sorted by topic and partition. Unknown min.insync.replicas counts as not known
    to be never-safe (rule 2 blocks such partitions anyway)."""
    min_isr = topic_min_isr(snapshot)
    wanted = set(brokers)
    out = [
        SkippedPartition(
            topic=p.topic,
            partition=p.partition,
            replication_factor=len(p.replicas),
            min_insync_replicas=m,
        )
        for p in snapshot.partitions
        if (m := min_isr.get(p.topic)) is not None and len(p.replicas) <= m and wanted & set(p.replicas)
    ]
    return sorted(out, key=lambda s: (s.topic, s.partition))


class NeverSafeVerdict(_Model):
    """The never-safe rule of a whole roll, one for the operator and the CLI: partitions with
    RF <= min.insync.replicas on the brokers to restart can never roll safely; refused unless
    the user chose to proceed (`spec.remediation.rollingRestart.neverSafePartitions`, the CLI's
    `--never-safe`)."""

    refused: bool
    partitions: list[str] = Field(default_factory=list, description="topic-partition, sorted.")

    def listed(self) -> str:
        more = len(self.partitions) - MAX_LISTED
        return ", ".join(self.partitions[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")

    def refusal(self, proceed: str) -> str:
        """Why the roll is refused, and how to roll anyway (`proceed`: the setting that does it)."""
        return (
            f"{len(self.partitions)} partition(s) have a replication factor <= min.insync.replicas and would be "
            f"unavailable to acks=all producers while their broker restarts: {self.listed()}. Raise their "
            f"replication factor (or lower min.insync.replicas), or {proceed} to roll anyway"
        )

    def proceeding(self, setting: str) -> str:
        """What rolling anyway costs (`setting`: the choice that allowed it)."""
        return (
            f"{len(self.partitions)} partition(s) with RF <= min.insync.replicas can never roll safely and will be "
            f"unavailable to acks=all producers while their broker restarts ({setting}): {self.listed()}"
        )


def never_safe_verdict(
    snapshot: ClusterSnapshot, brokers: Collection[int], *, refuse: bool
) -> NeverSafeVerdict:
    """The never-safe rule for a roll of `brokers`: refused when `refuse` and any partition on
    them has RF <= min.insync.replicas (`never_safe_partitions`)."""
    names = [f"{p.topic}-{p.partition}" for p in never_safe_partitions(snapshot, brokers)]
    return NeverSafeVerdict(refused=refuse and bool(names), partitions=names)


RollRole = Literal["controller", "active controller", "broker", "voter", "active voter"]
"""Where a node stands in a roll, in restart order: a dedicated (controller-only) follower
voter; the dedicated active controller; a broker that is not a voter; a combined
(broker and controller) follower voter; the combined active controller."""

_RANK: dict[RollRole, int] = {
    "controller": 0,
    "active controller": 1,
    "broker": 2,
    "voter": 3,
    "active voter": 4,
}

_WHY: dict[RollRole, str] = {
    "controller": "dedicated controller, a follower voter: controllers first, by id; "
    "the quorum gate applies (no partitions, so no URP/ISR rule)",
    "active controller": "dedicated controller, the active one (quorum leader): last of the controllers, "
    "so leadership moves once; the quorum gate applies",
    "broker": "broker, not a voter: after the controllers, by id; URP/ISR rules apply",
    "voter": "broker and KRaft voter (combined): after the non-voters, by id; URP/ISR rules and the "
    "quorum gate apply",
    "active voter": "broker and the active controller (combined): last of all, so leadership moves once; "
    "URP/ISR rules and the quorum gate apply",
}


class RollSlot(_Model):
    """One node of a roll's order, and why it stands there."""

    node: int
    role: RollRole
    why: str


def controller_only_nodes(snapshot: ClusterSnapshot) -> set[int]:
    """The dedicated KRaft controllers: voters that are not registered brokers (a combined node
    is registered as a broker even while fenced). Empty when the quorum is unknown."""
    if snapshot.quorum is None:
        return set()
    brokers = {b.id for b in snapshot.brokers}
    return {v.id for v in snapshot.quorum.voters} - brokers


def roll_role(snapshot: ClusterSnapshot, node: int) -> RollRole:
    """The node's role in a roll (see `RollRole`), as the cluster is in `snapshot`."""
    quorum = snapshot.quorum
    voters = {v.id for v in quorum.voters} if quorum else set()
    leader = quorum.leader_id if quorum else None
    if node in controller_only_nodes(snapshot):
        return "active controller" if node == leader else "controller"
    if node == leader:
        return "active voter"
    return "voter" if node in voters else "broker"


def order_brokers(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> list[int]:
    """Restart order: dedicated controllers first (followers by id, the active controller last
    of them), then the brokers: non-voters, combined voters, the combined active controller
    last; by id within each group. Recomputed before every node (the controller can move)."""

    def rank(b: int) -> tuple[int, int]:
        return (_RANK[roll_role(snapshot, b)], b)

    return sorted(set(brokers), key=rank)


def roll_plan(snapshot: ClusterSnapshot, nodes: Iterable[int]) -> list[RollSlot]:
    """The roll's order with each node's role and why it stands there (the CLI's dry run, the
    operator's plan)."""
    out = []
    for node in order_brokers(snapshot, nodes):
        role = roll_role(snapshot, node)
        out.append(RollSlot(node=node, role=role, why=_WHY[role]))
    return out


def describe_order(snapshot: ClusterSnapshot, nodes: Iterable[int]) -> str:
    """One line: the order with each node's role, e.g. `101 (controller), 100 (active controller), 0 (broker)`."""
    return ", ".join(f"{s.node} ({s.role})" for s in roll_plan(snapshot, nodes))


def voter_rejoined(quorum: Quorum | None, node: int, *, since_ms: int, max_lag: int) -> bool:
    """A restarted controller is back: the quorum has a leader, `node` is a voter whose lag is
    known and <= `max_lag`, and it was caught up at or after `since_ms` (epoch ms: when its new
    pod was seen Ready). The last condition matters: right after a restart the leader still
    reports the old process's last lag, which is small."""
    if quorum is None or quorum.leader_id is None:
        return False
    if node == quorum.leader_id:
        return True
    voter = next((v for v in quorum.voters if v.id == node), None)
    if voter is None or voter.lag is None or voter.lag > max_lag:
        return False
    return voter.last_caught_up_ms is not None and voter.last_caught_up_ms >= since_ms
