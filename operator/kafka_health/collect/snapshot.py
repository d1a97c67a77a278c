"""`collect_snapshot`: one `ClusterSnapshot` from the admin calls, never a crash, never a silent gap.

Metadata comes first: without it nothing else is meaningful, so an unreachable cluster yields
`missing=[metadata]` within the metadata timeout. The other parts (registrations, quorum,
configs, offsets, groups, log dirs) are read in parallel, each bounded; whatever fails is named
in `missing` (`part` like `quorum`, `configs:<topic>`, `offsets:<topic>`, `group:<id>`,
`log_dirs:<broker>`) and the fields it would have filled stay empty.

What the principal may not see is named too (`collect.visibility`): the partitions the brokers'
log dirs hold that its metadata leaves out are `ClusterSnapshot.hidden` and a `visibility` part
(or, when the log dirs cannot be read, a `visibility` part saying the totals cannot be checked),
and a group whose committed offsets on those topics Kafka leaves out is `group_offsets:<id>`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from kafka_health.collect import parse, replica_lag, security_errors, visibility
from kafka_health.collect.kafka_admin import (
    AdminCallError,
    BrokerRegistration,
    GroupDescription,
    KafkaAdmin,
    TopicPartitionKey,
)
from kafka_health.collect.results import ZOOKEEPER_MODE, ClusterMetadata, Partial
from kafka_health.collect.streams_groups import as_group
from kafka_health.models.snapshot import (
    Broker,
    BrokerThrottle,
    ClusterSnapshot,
    ConsumerGroup,
    EligibleLeaders,
    GroupKind,
    GroupOffset,
    ListenerCertificate,
    LogDir,
    Missing,
    OpenTransaction,
    Partition,
    PartitionOffsets,
    Quorum,
    Reassignment,
    TopicConfig,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
Part = tuple[T, list[Missing]]


def collect_snapshot(
    admin: KafkaAdmin,
    cluster_name: str,
    clock: Callable[[], datetime],
    *,
    safety_only: bool = False,
    transactions_older_than: timedelta | None = None,
    exact_lag: bool = False,
) -> ClusterSnapshot:
    """Read the whole cluster state once; `clock()` (timezone-aware) stamps `taken_at`.

    `transactions_older_than`: also read the transactions open longer than this (the policy's
    hangingTransactions check; None: not read, not reported missing).

    `exact_lag`: also fetch the record at each committed offset behind the log end (the policy's
    consumerLag.timeLag Exact; `collect.record_times`), for lag in seconds from its timestamp.

    `safety_only`: only what the restart safety rules and the roll's planning read (metadata,
    registrations, quorum, topic configs), for the live checks a roll makes before each broker
    and while it waits; offsets, groups and log dirs are left out (not reported missing), so
    such a snapshot is never diagnosed nor used to plan another action."""
    snap = ClusterSnapshot(cluster=cluster_name, taken_at=clock())
    try:
        md = admin.metadata()
    except AdminCallError as exc:
        snap.missing.append(Missing(part="metadata", reason=f"{exc.reason}; nothing else was read"))
        return snap
    snap.cluster_id = md.cluster_id
    snap.partitions = md.partitions
    snap.missing.extend(Missing(part=f"partitions:{t}", reason=r) for t, r in sorted(md.topic_errors.items()))
    topics = sorted({p.topic for p in md.partitions})
    alive = [b.id for b in md.brokers]

    parts = _read_parts(admin, md, safety_only, None if safety_only else transactions_older_than)
    dirs = parts.dirs

    snap.quorum = parts.quorum[0]
    snap.brokers = merge_brokers(md.brokers, parts.registrations[0], md.partitions)
    snap.topic_configs, snap.offsets, snap.groups = parts.configs[0], parts.offsets[0], parts.groups[0]
    snap.eligible_leaders, snap.reassignments = parts.elr[0], parts.reassignments[0]
    snap.listener_certificates = parts.certificates[0]
    snap.open_transactions = parts.transactions[0]
    snap.broker_throttles = parts.throttles[0]
    for part in (getattr(parts, f.name) for f in fields(parts)):
        snap.missing.extend(m for m in part[1] if part is not parts.throttles or throttle_in_play(snap))
    if exact_lag and not safety_only:
        _record_times(admin, snap)
    if not safety_only:
        raw_dirs = dirs[0]
        if raw_dirs is not None:
            snap.log_dirs = [d for b in sorted(raw_dirs.values) for d in raw_dirs.values[b]]
            snap.missing.extend(
                Missing(part=f"log_dirs:{b}", reason=r) for b, r in sorted(raw_dirs.errors.items())
            )
        else:  # the call failed as a whole (named once, as the `log_dirs` part), or no broker is alive
            raw_dirs = Partial(errors={b: m.reason for b in alive for m in dirs[1][:1]})
        down = {
            b.id: f"broker is {b.state}: it answers no log-dir request" for b in snap.brokers if not b.alive
        }
        snap.missing.extend(Missing(part=f"log_dirs:{b}", reason=r) for b, r in sorted(down.items()))
        raw_dirs.errors = {**down, **raw_dirs.errors}
        seen = set(topics) | set(md.topic_errors)
        _hidden(snap, visibility.recheck(visibility.from_log_dirs(raw_dirs, seen), admin))
        snap.replica_lags = replica_lag.replica_lags(snap.partitions, snap.reassignments, snap.log_dirs)
        for d in snap.log_dirs:  # compared: not kept (3 ints a partition at RF 3, in every snapshot held)
            d.sizes = {}
    # A refused ACL says which operation on which resource (and the grant), not just the code.
    for m in snap.missing:
        denied = security_errors.authorization_denied(m.part, m.reason)
        if denied is not None:
            m.reason = denied
    return snap


@dataclass(frozen=True)
class _Parts:
    """What is read after the metadata: each part's value and what of it is missing."""

    registrations: Part[list[BrokerRegistration] | None]
    quorum: Part[Quorum | None]
    configs: Part[list[TopicConfig]]
    offsets: Part[list[PartitionOffsets]]
    groups: Part[list[ConsumerGroup]]
    dirs: Part[Partial[int, list[LogDir]] | None]
    elr: Part[list[EligibleLeaders]]
    reassignments: Part[list[Reassignment]]
    certificates: Part[list[ListenerCertificate]]
    transactions: Part[list[OpenTransaction]]
    throttles: Part[list[BrokerThrottle]]


