"""What a streams group (KIP-1071, kind `streams`) says of its application, beside the lag and
reconciliation checks every group gets (its committed offsets are its source topics'):

1. `streams_group_not_ready` (critical): Kafka holds the group NotReady: its topology cannot run
   (a source topic is missing, or topics it must co-partition are not), so no member has a task
   and the application processes nothing while every broker is healthy. The finding names the
   source topics the cluster lacks (`StreamsTopology.missing_source_topics`) -- or, when none is
   missing, says the topology's topics do not fit together (Kafka's other reason), and leaves a
   topic hidden from the principal out of the missing (it may exist).
2. `streams_members_idle` (warning): in a group that is not NotReady, members whose active tasks
   are none, neither now nor in their target: more stream threads than tasks, or a topology
   that gives them nothing; they hold resources and take over only when another fails.

Pure: the snapshot's groups in, findings out."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_health.models.findings import Finding, Severity, Subject, SubjectKind
from kafka_health.models.snapshot import ConsumerGroup

NOT_READY = "NotReady"
CHECKS = ("streams_group_not_ready", "streams_members_idle")


def streams_findings(groups: Iterable[ConsumerGroup], hidden: Iterable[str] = ()) -> list[Finding]:
    """The findings of the streams groups among `groups` (`hidden`: topics the principal cannot see)."""
    out: list[Finding] = []
    secret = set(hidden)
    for g in groups:
        if g.kind != "streams" or g.streams is None:
            continue
        if g.state == NOT_READY:
            out.append(_not_ready(g, secret))
        else:
            idle = [m.member_id for m in g.member_details if not m.assignment and not m.target]
            if idle:
                out.append(_idle(g, idle))
    return out


def _not_ready(g: ConsumerGroup, hidden: set[str]) -> Finding:
    assert g.streams is not None
    missing = [t for t in g.streams.missing_source_topics if t not in hidden]
    unsure = sorted(set(g.streams.missing_source_topics) & hidden)
    if missing:
        why = f"its source topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} {'are' if len(missing) > 1 else 'is'} missing"
        fix = (
            f"create {', '.join(missing)} (with the partitions the application expects), or deploy the "
            "application's topology that reads the topics that exist"
        )
    else:
        why = "its topics do not fit its topology (source topics it must co-partition differ in partitions)"
        fix = "give the co-partitioned source topics the same partition count, or fix the topology"
    hidden_note = (
        f" ({', '.join(unsure)} hidden from the principal: not counted as missing)" if unsure else ""
    )
    return Finding(
        check="streams_group_not_ready",
        severity=Severity.CRITICAL,
        subject=Subject(kind=SubjectKind.GROUP, group=g.group_id),
        message=(
            f"Streams group {g.group_id} is NOT_READY: {why}{hidden_note}; its {g.members} "
            f"member{' has' if g.members == 1 else 's have'} no task, so the application processes nothing."
        ),
        evidence={
            "state": g.state,
            "kind": g.kind,
            "members": g.members,
            "missing_source_topics": ",".join(missing),
            "topology_epoch": g.streams.topology_epoch if g.streams.topology_epoch is not None else -1,
            "source_topics": ",".join(sorted({t for ts in g.streams.source_topics.values() for t in ts})),
        },
        remediation=fix,
    )


def _idle(g: ConsumerGroup, idle: list[str]) -> Finding:
    return Finding(
        check="streams_members_idle",
        severity=Severity.WARNING,
        subject=Subject(kind=SubjectKind.GROUP, group=g.group_id),
        message=(
            f"Streams group {g.group_id}: {len(idle)} of {g.members} members have no active task, "
            f"now or in their target ({', '.join(idle)})."
        ),
        evidence={"state": g.state, "kind": g.kind, "members": g.members, "idle_member_ids": ",".join(idle)},
        remediation="run fewer stream threads (num.stream.threads, instances) than the topology has "
        "tasks, or add partitions to its source topics",
    )
