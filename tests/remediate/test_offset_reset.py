"""Offset reset on the real testbed (Kafka + kube-apiserver for the saved-offsets ConfigMap; the
control-plane fixtures come from tests/k8s_fixtures.py):
refused while the group has a member, applied once per id, equal to what kafka-consumer-groups
describes, rolled back exactly; every strategy with clamping; the CLI's dry run, refusal,
execution and rollback from file."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KTP
from typer.testing import CliRunner

from kafka_health._kits.waiting import WaitTimeout, wait_for
from kafka_health.cli.main import app
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import OffsetResetRequest, RequestState
from kafka_health.plan.offset_reset_plan import GateState, group_gate
from kafka_health.remediate.offset_reset import (
    LABEL_POLICY,
    LABEL_REQUEST,
    ConfigMapStore,
    ResetState,
    SavedOffsets,
    execute_offset_reset,
    plan_live,
    read_group,
    rollback_offsets,
    saved_offsets_name,
)
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.faults import create_topic

pytestmark = pytest.mark.kafka

MESSAGES = 10
STEP = timedelta(minutes=10)


def produce_timed(bootstrap: str, topic: str, partitions: int, first: datetime) -> None:
    """MESSAGES per partition; message i has timestamp first + i * STEP."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p in range(partitions):
        for i in range(MESSAGES):
            ts = int((first + i * STEP).timestamp() * 1000)
            producer.produce(topic, value=f"m{i}".encode(), partition=p, timestamp=ts)
    assert producer.flush(30) == 0


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit `offsets` for `group`, retried while the group's coordinator moves (an election
    just before moves __consumer_offsets leaders: NOT_COORDINATOR for a moment)."""

    def attempt() -> bool:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[KTP(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
            return True
        finally:
            consumer.close()

    wait_for(attempt, timeout=60, what=f"offsets of {group} committed")


def committed(admin: KafkaAdmin, group: str) -> dict[tuple[str, int], int | None]:
    """The group's committed offsets; a read that fails while its coordinator moves is retried
    (up to 60 s), a lasting error fails the test."""

    def attempt() -> Any:
        read = admin.group_offsets([group])
        return read if group not in read.errors else None

    try:
        read = wait_for(attempt, timeout=60, what=f"offsets of {group} read")
    except WaitTimeout:
        read = admin.group_offsets([group])
    assert group not in read.errors, read.errors
    return {(o.topic, o.partition): o.committed_offset for o in read.values[group]}


class ActiveConsumer:
    """A consumer polling in a thread (a member of the group) until stopped."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe([topic])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.2)
        self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


@pytest.fixture
def active(bootstrap: str) -> Iterator[list[ActiveConsumer]]:
    started: list[ActiveConsumer] = []
    yield started
    for c in started:
        c.close()


def wait_members(admin: KafkaAdmin, group: str, members: bool) -> None:
    def check() -> bool:
        g = read_group(admin, group)
        return (
            (g is not None and g.members > 0 and g.state == "Stable")
            if members
            else (g is None or g.members == 0)
        )

    wait_for(check, timeout=60, what=f"group {group} {'active' if members else 'empty'}")


def described_offsets(kafka: Testbed, group: str) -> dict[tuple[str, int], int | None]:
    """CURRENT-OFFSET per partition from `kafka-consumer-groups --describe`."""
    out = kafka.tool("kafka-consumer-groups", ["--describe", "--group", group])
    assert out.returncode == 0, out.stderr
    found: dict[tuple[str, int], int | None] = {}
    for line in out.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] == group and cols[2].isdigit():
            found[(cols[1], int(cols[2]))] = None if cols[3] == "-" else int(cols[3])
    return found


def request(**kw: Any) -> OffsetResetRequest:
    return OffsetResetRequest.model_validate(kw)


@pytest.fixture
def k8s(k8s_api: Any) -> K8s:
    return K8s(k8s_api)


def group_at_5_and_7(bootstrap: str, name: str) -> tuple[str, str]:
    """Topic `name` (2 partitions of MESSAGES each) and group `name` committed at 5 and 7."""
    create_topic(bootstrap, name, partitions=2)
    produce_timed(bootstrap, name, 2, datetime.now(UTC) - 12 * STEP)
    commit(bootstrap, name, {(name, 0): 5, (name, 1): 7})
    return name, name