def _read_parts(
    admin: KafkaAdmin, md: ClusterMetadata, safety_only: bool, transactions: timedelta | None
) -> _Parts:
    """The parts read after the metadata, side by side (each `_guard`ed: its failure is `missing`)."""
    topics = sorted({p.topic for p in md.partitions})
    alive = [] if safety_only else [b.id for b in md.brokers]
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="collect") as pool:
        f_regs = pool.submit(_guard, "broker_registrations", None, lambda: (admin.describe_cluster(), []))
        f_quorum = pool.submit(_guard, "quorum", None, lambda: (admin.describe_quorum(), []))
        f_configs = pool.submit(_guard, "configs", [], lambda: _configs(admin, topics))
        f_offsets = pool.submit(
            _guard, "offsets", [], _nothing if safety_only else lambda: _offsets(admin, md.partitions)
        )
        f_groups = pool.submit(
            _guard, "groups", [], _nothing if safety_only else lambda: _groups(admin, topics)
        )
        f_dirs = pool.submit(_guard, "log_dirs", None, lambda: _dirs(admin, alive))
        f_elr = pool.submit(_guard, "eligible_leaders", [], lambda: _eligible(admin, md.partitions))
        f_moves = pool.submit(_guard, "reassignments", [], lambda: (admin.reassignments(), []))
        tls = admin.connection.uses_tls and not safety_only
        f_certs = pool.submit(
            _guard, "certificates", [], lambda: _certificates(admin, md) if tls else ([], [])
        )
        f_txns = pool.submit(
            _guard,
            "transactions",
            [],
            (lambda: _transactions(admin, md, transactions)) if transactions is not None else _nothing,
        )
        f_throttles = pool.submit(_guard, "broker_throttles", [], lambda: _throttles(admin, alive))
        return _Parts(
            f_regs.result(),
            f_quorum.result(),
            f_configs.result(),
            f_offsets.result(),
            f_groups.result(),
            f_dirs.result(),
            f_elr.result(),
            f_moves.result(),
            f_certs.result(),
            f_txns.result(),
            f_throttles.result(),
        )


def zookeeper_mode(snapshot: ClusterSnapshot) -> bool:
    """The brokers answered but know no KRaft quorum API: a ZooKeeper-mode cluster, which the
    operator (`KafkaZooKeeperModeUnsupported`) and the CLI (exit 3) refuse rather than diagnose
    or act on half a picture."""
    return any(m.part == "quorum" and m.reason == ZOOKEEPER_MODE for m in snapshot.missing)


