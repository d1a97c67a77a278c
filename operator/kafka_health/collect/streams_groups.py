"""Kafka Streams groups (KIP-1071, `group.protocol=streams`), read as `kafka-streams-groups.sh
--list` and `--describe` read them. Neither confluent-kafka nor kafka-python 3.0 knows them
(kafka-python's `list_groups` refuses the type `streams` and ships no StreamsGroupDescribe), so:

1. `list_streams_groups`: ListGroups v5 filtered to type `streams`, asked of every broker (each
   lists the groups it coordinates): every streams group the principal may DESCRIBE, with state;
2. `describe_streams_groups`: FindCoordinator (kafka-python's, cached per client), then per
   coordinator StreamsGroupDescribe (API 89; the schemas are Kafka 4.4.0's own,
   `kafka_schemas/StreamsGroupDescribe*.json`): state, epochs, the topology the group runs
   (subtopologies, their source, repartition and changelog topics), and each member's process,
   client, host and tasks (active, standby, warm-up per subtopology), as it has them and as the
   coordinator wants them (target).

A group is NOT_READY (Kafka's state `NotReady`) while its topology cannot run: a source topic is
missing, or source topics that must be co-partitioned are not. The describe answer does not say
which: it carries the topology the members configured (each subtopology's source topics, and
internal topics whose partition count is 0 while it cannot be derived from the sources), and no
member has a task. Kafka names the missing topics only to the members, in their heartbeats
("Source topics X are missing"); `missing_source_topics` names them from the cluster's topics,
as the coordinator found them. (Checked on Kafka 4.4.0: tests/collect/test_streams_groups.py.)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_health.collect.kafka_python import (
    LIST_GROUPS_TYPES_VERSION,
    forget_group_coordinator,
    group_type_served,
)
from kafka_health.models.snapshot import ConsumerGroup, GroupMember, GroupOffset, StreamsTopology

STREAMS_GROUP_DESCRIBE = 89
NOT_READY = "NotReady"  # Kafka's StreamsGroupState.NOT_READY, as the describe answer spells it
_ROUNDS = 5  # describe rounds at most: the first, and again after a coordinator moved
# Answers after which the group's coordinator is looked up again and the group asked again.
_COORDINATOR_MOVED = {
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
}


@dataclass(frozen=True)
class Tasks:
    """Tasks of one kind per subtopology id: {"0": [0, 1, 2]} is tasks 0_0, 0_1 and 0_2."""

    active: dict[str, list[int]] = field(default_factory=dict)
    standby: dict[str, list[int]] = field(default_factory=dict)
    warmup: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    member_epoch: int
    client_id: str
    host: str
    process_id: str  # one per Kafka Streams instance; its stream threads are members each
    instance_id: str | None
    rack_id: str | None
    topology_epoch: int  # the epoch of the topology this member's client runs
    is_classic: bool  # a member still on the classic protocol (an upgrade under way)
    assignment: Tasks
    target_assignment: Tasks


@dataclass(frozen=True)
class InternalTopic:
    """A repartition or changelog topic the group needs (Kafka creates it); 0 partitions or
    replication factor: whatever the cluster's default is."""

    name: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    repartition_sink_topics: list[str]
    changelog_topics: list[InternalTopic]
    repartition_source_topics: list[InternalTopic]


@dataclass(frozen=True)
class StreamsGroupInfo:
    """One streams group as its coordinator describes it; `error` set: it could not be described
    (the other fields are then empty)."""

    group_id: str
    state: str  # Kafka's spelling: Empty, NotReady, Assigning, Reconciling, Stable, Dead
    group_epoch: int
    assignment_epoch: int  # the epoch of the target assignment
    topology_epoch: int | None  # None: no topology known (a describe error)
    subtopologies: list[Subtopology] | None  # None: no topology known (a describe error)
    members: list[StreamsMember]
    assignor: str | None = None  # Kafka 4.4+ (StreamsGroupDescribe v1)
    error: str | None = None

    @property
    def not_ready(self) -> bool:
        return self.state == NOT_READY


def missing_source_topics(group: StreamsGroupInfo, topics: Iterable[str]) -> list[str]:
    """The source topics of `group`'s topology that are not among the cluster's `topics`: what
    keeps a NOT_READY group from running when a topic is missing (Kafka tells its members so)."""
    present = set(topics)
    return sorted({t for s in group.subtopologies or [] for t in s.source_topics if t not in present})


