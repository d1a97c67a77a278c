"""Share groups (KIP-932: Kafka's queues, production-ready in 4.2) read as `kafka-share-groups.sh
--describe` reads them. confluent-kafka 2.16 neither lists nor describes them, and kafka-python
3.0 lists them but ships no describe call, so:

1. ListGroups v5 filtered to type `share`, asked of every broker (kafka-python's `list_groups`):
   the share groups the principal may DESCRIBE;
2. FindCoordinator for them (kafka-python's, cached per client);
3. per coordinator, ShareGroupDescribe (API 77): state, epochs, members and what each is
   assigned; and DescribeShareGroupOffsets (API 90) of every topic: each partition's share-partition
   start offset (SPSO, the first record not yet acknowledged for good) and, from v1 (Kafka
   4.2, KIP-1226), Kafka's own lag there.

The two requests are the project's own (`kafka_schemas`, in kafka-python's message format).

A share group becomes a `ConsumerGroup` of kind `share` whose committed offsets are its start
offsets: the offset below which every record is delivered and acknowledged, as a consumer
group's committed offset is. So the lag checks judge a queue as they judge a group (lag from
the start offset to the log end; a start offset that does not move while members are present is
a stalled queue; records pending with no member, a stopped one), and lag in seconds is the age
of the oldest record not yet acknowledged. Kafka's own lag, which leaves out records acknowledged
past the start offset, is kept beside it (`GroupOffset.reported_lag`).

Needs DESCRIBE on the GROUP (and, for the offsets, DESCRIBE on its TOPICs), as the tool does; a
group the principal may not describe is that group's error, never an empty group.

`alter_share_group_offsets` sets a share group's start offsets (AlterShareGroupOffsets, API 91:
`kafka-share-groups --reset-offsets --execute`), for `kafka-health reset-offsets --share-group`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka_health.collect.kafka_python import forget_group_coordinator, group_type_served
from kafka_health.collect.results import Partial
from kafka_health.models.snapshot import ConsumerGroup, GroupMember, GroupOffset

SHARE_GROUP_DESCRIBE = 77
DESCRIBE_SHARE_GROUP_OFFSETS = 90
ALTER_SHARE_GROUP_OFFSETS = 91
_COORDINATOR_MOVED = frozenset({14, 15, 16})  # loading, not available, NOT_COORDINATOR: ask again
NO_START_OFFSET = -1  # the partition has no share-partition state yet: the tool prints "-"

Describe = Callable[[BaseException], str]
"""How a client error becomes a reason: the admin client's own, secret-free (`AdminApi.reason`)."""


ShareGroups = Partial[str, ConsumerGroup]
"""What `read_share_groups` found: the groups described and, per group, why it could not be
(wholly) read. A broker that fails the listing fails the whole call (kafka-python's
`list_groups` asks each broker in turn and raises the first error)."""


def served(kp: Any) -> bool:
    """Whether the brokers know share groups at all (ListGroups v5 and ShareGroupDescribe): a
    cluster without them (Kafka before 4.0) has no share group to miss."""
    return group_type_served(kp, SHARE_GROUP_DESCRIBE)


def read_share_groups(kp: Any, describe: Describe) -> ShareGroups:
    """Every share group the principal may see, described (see the module docstring)."""
    out: ShareGroups = Partial()
    if not served(kp):
        return out
    listed = kp.list_groups(types_filter=["share"])
    ids = sorted({str(g["group_id"]) for g in listed})
    if not ids:
        return out
    coordinators: dict[str, int] = kp._manager.run(kp._find_coordinator_ids, ids)
    by_node: dict[int, list[str]] = defaultdict(list)
    for gid in ids:
        by_node[coordinators[gid]].append(gid)
    for node, gids in sorted(by_node.items()):
        try:
            described = _describe(kp, node, gids)
            offsets = _offsets(kp, node, gids)
        except Exception as exc:  # the coordinator's failure is each of its groups' error
            out.errors.update(dict.fromkeys(gids, describe(exc)))
            continue
        for gid in gids:
            _one(out, gid, described.get(gid), offsets.get(gid))
    return out


def _one(out: Partial[str, ConsumerGroup], gid: str, desc: Any, offsets: Any) -> None:
    """Group `gid` from its describe and offsets answers, and why part of it could not be read:
    a group whose description failed is left out; one whose start offsets failed on some
    partitions is kept (its members are known) with those partitions named in its error."""
    errors = [f"describe: {_error(desc)}"] if desc is not None and _error(desc) else []
    if desc is None:
        errors.append("describe: the coordinator did not answer for it")
    if offsets is not None and _error(offsets):
        errors.append(f"offsets: {_error(offsets)}")
    unread = [
        f"{t['topic_name']}-{p['partition_index']} ({_error(p)})"
        for t in (offsets or {}).get("topics", [])
        for p in t["partitions"]
        if p["error_code"]
    ]
    if unread:
        errors.append(f"start offsets unread: {', '.join(unread)}")
    if errors:
        out.errors[gid] = "; ".join(errors)
    if desc is not None and not _error(desc):
        out.values[gid] = share_group(desc, offsets if offsets is not None and not _error(offsets) else None)


