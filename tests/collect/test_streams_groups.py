"""`collect.streams_groups` against a real Kafka Streams app (`testbed.streams_app`, the streams
rebalance protocol of KIP-1071), checked against Kafka's own `kafka-streams-groups` tool: a running
app's group (Stable: members, processes, clients, tasks, epochs), the same group once the app
stopped (Empty, no member), and a group whose source topic is missing (NotReady, no task, the
missing topic the one Kafka names to the app's member)."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_health._kits.waiting import wait_for
from kafka_health.collect.streams_groups import (
    StreamsGroupInfo,
    Tasks,
    describe_streams_groups,
    list_streams_groups,
    missing_source_topics,
)
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.streams_app import output_path, start_streams_app

pytestmark = pytest.mark.kafka

TIMEOUT = 10.0
PARTITIONS = 3


@pytest.fixture
def kp(bootstrap: str) -> Iterator[Any]:
    from kafka import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=bootstrap)
    yield client
    client.close()


@contextlib.contextmanager
def streams_app(testbed: Testbed, kp: Any, app_id: str, source: str, sink: str) -> Iterator[Any]:
    """The app running for the block; stopped (SIGTERM) and its group deleted after it."""
    proc = start_streams_app(testbed, app_id, source, sink)
    try:
        yield proc
    finally:
        stop(proc)
        with contextlib.suppress(Exception):
            kp.delete_groups([app_id])


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def create_topics(bootstrap: str, *names: str) -> None:
    client = AdminClient({"bootstrap.servers": bootstrap})
    for future in client.create_topics([NewTopic(n, PARTITIONS) for n in names]).values():
        future.result(timeout=30)


def described(kp: Any, group_id: str) -> StreamsGroupInfo:
    (group,) = describe_streams_groups(kp, [group_id], TIMEOUT)
    return group


def in_state(kp: Any, group_id: str, state: str) -> StreamsGroupInfo | None:
    group = described(kp, group_id)
    return group if group.state == state else None


# ----------------------------------------------------------------- the tool's output, parsed


def tool(testbed: Testbed, *args: str) -> list[list[str]]:
    """The rows of a `kafka-streams-groups` table, as whitespace-separated fields (the header and
    Kafka's "Error: ... has no active members." notes left out)."""
    proc = testbed.tool("kafka-streams-groups", list(args))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    return [fields for fields in lines if fields[0] not in ("GROUP", "Error:")]


def tool_state(testbed: Testbed, group_id: str) -> dict[str, Any]:
    """`--describe --state --verbose`: GROUP COORDINATOR (ID) ASSIGNOR STATE GROUP-EPOCH
    TARGET-ASSIGNMENT-EPOCH #MEMBERS (the coordinator column is two fields)."""
    ((group, _coordinator, _node, assignor, state, epoch, target, members),) = tool(
        testbed, "--describe", "--state", "--verbose", "--group", group_id
    )
    assert group == group_id
    return {
        "state": state,
        "assignor": assignor,
        "group_epoch": int(epoch),
        "assignment_epoch": int(target),
        "members": int(members),
    }


_KIND = re.compile(r"([A-Z-]+):\s+((?:[^\s:]+:\[[^\]]*\];\s*)*)")
_TASKS = re.compile(r"([^\s:]+):\[([^\]]*)\];")
_KINDS = {"ACTIVE": "active", "STANDBY": "standby", "WARMUP": "warmup"}


def parse_tasks(text: str) -> dict[str, Tasks]:
    """ "ACTIVE: 0:[0,1,2]; 1:[0]; TARGET-ACTIVE: 0:[0,1,2]; ..." → {"current": Tasks, "target": Tasks}."""
    kinds: dict[str, dict[str, dict[str, list[int]]]] = {"current": {}, "target": {}}
    for label, body in _KIND.findall(text):
        which = "target" if label.startswith("TARGET-") else "current"
        tasks = {sub: sorted(int(p) for p in parts.split(",") if p) for sub, parts in _TASKS.findall(body)}
        kinds[which][_KINDS[label.removeprefix("TARGET-")]] = tasks
    return {which: Tasks(**found) for which, found in kinds.items()}


def tool_members(testbed: Testbed, group_id: str) -> dict[str, dict[str, Any]]:
    """`--describe --members --verbose` by member id: GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH
    MEMBER MEMBER-PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS..."""
    members = {}
    for group, target, topology, member, protocol, epoch, process, client, *tasks in tool(
        testbed, "--describe", "--members", "--verbose", "--group", group_id
    ):
        assert group == group_id
        members[member] = {
            "assignment_epoch": int(target),
            "topology_epoch": int(topology),
            "is_classic": protocol == "classic",
            "member_epoch": int(epoch),
            "process_id": process,
            "client_id": client,
            **parse_tasks(" ".join(tasks)),
        }
    return members


def ours(group: StreamsGroupInfo) -> dict[str, dict[str, Any]]:
    """The same fields from `describe_streams_groups`."""
    return {
        m.member_id: {
            "assignment_epoch": group.assignment_epoch,
            "topology_epoch": m.topology_epoch,
            "is_classic": m.is_classic,
            "member_epoch": m.member_epoch,
            "process_id": m.process_id,
            "client_id": m.client_id,
            "current": m.assignment,
            "target": m.target_assignment,
        }
        for m in group.members
    }


def agree(testbed: Testbed, kp: Any, group_id: str) -> tuple[StreamsGroupInfo, dict[str, Any]]:
    """Our description and the tool's state, read while the group did not change (same group
    epoch before and after the tool ran), with the members compared."""

    def settled() -> tuple[StreamsGroupInfo, dict[str, Any]] | None:
        before = described(kp, group_id)
        state, members = tool_state(testbed, group_id), tool_members(testbed, group_id)
        if described(kp, group_id).group_epoch != before.group_epoch:
            return None  # it changed while the tool read it: read both again
        assert members == ours(before)
        return before, state

    return wait_for(settled, timeout=40, interval=0.5, what=f"a settled description of {group_id}")


# ----------------------------------------------------------------- the tests


def test_a_running_app_then_stopped_is_described_as_the_tool_does(
    testbed: Testbed, bootstrap: str, kp: Any, unique_name: str
) -> None:
    app_id, source, sink = unique_name, f"{unique_name}-in", f"{unique_name}-out"
    create_topics(bootstrap, source, sink)
    with streams_app(testbed, kp, app_id, source, sink) as proc:
        wait_for(lambda: in_state(kp, app_id, "Stable"), timeout=60, what=f"{app_id} Stable")
        group, state = agree(testbed, kp, app_id)
        assert state == {
            "state": "Stable",
            "assignor": group.assignor,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "members": 1,
        }
        assert list_streams_groups(kp, TIMEOUT)[app_id] == "Stable"
        assert [g[0] for g in tool(testbed, "--list")].count(app_id) == 1
        # The topology: re-keying → a repartition topic between two subtopologies, the count →
        # a changelog; every task of both assigned to the one member.
        (member,) = group.members
        subs = {s.subtopology_id: s for s in group.subtopologies or []}
        assert sorted(subs) == ["0", "1"]
        assert subs["0"].source_topics == [source]
        assert subs["0"].repartition_sink_topics == [f"{app_id}-by-value-repartition"]
        assert [t.name for t in subs["1"].repartition_source_topics] == [f"{app_id}-by-value-repartition"]
        assert [(t.name, t.partitions) for t in subs["1"].changelog_topics] == [
            (f"{app_id}-counts-changelog", PARTITIONS)
        ]
        assert member.assignment.active == {"0": [0, 1, 2], "1": [0, 1, 2]}
        assert member.process_id in member.client_id

        stop(proc)
        empty = wait_for(lambda: in_state(kp, app_id, "Empty"), timeout=30, what=f"{app_id} Empty")
        assert empty.members == []
        assert tool_members(testbed, app_id) == {}
        assert tool_state(testbed, app_id) == {
            "state": "Empty",
            "assignor": empty.assignor,
            "group_epoch": empty.group_epoch,
            "assignment_epoch": empty.assignment_epoch,
            "members": 0,
        }


def test_a_missing_source_topic_makes_the_group_not_ready(
    testbed: Testbed, bootstrap: str, kp: Any, unique_name: str
) -> None:
    app_id, source, sink = unique_name, f"{unique_name}-absent", f"{unique_name}-out"
    create_topics(bootstrap, sink)
    log = output_path(testbed.state_dir / "logs", app_id).with_suffix(".log")
    with streams_app(testbed, kp, app_id, source, sink):
        group = wait_for(lambda: in_state(kp, app_id, "NotReady"), timeout=60, what=f"{app_id} NotReady")
        assert group.not_ready
        # What Kafka tells the member (its heartbeat's status), as the app logs it.
        told = wait_for(
            lambda: re.findall(r"Source topics (\S+) are missing", log.read_text()),
            timeout=30,
            what="the app's log naming the missing topics",
        )
        topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
        assert missing_source_topics(group, topics) == sorted(set(",".join(told).split(","))) == [source]
        # The tool says NotReady too; nobody has a task. (The app replaces its stream thread every
        # two heartbeat intervals while the topic is missing, so members are compared by process.)
        state = tool_state(testbed, app_id)
        assert state["state"] == "NotReady"
        assert state["members"] == len(described(kp, app_id).members) == 1
        members = tool_members(testbed, app_id)
        assert {m["process_id"] for m in members.values()} == {m.process_id for m in group.members}
        assert all(m["current"] == m["target"] == Tasks() for m in members.values())
        assert all(m.assignment == m.target_assignment == Tasks() for m in group.members)
        assert list_streams_groups(kp, TIMEOUT)[app_id] == "NotReady"


def test_an_unknown_group_is_an_error_not_an_empty_group(kp: Any, unique_name: str) -> None:
    (group,) = describe_streams_groups(kp, [unique_name], TIMEOUT)
    assert group.error is not None and group.error.startswith("GroupIdNotFoundError")
    assert group.members == [] and group.subtopologies is None