def _nothing() -> Part[list[Any]]:
    """A part a safety-only read leaves out."""
    return [], []


def _guard(part: str, empty: T, read: Callable[[], Part[T]]) -> Part[T]:
    """Run one part; a failed call (or a bug) becomes a `Missing` entry instead of a crash."""
    try:
        return read()
    except AdminCallError as exc:
        return empty, [Missing(part=part, reason=exc.reason)]
    except Exception as exc:
        log.exception("collecting %s failed", part)
        return empty, [Missing(part=part, reason=f"internal error: {type(exc).__name__}")]


def merge_brokers(
    alive: Iterable[Broker], registrations: list[BrokerRegistration] | None, partitions: Iterable[Partition]
) -> list[Broker]:
    """Alive brokers (in metadata now) + registered-but-fenced ones + ids seen only as replicas."""
    regs = {r.id: r for r in registrations or []}
    out: dict[int, Broker] = {}
    for b in alive:
        reg = regs.get(b.id)
        out[b.id] = b.model_copy(update={"alive": True, "fenced": False, "rack": reg.rack if reg else b.rack})
    for r in regs.values():
        if r.id not in out:
            out[r.id] = Broker(id=r.id, host=r.host, port=r.port, rack=r.rack, alive=False, fenced=r.fenced)
    for p in partitions:
        for replica in p.replicas:
            if replica not in out:
                out[replica] = Broker(id=replica, host="", port=0, alive=False, fenced=None)
    return [out[i] for i in sorted(out)]


def _per_topic(part: str, errors: dict[TopicPartitionKey, str]) -> list[Missing]:
    """Partition errors folded into one entry per topic (100k partitions must not mean 100k entries)."""
    by_topic: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for (topic, partition), reason in errors.items():
        by_topic[topic][reason].append(partition)
    missing = []
    for topic in sorted(by_topic):
        reasons = "; ".join(
            f"partitions {','.join(map(str, sorted(ps)))}: {reason}"
            for reason, ps in sorted(by_topic[topic].items())
        )
        unread = sorted(p for ps in by_topic[topic].values() for p in ps)
        missing.append(Missing(part=f"{part}:{topic}", reason=reasons, partitions=unread))
    return missing


def _configs(admin: KafkaAdmin, topics: list[str]) -> Part[list[TopicConfig]]:
    raw = admin.topic_configs(topics)
    configs = [parse.topic_config(t, v) for t, v in sorted(raw.values.items())]
    return configs, [Missing(part=f"configs:{t}", reason=r) for t, r in sorted(raw.errors.items())]


def _eligible(admin: KafkaAdmin, partitions: list[Partition]) -> Part[list[EligibleLeaders]]:
    """The ELR of the topics with a partition out of sync or offline: only such a partition can
    have one (a replica enters the ELR when it leaves an ISR below min.insync.replicas)."""
    topics = {p.topic for p in partitions if p.leader is None or len(p.isr) < len(p.replicas)}
    raw = admin.eligible_leaders(topics)
    found = [e for t in sorted(raw.values) for e in raw.values[t] if e.elr or e.last_known_elr]
    return found, [Missing(part=f"eligible_leaders:{t}", reason=r) for t, r in sorted(raw.errors.items())]


def _throttles(admin: KafkaAdmin, brokers: list[int]) -> Part[list[BrokerThrottle]]:
    """The alive brokers' replication throttle rates (those with one set)."""
    raw = admin.broker_throttles(brokers) if brokers else Partial[int, BrokerThrottle]()
    found = [
        t for b, t in sorted(raw.values.items()) if t.leader_rate is not None or t.follower_rate is not None
    ]
    return found, [Missing(part=f"broker_throttles:{b}", reason=r) for b, r in sorted(raw.errors.items())]


def throttle_in_play(snap: ClusterSnapshot) -> bool:
    """A reassignment is in flight or a topic names throttled replicas: the brokers' rates then
    decide how fast replicas copy, so not reading them is a gap. Otherwise a rate throttles
    nothing, and a principal without DESCRIBE_CONFIGS on CLUSTER is not told of every cycle."""
    return bool(snap.reassignments) or any(
        c.leader_replication_throttled_replicas or c.follower_replication_throttled_replicas
        for c in snap.topic_configs
    )