def test_refused_while_active_then_once_and_rolled_back(
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    k8s: K8s,
    k8s_namespace: str,
    active: list[ActiveConsumer],
) -> None:
    topic, group = group_at_5_and_7(bootstrap, unique_name)
    req = request(id="rewind_1", group=group, topics=[topic], earliest=True)
    cm_name = saved_offsets_name("orders-policy", req.id)
    assert cm_name.startswith("khp-orders-policy-offsets-rewind-1-")  # '_' is not allowed in a name
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        active.append(ActiveConsumer(bootstrap, group, topic))
        wait_members(admin, group, members=True)
        now = datetime.now(UTC)
        plan, live = plan_live(admin, req, now)
        assert [(e.partition, e.current, e.target) for e in plan.entries] == [(0, 5, 0), (1, 7, 0)]
        gate = group_gate(live, waiting_since=None, timeout=timedelta(minutes=5), now=now)
        assert gate.state is GateState.WAIT

        def run() -> Any:
            return execute_offset_reset(
                admin, k8s, plan, namespace=k8s_namespace, policy_name="orders-policy", request_id=req.id
            )

        refused = run()
        assert refused.state is ResetState.NOT_EMPTY, refused.message
        assert "Stable" in refused.message and "nothing changed" in refused.message
        assert refused.request_state() is RequestState.WAITING
        assert (
            refused.record(plan_id="p", started_at=now, finished_at=now, generation=1, breaker_reset=None)
            is None
        )
        assert k8s.read_configmap(k8s_namespace, cm_name) is None
        assert committed(admin, group) == {(topic, 0): 5, (topic, 1): 7}

        active.pop().close()
        wait_members(admin, group, members=False)
        applied = run()
        assert applied.state is ResetState.APPLIED, applied.message
        assert [(p.partition, p.before, p.target, p.after, p.ok) for p in applied.partitions] == [
            (0, 5, 0, 0, True),
            (1, 7, 0, 0, True),
        ]
        assert applied.request_state() is RequestState.SUCCEEDED
        assert applied.saved_offsets == cm_name  # status.offsetResets[id].savedOffsets
        record = applied.record(
            plan_id="p", started_at=now, finished_at=now, generation=1, breaker_reset=None
        )
        assert record is not None and record.outcome == "Succeeded"
        assert committed(admin, group) == {(topic, 0): 0, (topic, 1): 0}
        assert described_offsets(kafka, group) == committed(admin, group)

        # The saved offsets: labels, offsets.json, and a CSV kafka-consumer-groups accepts.
        cm = k8s.core.read_namespaced_config_map(cm_name, k8s_namespace)
        assert cm.metadata.labels == {LABEL_POLICY: "orders-policy", LABEL_REQUEST: "rewind_1"}
        saved = json.loads(cm.data["offsets.json"])
        assert saved["group"] == group and saved["taken_at"]
        assert saved["partitions"] == [
            {"topic": topic, "partition": 0, "offset": 5},
            {"topic": topic, "partition": 1, "offset": 7},
        ]
        assert cm.data["rollback.csv"] == f"{topic},0,5\n{topic},1,7\n"

        # Once per id: a second call (e.g. after an operator restart) does nothing.
        commit(bootstrap, group, {(topic, 0): 3, (topic, 1): 3})
        again = run()
        assert again.state is ResetState.ALREADY_APPLIED, again.message
        assert again.request_state() is RequestState.SUCCEEDED
        assert committed(admin, group) == {(topic, 0): 3, (topic, 1): 3}

        # kafka-consumer-groups takes the saved CSV as it is (dry run: it changes nothing).
        csv_file = Path(kafka.state_dir) / f"{unique_name}.csv"
        csv_file.write_text(cm.data["rollback.csv"])
        tool = kafka.tool(
            "kafka-consumer-groups",
            ["--reset-offsets", "--group", group, "--from-file", str(csv_file), "--dry-run"],
        )
        assert tool.returncode == 0, tool.stderr + tool.stdout
        assert re.search(rf"{re.escape(topic)}\s+0\s+5\b", tool.stdout), tool.stdout
        assert re.search(rf"{re.escape(topic)}\s+1\s+7\b", tool.stdout), tool.stdout

        # Rollback restores the offsets before the reset exactly (refused while active).
        active.append(ActiveConsumer(bootstrap, group, topic))
        wait_members(admin, group, members=True)
        store = ConfigMapStore(k8s, k8s_namespace)
        assert rollback_offsets(admin, store, name=cm_name).state is ResetState.NOT_EMPTY
        active.pop().close()
        wait_members(admin, group, members=False)
        back = rollback_offsets(admin, store, name=cm_name)
        assert back.state is ResetState.APPLIED, back.message
        assert committed(admin, group) == {(topic, 0): 5, (topic, 1): 7}
        assert described_offsets(kafka, group) == {(topic, 0): 5, (topic, 1): 7}