def served(kp: Any) -> bool:
    """Whether the brokers know streams groups (ListGroups v5 and StreamsGroupDescribe): a cluster
    without them (Kafka before 4.1) has no streams group to miss."""
    return group_type_served(kp, STREAMS_GROUP_DESCRIBE)


def list_streams_groups(kp: Any, timeout: float) -> dict[str, str]:
    """Every streams group the principal may see → its state, from every broker in turn (empty
    when the brokers know no streams groups). A broker's error raises, as kafka-python's
    `list_groups` does."""
    if not served(kp):
        return {}

    from kafka.protocol.admin import ListGroupsRequest

    async def ask() -> dict[str, str]:
        manager = kp._manager
        groups: dict[str, str] = {}
        for node in sorted(b.node_id for b in manager.cluster.brokers()):
            request = ListGroupsRequest(types_filter=["streams"], min_version=LIST_GROUPS_TYPES_VERSION)
            response = await manager.send(request, node_id=node, request_timeout_ms=int(timeout * 1000))
            _raise_for(response.error_code, "", f"ListGroups at broker {node}")
            groups.update({g.group_id: g.group_state for g in response.groups})
        return groups

    return _bounded(kp, ask, timeout)


def describe_streams_groups(kp: Any, group_ids: list[str], timeout: float) -> list[StreamsGroupInfo]:
    """The groups `group_ids` as their coordinators describe them, in that order, within
    `timeout` seconds overall. A group Kafka does not know is one with `error`
    GroupIdNotFoundError; a coordinator that moved or is loading is looked up and asked again (at
    most `_ROUNDS` times); a coordinator that does not answer within 80% of `timeout` is the
    `error` of its groups, the other groups are described all the same."""
    ids = list(dict.fromkeys(group_ids))
    if not ids:
        return []
    request_timeout_ms = int(timeout * 800)

    async def ask() -> dict[str, dict[str, Any]]:
        answers: dict[str, dict[str, Any]] = {}
        pending = ids
        for _ in range(_ROUNDS):
            answers.update(await _describe_round(kp, pending, request_timeout_ms))
            pending = [g for g in pending if answers[g]["error_code"] in _COORDINATOR_MOVED]
            if not pending:
                break
            for gid in pending:
                forget_group_coordinator(kp, gid)
            await kp._manager._net.sleep(0.2)
        return answers

    answers = _bounded(kp, ask, timeout)
    return [streams_group(answers[gid]) for gid in ids]


async def _describe_round(kp: Any, ids: list[str], request_timeout_ms: int) -> dict[str, dict[str, Any]]:
    """One StreamsGroupDescribe per coordinator of `ids`, as kafka-python's `to_dict()`; a
    coordinator that fails answers for its groups with the failure."""
    from kafka.errors import KafkaError

    from kafka_health.collect.kafka_schemas.messages import StreamsGroupDescribeRequest

    manager = kp._manager
    coordinators: dict[str, int] = await kp._find_coordinator_ids(ids)
    by_node: dict[int, list[str]] = defaultdict(list)
    for gid in ids:
        by_node[coordinators[gid]].append(gid)
    answers: dict[str, dict[str, Any]] = {}
    for node, gids in sorted(by_node.items(), key=lambda item: str(item[0])):
        request = StreamsGroupDescribeRequest(group_ids=gids, include_authorized_operations=False)
        try:
            response = await manager.send(request, node_id=node, request_timeout_ms=request_timeout_ms)
        except KafkaError as exc:
            answers.update({g: _failed(g, f"coordinator {node}: {type(exc).__name__}: {exc}") for g in gids})
            continue
        answers.update({g["group_id"]: g for g in response.to_dict()["groups"]})
    return answers


def _failed(group_id: str, why: str) -> dict[str, Any]:
    """The answer standing for a group whose coordinator could not be asked."""
    return {
        "group_id": group_id,
        "error_code": -1,  # UNKNOWN_SERVER_ERROR, with `failure` saying what happened
        "failure": why,
        "group_state": "",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "topology": None,
        "members": [],
    }


def _bounded(kp: Any, coro: Any, timeout: float) -> Any:
    """`coro()` run on the client's event loop, raising KafkaTimeoutError after `timeout` s."""
    manager = kp._manager
    return manager.run(manager.wait_for, manager.call_soon(coro), int(timeout * 1000))


def _raise_for(code: int, message: str | None, what: str) -> None:
    from kafka.errors import for_code

    if code:
        raise for_code(code)(f"{what}: {message or ''}".rstrip(": "))