def _certificates(admin: KafkaAdmin, md: ClusterMetadata) -> Part[list[ListenerCertificate]]:
    """The chain each alive broker serves at the address the metadata advertises to this client."""
    raw = admin.listener_certificates((b.id, b.host, b.port) for b in md.brokers)
    found = [raw.values[b] for b in sorted(raw.values)]
    return found, [Missing(part=f"certificates:{b}", reason=r) for b, r in sorted(raw.errors.items())]


def _transactions(
    admin: KafkaAdmin, md: ClusterMetadata, older_than: timedelta
) -> Part[list[OpenTransaction]]:
    """The transactions the led partitions hold open for longer than `older_than`."""
    led = [(p.topic, p.partition, p.leader) for p in md.partitions if p.leader is not None]
    raw = admin.open_transactions(led, older_than)
    found = [t for topic in sorted(raw.values) for t in raw.values[topic]]
    return found, [Missing(part=f"transactions:{t}", reason=r) for t, r in sorted(raw.errors.items())]


def _offsets(admin: KafkaAdmin, partitions: list[Partition]) -> Part[list[PartitionOffsets]]:
    led = [(p.topic, p.partition) for p in partitions if p.leader is not None]
    raw = admin.list_offsets(led)
    errors = dict(raw.errors)
    errors.update({(p.topic, p.partition): "offline (no leader)" for p in partitions if p.leader is None})
    offsets = [raw.values[k] for k in sorted(raw.values)]
    return offsets, _per_topic("offsets", errors)


def _groups(admin: KafkaAdmin, topics: list[str]) -> Part[list[ConsumerGroup]]:
    listings, list_errors = admin.list_groups()
    ids = [g.group_id for g in listings]
    kinds = {g.group_id: parse.group_kind(g.type) for g in listings}
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="collect-groups") as pool:
        f_desc = pool.submit(admin.describe_groups, ids)
        f_offsets = pool.submit(admin.group_offsets, ids)
        f_share = pool.submit(_share_groups, admin)
        f_streams = pool.submit(_streams_groups, admin, topics)
        described, committed = f_desc.result(), f_offsets.result()
        share, share_missing = f_share.result()
        streams, streams_missing = f_streams.result()
    groups: list[ConsumerGroup] = []
    missing = [Missing(part="groups", reason=f"list incomplete: {e}") for e in list_errors]
    for gid in ids:
        reasons = []
        if gid in described.errors:
            reasons.append(f"describe: {described.errors[gid]}")
        if gid in committed.errors:
            reasons.append(f"offsets: {committed.errors[gid]}")
        if reasons:
            missing.append(Missing(part=f"group:{gid}", reason="; ".join(reasons)))
        desc = described.values.get(gid)
        if desc is None or desc.state == "Dead":  # unknown, or deleted since it was listed
            continue
        groups.append(group(desc, committed.values.get(gid, []), kinds[gid]))
    # Read by their own APIs, share and streams groups replace any entry the consumer-group
    # calls may have made of them (confluent-kafka 2.16 lists neither today).
    special = {g.group_id for g in share + streams}
    groups = [g for g in groups if g.group_id not in special] + share + streams
    return sorted(groups, key=lambda g: g.group_id), missing + share_missing + streams_missing


def _record_times(admin: KafkaAdmin, snap: ClusterSnapshot) -> None:
    """Each committed offset behind the log end gets the timestamp of its record (the most
    lagging first, as many as `record_times` reads a cycle); what could not be read is a
    `record_timestamps:<topic>` part (its lag in seconds is then interpolated)."""
    ends = {(o.topic, o.partition): o.log_end_offset for o in snap.offsets}
    behind = [
        (end - o.committed_offset, o)
        for g in snap.groups
        for o in g.offsets
        if o.committed_offset is not None and (end := ends.get((o.topic, o.partition))) is not None
        if o.committed_offset < end
    ]
    behind.sort(key=lambda x: (-x[0], x[1].topic, x[1].partition))
    try:
        read = admin.record_timestamps((o.topic, o.partition, o.committed_offset or 0) for _, o in behind)
    except AdminCallError as exc:
        snap.missing.append(Missing(part="record_timestamps", reason=exc.reason))
        return
    for _, o in behind:
        ms = read.values.get((o.topic, o.partition, o.committed_offset or 0))
        o.committed_timestamp = None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)
    failed: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for (topic, partition, _), reason in read.errors.items():
        if not reason.startswith("no record at the offset"):  # the log end moved: nothing to fetch
            failed[topic].append((partition, reason))
    for topic, rows in sorted(failed.items()):
        snap.missing.append(
            Missing(
                part=f"record_timestamps:{topic}", reason=rows[0][1], partitions=sorted({p for p, _ in rows})
            )
        )