class JoinBeforeAlter:
    """The real KafkaAdmin, except that right before the first alter a real consumer joins the
    group and is Stable: the race between the executor's Empty check and its commit, made certain."""

    def __init__(self, admin: KafkaAdmin, join: Callable[[], None]) -> None:
        self._admin, self._join, self.joined = admin, join, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._admin, name)

    def alter_group_offsets(self, group: str, offsets: Any) -> Any:
        if not self.joined:
            self.joined = True
            self._join()
        return self._admin.alter_group_offsets(group, offsets)


def test_consumer_joining_before_the_commit_leaves_the_request_waiting(
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    k8s: K8s,
    k8s_namespace: str,
    active: list[ActiveConsumer],
) -> None:
    topic, group = group_at_5_and_7(bootstrap, unique_name)
    req = request(id="race-1", group=group, topics=[topic], earliest=True)
    cm_name = saved_offsets_name("orders-policy", req.id)
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        plan, _ = plan_live(admin, req, datetime.now(UTC))

        def join() -> None:
            active.append(ActiveConsumer(bootstrap, group, topic))
            wait_members(admin, group, members=True)

        racing = JoinBeforeAlter(admin, join)
        raced = execute_offset_reset(
            cast(KafkaAdmin, racing),
            k8s,
            plan,
            namespace=k8s_namespace,
            policy_name="orders-policy",
            request_id=req.id,
        )
        assert racing.joined
        assert raced.state is ResetState.NOT_EMPTY, raced.message
        assert "joined" in raced.message and "UNKNOWN_MEMBER_ID" in raced.message, raced.message
        assert raced.request_state() is RequestState.WAITING
        assert k8s.read_configmap(k8s_namespace, cm_name) is None  # the id is not used up
        assert committed(admin, group) == {(topic, 0): 5, (topic, 1): 7}

        active.pop().close()
        wait_members(admin, group, members=False)
        applied = execute_offset_reset(
            admin, k8s, plan, namespace=k8s_namespace, policy_name="orders-policy", request_id=req.id
        )
        assert applied.state is ResetState.APPLIED, applied.message
        assert committed(admin, group) == {(topic, 0): 0, (topic, 1): 0}
        saved = json.loads((k8s.read_configmap(k8s_namespace, cm_name) or {})["offsets.json"])
        assert [p["offset"] for p in saved["partitions"]] == [5, 7]


def test_every_strategy_with_clamping(
    kafka: Testbed, bootstrap: str, unique_name: str, k8s: K8s, k8s_namespace: str
) -> None:
    topic = unique_name
    create_topic(bootstrap, topic, partitions=2)
    first = datetime.now(UTC) - 10 * STEP  # message i at now - (10 - i) * 10 min
    produce_timed(bootstrap, topic, 2, first)
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        # Log start 2 on partition 0: earliest and targets below it are clamped there.
        admin.client.delete_records([KTP(topic, 0, 2)])[KTP(topic, 0, 2)].result(timeout=30)
        wait_for(
            lambda: admin.list_offsets([(topic, 0)]).values[(topic, 0)].log_start_offset == 2,
            timeout=30,
            what="log start 2",
        )
        cases: list[tuple[str, dict[str, Any], list[int], list[bool]]] = [
            ("earliest", {"earliest": True}, [2, 0], [False, False]),
            ("latest", {"latest": True}, [10, 10], [False, False]),
            ("datetime", {"toDatetime": (first + 3.5 * STEP).isoformat()}, [4, 4], [False, False]),
            ("after-last", {"toDatetime": (first + 20 * STEP).isoformat()}, [10, 10], [False, False]),
            ("duration", {"byDuration": "25m"}, [8, 8], [False, False]),
            ("shift-back", {"shiftBy": -4}, [2, 1], [True, False]),
            ("shift-far", {"shiftBy": 100}, [10, 10], [True, True]),
            ("offset", {"toOffset": 6}, [6, 6], [False, False]),
            ("offset-low", {"toOffset": 1}, [2, 1], [True, False]),
            ("offset-high", {"toOffset": 50}, [10, 10], [True, True]),
        ]
        for name, strategy, expected, clamped in cases:
            group = f"{unique_name}-{name}"
            commit(bootstrap, group, {(topic, 0): 5, (topic, 1): 5})
            req = request(
                id=name,
                group=group,
                partitions=[{"topic": topic, "partition": p} for p in (0, 1)],
                **strategy,
            )
            plan, _ = plan_live(admin, req, datetime.now(UTC))
            assert plan.executable, (name, plan)
            assert [e.target for e in plan.entries] == expected, name
            assert [e.clamped for e in plan.entries] == clamped, name
            outcome = execute_offset_reset(
                admin, k8s, plan, namespace=k8s_namespace, policy_name="p", request_id=name
            )
            assert outcome.state is ResetState.APPLIED, (name, outcome.message)
            assert committed(admin, group) == {(topic, 0): expected[0], (topic, 1): expected[1]}, name


