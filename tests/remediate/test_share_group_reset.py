"""Share-group (KIP-932) offset reset on the real Kafka 4.4 test cluster, with Kafka's own
`kafka-share-groups --reset-offsets --dry-run` as the oracle.

A share group whose start offsets a share consumer moved (it acknowledged the first records of
one batch) is refused while that consumer is a member (Stable: exit 4, nothing changed; Kafka
itself answers NON_EMPTY_GROUP on every partition). Once it closed and the group is Empty, our
dry-run plan's NEW-OFFSET per partition equals the tool's for --to-earliest, --to-offset
(clamped to the log end) and --to-datetime; --execute sets the start offsets the tool then
describes, after saving the ones before; --from-file puts those back.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import ShareConsumer
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.remediate.kafka_errors import KafkaErrorCode, code_of
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from tests.diagnose.kafka_tools import produce

pytestmark = pytest.mark.kafka

FIRST = {0: 40, 1: 20}  # records per partition before the time the --to-datetime reset names
LATER = {0: 40, 1: 20}  # and after it: log ends 80 and 40
ACKED = 10

Offsets = dict[tuple[str, int], int | None]


def tool_start_offsets(tb: Testbed, group: str) -> Offsets:
    """`kafka-share-groups --describe --group G`: (topic, partition) → START-OFFSET ('-' → None)."""
    out = tb.tool("kafka-share-groups", ["--describe", "--group", group])
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    rows = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == [group]]
    return {(r[1], int(r[2])): None if r[3] == "-" else int(r[3]) for r in rows}


def tool_plan(tb: Testbed, group: str, args: list[str]) -> Offsets:
    """`kafka-share-groups --reset-offsets --group G <args> --dry-run`: (topic, partition) → NEW-OFFSET."""
    out = tb.tool("kafka-share-groups", ["--reset-offsets", "--group", group, *args, "--dry-run"])
    assert out.returncode == 0, out.stdout + out.stderr
    print(out.stdout)
    rows = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == [group]]
    return {(r[1], int(r[2])): int(r[3]) for r in rows}


def tool_state(tb: Testbed, group: str) -> str:
    out = tb.tool("kafka-share-groups", ["--describe", "--group", group, "--state"])
    assert out.returncode == 0, out.stderr
    (cols,) = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == [group]]
    return cols[-2]


def acknowledging_consumer(bootstrap: str, group: str, topic: str) -> ShareConsumer:
    """A share consumer that took one batch and acknowledged its first ACKED records (it stays a
    member until closed)."""
    consumer = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    )
    consumer.subscribe([topic])
    records = wait_for(
        lambda: [m for m in consumer.poll(1.0) if m.error() is None] or None,
        timeout=60,
        interval=0,
        what="a batch for the share consumer",
    )
    first = min(m.offset() for m in records)
    for m in records:
        if m.offset() < first + ACKED:
            consumer.acknowledge(m)
    consumer.commit_sync()
    return consumer


def our_plan(bootstrap: str, group: str, topic: str, strategy: list[str]) -> Offsets:
    """Our dry run (`-o json`): (topic, partition) → target."""
    args = [
        "reset-offsets",
        "-b",
        bootstrap,
        "--share-group",
        group,
        "--topic",
        topic,
        *strategy,
        "-o",
        "json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert "NEW-OFFSET" not in result.stdout and plan["group"] == group
    return {(e["topic"], e["partition"]): e["target"] for e in plan["entries"]}


def test_share_group_reset_refused_while_stable_then_as_the_tool_plans_it_executed_and_undone(
    kafka: Testbed, bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topic, group, save = unique_name, unique_name, tmp_path / "before.json"
    faults.create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, FIRST)
    time.sleep(1.0)
    middle = datetime.now(UTC)
    time.sleep(1.0)
    produce(bootstrap, topic, LATER)
    created = kafka.tool(
        "kafka-share-groups",
        ["--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"],
    )
    assert created.returncode == 0, created.stdout + created.stderr
    base = ["reset-offsets", "-b", bootstrap, "--share-group", group, "--topic", topic]

    consumer = acknowledging_consumer(bootstrap, group, topic)
    try:
        before = tool_start_offsets(kafka, group)
        busy = CliRunner().invoke(app, [*base, "--to-latest", "--execute", "--save-to", str(save)])
        assert busy.exit_code == 4, busy.output
        assert "is Stable with 1 member(s)" in busy.output and "stop its consumers" in busy.output, (
            busy.output
        )
        assert "EXECUTING" not in busy.output and not save.exists(), busy.output
        with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:  # Kafka's own refusal
            refused = admin.alter_share_group_offsets(group, {(topic, 0): 0, (topic, 1): 0})
        assert not refused.values and {code_of(e) for e in refused.errors.values()} == {
            KafkaErrorCode.NON_EMPTY_GROUP
        }, refused.errors
        assert tool_start_offsets(kafka, group) == before
    finally:
        consumer.close()
    wait_for(lambda: tool_state(kafka, group) == "Empty" or None, timeout=60, interval=1, what="Empty")

    def moved() -> Offsets | None:  # the acknowledged records are behind a start offset for good
        found = tool_start_offsets(kafka, group)
        return found if any(found.values()) else None

    before = wait_for(moved, timeout=30, interval=1, what="a start offset moved by the acknowledgements")

    stamp = middle.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    for ours, tools in [
        (["--to-earliest"], ["--to-earliest"]),
        (["--to-offset", "60"], ["--to-offset", "60"]),  # partition 1 ends at 40: clamped
        (["--to-datetime", f"{stamp}Z"], ["--to-datetime", stamp]),  # the JVM's zone is UTC
    ]:
        assert our_plan(bootstrap, group, topic, ours) == tool_plan(
            kafka, group, ["--topic", topic, *tools]
        ), ours
    assert tool_plan(kafka, group, ["--topic", topic, "--to-offset", "60"]) == {
        (topic, 0): 60,
        (topic, 1): 40,
    }

    done = CliRunner().invoke(app, [*base, "--to-earliest", "--execute", "--save-to", str(save)])
    assert done.exit_code == 0, done.output
    assert tool_start_offsets(kafka, group) == {(topic, 0): 0, (topic, 1): 0}
    saved = json.loads(save.read_text())
    assert (
        saved["kind"] == "share"
        and {(p["topic"], p["partition"]): p["offset"] for p in saved["partitions"]} == before
    )

    from_csv = ["--from-file", str(save.with_suffix(".csv"))]  # the CSV beside it, for Kafka's tool
    assert tool_plan(kafka, group, from_csv) == before
    undo = ["reset-offsets", "-b", bootstrap, "--share-group", group, "--from-file", str(save), "--execute"]
    restored = CliRunner().invoke(app, undo)
    assert restored.exit_code == 0, restored.output
    assert tool_start_offsets(kafka, group) == before