def _error(answer: dict[str, Any]) -> str | None:
    """The group-level error of a describe answer, as Kafka names it, or None."""
    from kafka.errors import for_code

    code = answer["error_code"]
    if not code:
        return None
    if "failure" in answer:  # `_failed`: no answer from the coordinator
        return str(answer["failure"])
    name = for_code(code).__name__
    return f"{name}: {answer['error_message']}" if answer.get("error_message") else name


def streams_group(answer: dict[str, Any]) -> StreamsGroupInfo:
    """One StreamsGroupDescribe group (kafka-python's `to_dict()`) as a `StreamsGroupInfo`."""
    error = _error(answer)
    topology = answer.get("topology")
    subtopologies = None if topology is None else topology.get("subtopologies")
    return StreamsGroupInfo(
        group_id=answer["group_id"],
        state=answer["group_state"],
        group_epoch=answer["group_epoch"],
        assignment_epoch=answer["assignment_epoch"],
        topology_epoch=None if topology is None else topology["epoch"],
        subtopologies=None if subtopologies is None else [_subtopology(s) for s in subtopologies],
        members=sorted((_member(m) for m in answer["members"]), key=lambda m: m.member_id),
        assignor=answer.get("assignor_name"),
        error=error,
    )


def _subtopology(raw: dict[str, Any]) -> Subtopology:
    def topics(rows: list[dict[str, Any]]) -> list[InternalTopic]:
        return [InternalTopic(t["name"], t["partitions"], t["replication_factor"]) for t in rows]

    return Subtopology(
        subtopology_id=raw["subtopology_id"],
        source_topics=list(raw["source_topics"]),
        repartition_sink_topics=list(raw["repartition_sink_topics"]),
        changelog_topics=topics(raw["state_changelog_topics"]),
        repartition_source_topics=topics(raw["repartition_source_topics"]),
    )


def _tasks(raw: dict[str, Any] | None) -> Tasks:
    def kind(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
        return {r["subtopology_id"]: sorted(r["partitions"]) for r in rows}

    if raw is None:
        return Tasks()
    return Tasks(kind(raw["active_tasks"]), kind(raw["standby_tasks"]), kind(raw["warmup_tasks"]))


def _member(raw: dict[str, Any]) -> StreamsMember:
    return StreamsMember(
        member_id=raw["member_id"],
        member_epoch=raw["member_epoch"],
        client_id=raw["client_id"],
        host=raw["client_host"],
        process_id=raw["process_id"],
        instance_id=raw["instance_id"],
        rack_id=raw["rack_id"],
        topology_epoch=raw["topology_epoch"],
        is_classic=raw["is_classic"],
        assignment=_tasks(raw["assignment"]),
        target_assignment=_tasks(raw["target_assignment"]),
    )


def as_group(info: StreamsGroupInfo, committed: list[GroupOffset], topics: Iterable[str]) -> ConsumerGroup:
    """The `ConsumerGroup` of kind `streams` a described group makes, with its committed offsets
    (OffsetFetch of the group id, as for any group) and the cluster's `topics` (to name the
    source topics it misses). A member's assignment and target are the partitions its active
    tasks read: task `<s>_<p>` reads partition p of every topic subtopology s sources from."""
    reads = {s.subtopology_id: _reads(s) for s in info.subtopologies or []}
    members = [
        GroupMember(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            assignment=_partitions(m.assignment, reads),
            target=_partitions(m.target_assignment, reads),
        )
        for m in info.members
    ]
    offsets = {(o.topic, o.partition): o for o in committed}
    for m in members:
        for key in m.assignment:
            offsets.setdefault(key, GroupOffset(topic=key[0], partition=key[1]))
    return ConsumerGroup(
        group_id=info.group_id,
        state=info.state,
        kind="streams",
        members=len(members),
        member_ids=[m.member_id for m in members],
        member_details=members,
        offsets=[offsets[k] for k in sorted(offsets)],
        streams=StreamsTopology(
            topology_epoch=info.topology_epoch,
            source_topics=reads,
            missing_source_topics=missing_source_topics(info, topics),
        ),
    )


def _reads(s: Subtopology) -> list[str]:
    """The topics a subtopology's tasks read: its source topics and its repartition sources."""
    return sorted({*s.source_topics, *(t.name for t in s.repartition_source_topics)})


def _partitions(tasks: Tasks, reads: dict[str, list[str]]) -> list[tuple[str, int]]:
    """The partitions `tasks`' active tasks read."""
    return sorted(
        {(topic, p) for sub, parts in tasks.active.items() for p in parts for topic in reads.get(sub, [])}
    )