def test_cli_dry_run_refusal_execute_and_rollback(
    kafka: Testbed, bootstrap: str, unique_name: str, tmp_path: Path, active: list[ActiveConsumer]
) -> None:
    topic, group = group_at_5_and_7(bootstrap, unique_name)
    runner = CliRunner()
    base = ["reset-offsets", "-b", bootstrap, "--group", group]
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        dry = runner.invoke(app, [*base, "--topic", f"{topic}:1", "--shift-by", "-3"])
        assert dry.exit_code == 0, dry.output
        assert "GROUP" in dry.output and "CURRENT-OFFSET" in dry.output and "NEW-OFFSET" in dry.output
        assert re.search(rf"{re.escape(group)}\s+{re.escape(topic)}\s+1\s+7\s+4\b", dry.output), dry.output
        assert committed(admin, group) == {(topic, 0): 5, (topic, 1): 7}

        active.append(ActiveConsumer(bootstrap, group, topic))
        wait_members(admin, group, members=True)
        save = tmp_path / "saved.json"
        busy = runner.invoke(
            app, [*base, "--topic", topic, "--to-earliest", "--execute", "--save-to", str(save)]
        )
        assert busy.exit_code == 4, busy.output
        assert "not Empty" in busy.output or "Empty" in busy.output
        # Refused: the reason comes first, and the plan never reads EXECUTING.
        assert "EXECUTING" not in busy.output, busy.output
        assert busy.output.index("error:") < busy.output.index("NOT EXECUTED"), busy.output
        assert not save.exists()
        active.pop().close()
        wait_members(admin, group, members=False)

        done = runner.invoke(
            app, [*base, "--topic", topic, "--to-earliest", "--execute", "--save-to", str(save)]
        )
        assert done.exit_code == 0, done.output
        assert committed(admin, group) == {(topic, 0): 0, (topic, 1): 0}
        assert json.loads(save.read_text())["partitions"][1] == {"topic": topic, "partition": 1, "offset": 7}
        assert (tmp_path / "saved.csv").read_text() == f"{topic},0,5\n{topic},1,7\n"
        twice = runner.invoke(
            app, [*base, "--topic", topic, "--to-latest", "--execute", "--save-to", str(save)]
        )
        assert twice.exit_code == 4, twice.output
        assert "new file name" in twice.output and "request id" not in twice.output, twice.output
        assert "EXECUTING" not in twice.output, twice.output
        assert committed(admin, group) == {(topic, 0): 0, (topic, 1): 0}

        preview = runner.invoke(app, [*base, "--from-file", str(save)])
        assert preview.exit_code == 0, preview.output
        assert committed(admin, group) == {(topic, 0): 0, (topic, 1): 0}
        restored = runner.invoke(app, [*base, "--from-file", str(tmp_path / "saved.csv"), "--execute"])
        assert restored.exit_code == 0, restored.output
        assert committed(admin, group) == {(topic, 0): 5, (topic, 1): 7}

        bad = runner.invoke(app, [*base, "--topic", f"{topic}-missing", "--to-earliest"])
        assert bad.exit_code == 3, bad.output
    assert SavedOffsets.from_file(save).group == group