def _streams_groups(admin: KafkaAdmin, topics: list[str]) -> Part[list[ConsumerGroup]]:
    """The streams groups (`collect.streams_groups`) with their committed offsets (OffsetFetch of
    the group id, as for any group), a `group:<id>` part per group that could not be (wholly)
    read, or a `streams_groups` part when they could not be listed."""
    try:
        infos = admin.streams_groups()
    except AdminCallError as exc:
        return [], [Missing(part="streams_groups", reason=exc.reason)]
    missing = [Missing(part=f"group:{i.group_id}", reason=f"describe: {i.error}") for i in infos if i.error]
    described = [i for i in infos if not i.error and i.state != "Dead"]
    committed = admin.group_offsets([i.group_id for i in described])
    missing += [
        Missing(part=f"group:{g}", reason=f"offsets: {r}") for g, r in sorted(committed.errors.items())
    ]
    groups = [as_group(i, committed.values.get(i.group_id, []), topics) for i in described]
    return groups, missing


def _share_groups(admin: KafkaAdmin) -> Part[list[ConsumerGroup]]:
    """The share groups (`collect.share_groups`): those described, and a `group:<id>` part per
    group that could not be (wholly) read, or a `share_groups` part when they could not be listed."""
    try:
        read = admin.share_groups()
    except AdminCallError as exc:
        return [], [Missing(part="share_groups", reason=exc.reason)]
    missing = [Missing(part=f"group:{gid}", reason=r) for gid, r in sorted(read.errors.items())]
    return [read.values[g] for g in sorted(read.values)], missing


def group(desc: GroupDescription, committed: list[GroupOffset], kind: GroupKind = "unknown") -> ConsumerGroup:
    """A group with its committed offsets, plus assigned partitions it has not committed yet (None)."""
    offsets = {(o.topic, o.partition): o for o in committed}
    for topic, partition in desc.assigned:
        offsets.setdefault((topic, partition), GroupOffset(topic=topic, partition=partition))
    return ConsumerGroup(
        group_id=desc.group_id,
        state=desc.state,
        kind=kind,
        members=len(desc.member_ids),
        member_ids=desc.member_ids,
        member_details=desc.members,
        offsets=[offsets[k] for k in sorted(offsets)],
    )


def _dirs(admin: KafkaAdmin, brokers: list[int]) -> Part[Partial[int, list[LogDir]] | None]:
    """The log dirs of `brokers` (none asked: a safety-only read)."""
    return (admin.describe_log_dirs(brokers) if brokers else None), []


def _hidden(snap: ClusterSnapshot, seen: visibility.Visibility) -> None:
    """Record what the principal cannot see: the hidden partitions and a `visibility` part (or
    the part saying the totals cannot be checked), and per consumer group the committed offsets
    Kafka leaves out of OffsetFetch for topics the principal may not DESCRIBE (so no lag there
    is read as 0 or vanishes unnoticed): definitely when its members are assigned a hidden
    topic; possibly when not one of its offsets could be read while topics are hidden."""
    snap.hidden = {t: list(ps) for t, ps in seen.hidden.items()}
    if seen.hidden or seen.unchecked is not None:
        snap.missing.append(Missing(part="visibility", reason=seen.message()))
    if not seen.hidden:
        return
    for g in snap.groups:
        assigned = sorted({o.topic for o in g.offsets if o.topic in seen.hidden})
        if assigned:
            reason = (
                f"authorization denied: the principal lacks DESCRIBE on TOPIC {', '.join(assigned)}, which "
                f"members of group {g.group_id} are assigned: Kafka leaves the group's committed offsets "
                "there out of its OffsetFetch answer, so their lag is unknown, not 0"
            )
        elif not any(o.committed_offset is not None for o in g.offsets):
            n = len(seen.hidden)
            reason = (
                f"authorization denied: no committed offset of group {g.group_id} could be read while "
                f"{n} topic{'' if n == 1 else 's'} {'is' if n == 1 else 'are'} hidden from the principal "
                "(it lacks DESCRIBE on TOPIC): Kafka leaves those topics out of its OffsetFetch answer, so "
                "the group's offsets there, if any, are unknown"
            )
        else:
            continue
        snap.missing.append(
            Missing(part=f"group_offsets:{g.group_id}", reason=f"{reason} ({visibility.GRANT_TOPIC})")
        )