def share_group(desc: dict[str, Any], offsets: dict[str, Any] | None) -> ConsumerGroup:
    """The `ConsumerGroup` of kind `share` one ShareGroupDescribe group and its
    DescribeShareGroupOffsets group make (answers as kafka-python's `to_dict()`)."""
    members = sorted((_member(m) for m in desc["members"]), key=lambda m: m.member_id)
    rows = [
        GroupOffset(
            topic=t["topic_name"],
            partition=p["partition_index"],
            committed_offset=None if p["start_offset"] == NO_START_OFFSET else p["start_offset"],
            reported_lag=p["lag"] if p.get("lag", -1) >= 0 else None,
        )
        for t in (offsets or {}).get("topics", [])
        for p in t["partitions"]
        if not p["error_code"]
    ]
    seen = {(o.topic, o.partition) for o in rows}
    rows += [
        GroupOffset(topic=topic, partition=part)
        for m in members
        for topic, part in m.assignment
        if (topic, part) not in seen
    ]
    unique = {(o.topic, o.partition): o for o in rows}
    return ConsumerGroup(
        group_id=desc["group_id"],
        state=desc["group_state"],
        kind="share",
        members=len(members),
        member_ids=[m.member_id for m in members],
        member_details=members,
        offsets=[unique[k] for k in sorted(unique)],
    )


def _member(raw: dict[str, Any]) -> GroupMember:
    """A share-group member: it has no target assignment (the coordinator assigns and the member
    takes it; several members may share a partition)."""
    assigned = sorted(
        (tp["topic_name"], p) for tp in raw["assignment"]["topic_partitions"] for p in tp["partitions"]
    )
    return GroupMember(
        member_id=raw["member_id"], client_id=raw["client_id"], host=raw["client_host"], assignment=assigned
    )


def _error(answer: dict[str, Any]) -> str:
    """The group-level error of an answer, as Kafka names it, or ''."""
    from kafka.errors import for_code

    code = answer.get("error_code", 0)
    if not code:
        return ""
    error = for_code(code)
    message = answer.get("error_message") or ""
    return f"{error.__name__}: {message}" if message else error.__name__


def _describe(kp: Any, node: int, gids: list[str]) -> dict[str, Any]:
    from kafka_health.collect.kafka_schemas.messages import ShareGroupDescribeRequest

    request = ShareGroupDescribeRequest(group_ids=gids, include_authorized_operations=False)
    answer = kp._manager.run(kp._manager.send, request, node).to_dict()
    return {g["group_id"]: g for g in answer["groups"]}


def _offsets(kp: Any, node: int, gids: Iterable[str]) -> dict[str, Any]:
    from kafka_health.collect.kafka_schemas.messages import DescribeShareGroupOffsetsRequest as Request

    group = Request.DescribeShareGroupOffsetsRequestGroup
    request = Request(groups=[group(group_id=g, topics=None) for g in gids])
    answer = kp._manager.run(kp._manager.send, request, node).to_dict()
    return {g["group_id"]: g for g in answer["groups"]}


def alter_share_group_offsets(
    kp: Any, group: str, offsets: Mapping[tuple[str, int], int]
) -> Partial[tuple[str, int], int]:
    """AlterShareGroupOffsets (API 91, as `kafka-share-groups --reset-offsets --execute`) sent once
    to the group's coordinator: set each partition's start offset. Kafka takes it only while the
    group is Empty (else NON_EMPTY_GROUP, 68, for the whole request) and needs READ on the GROUP
    (GROUP_AUTHORIZATION_FAILED for the whole request) and on each TOPIC (per partition).

    Values: the offsets accepted; errors: per partition, "[Error N] Name: message" (`kafka_errors.
    code_of` reads the code); an error of the whole request is every partition's. After a
    coordinator error (loading, not available, moved) the cached coordinator is forgotten, so the
    same request sent again (the executor's retry) goes where the group lives now."""
    from kafka_health.collect.kafka_schemas.messages import AlterShareGroupOffsetsRequest as Request

    if ALTER_SHARE_GROUP_OFFSETS not in kp._manager.broker_version_data.api_versions:
        raise RuntimeError("the brokers do not serve AlterShareGroupOffsets (share groups need Kafka 4.1+)")
    topic = Request.AlterShareGroupOffsetsRequestTopic
    part = topic.AlterShareGroupOffsetsRequestPartition
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for (name, partition), offset in sorted(offsets.items()):
        by_topic[name].append(part(partition_index=partition, start_offset=int(offset)))
    request = Request(
        group_id=group, topics=[topic(topic_name=name, partitions=parts) for name, parts in by_topic.items()]
    )
    coordinator = kp._manager.run(kp._find_coordinator_ids, [group])[group]
    answer = kp._manager.run(kp._manager.send, request, coordinator).to_dict()
    return _altered(kp, group, offsets, answer)


def _altered(
    kp: Any, group: str, offsets: Mapping[tuple[str, int], int], answer: dict[str, Any]
) -> Partial[tuple[str, int], int]:
    """The `alter_share_group_offsets` result from Kafka's answer (see there)."""
    out: Partial[tuple[str, int], int] = Partial()
    if answer["error_code"]:
        if answer["error_code"] in _COORDINATOR_MOVED:
            forget_group_coordinator(kp, group)
        out.errors = dict.fromkeys(offsets, _reason(answer))
        return out
    for t in answer["responses"]:
        for p in t["partitions"]:
            key = (t["topic_name"], p["partition_index"])
            if key not in offsets:
                continue
            if p["error_code"]:
                out.errors[key] = _reason(p)
            else:
                out.values[key] = int(offsets[key])
    for key in offsets:
        if key not in out.values and key not in out.errors:
            out.errors[key] = "no result for this partition in the answer"
    return out


def _reason(answer: dict[str, Any]) -> str:
    """An answer's error as "[Error N] Name: message" (kafka-python's own form: `code_of` reads N)."""
    from kafka.errors import for_code

    error = for_code(answer["error_code"])
    return f"[Error {error.errno}] {error.__name__}: {answer.get('error_message') or error.description}"
