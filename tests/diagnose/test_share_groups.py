"""Share groups (KIP-932, Kafka's queues) on the real Kafka 4.4 test cluster, checked against Kafka's
own `kafka-share-groups --describe`.

The group's start offsets are set to the earliest by the tool (`--reset-offsets --to-earliest
--execute`, which also creates its share-partition state), then a share consumer (confluent-kafka's
`ShareConsumer`, explicit acknowledgement) takes one batch, acknowledges the first `ACKED` records of
it and stops polling: it stays a member (max.poll.interval.ms is 5 minutes) while the start offsets
stay where its acknowledgements left them. The group's state, its member and assignment, and each
partition's start offset and lag read as the tool shows them. With two recorded samples the
diagnosis says `consumer_lag` STALL for the group (members present, start offsets not moving: a
stalled queue), under the group's incident, in `run_diagnosis` and the CLI. Once the consumer has
closed, the group has no member and records pending: STOP.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import ShareConsumer
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.diagnose import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Diagnosis, Finding
from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import produce, snapshot_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

PER_PARTITION = 100
ACKED = 10  # records of the consumer's one batch it acknowledges before it stalls
THRESHOLDS = Thresholds(lag_min_samples=2)  # two samples make a status (default 3)

Offsets = dict[tuple[str, int], tuple[int | None, int | None]]


def tool_offsets(tb: Testbed, group: str) -> Offsets:
    """`kafka-share-groups --describe --group G`: (topic, partition) → (START-OFFSET, LAG), '-' → None."""
    out = tb.tool("kafka-share-groups", ["--describe", "--group", group])
    assert out.returncode == 0, out.stderr
    print(out.stdout)  # shown with -s (-rP): the tool's own words beside ours
    rows = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == [group]]
    number = lambda text: None if text == "-" else int(text)  # noqa: E731
    return {(r[1], int(r[2])): (number(r[3]), number(r[4])) for r in rows}


def tool_members(tb: Testbed, group: str) -> dict[str, tuple[str, frozenset[tuple[str, int]]]]:
    """`kafka-share-groups --describe --group G --members`: member id → (client id, assignment)."""
    out = tb.tool("kafka-share-groups", ["--describe", "--group", group, "--members"])
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    found = {}
    for cols in (line.split() for line in out.stdout.splitlines()):
        if cols[:1] == [group]:
            topic, _, parts = cols[5].rpartition(":")
            found[cols[1]] = (cols[3], frozenset((topic, int(p)) for p in parts.split(",")))
    return found


def tool_state(tb: Testbed, group: str) -> tuple[str, int]:
    """`kafka-share-groups --describe --group G --state`: (STATE, #MEMBERS)."""
    out = tb.tool("kafka-share-groups", ["--describe", "--group", group, "--state"])
    assert out.returncode == 0, out.stderr
    (cols,) = [line.split() for line in out.stdout.splitlines() if line.split()[:1] == [group]]
    return cols[-2], int(cols[-1])


def ours(snap: ClusterSnapshot, group: str) -> ConsumerGroup:
    (g,) = [g for g in snap.groups if g.group_id == group]
    return g


def our_offsets(g: ConsumerGroup) -> Offsets:
    return {(o.topic, o.partition): (o.committed_offset, o.reported_lag) for o in g.offsets}


def read_alike(tb: Testbed, bootstrap: str, group: str) -> ClusterSnapshot:
    """A snapshot whose start offsets and lags read as the tool shows them before and after it."""

    def same() -> ClusterSnapshot | None:
        before = tool_offsets(tb, group)
        snap = snapshot_of(bootstrap)
        after = tool_offsets(tb, group)
        return snap if before == after == our_offsets(ours(snap, group)) else None

    return wait_for(same, timeout=60, interval=1, what=f"share group {group} read alike by us and the tool")


def stalled_consumer(bootstrap: str, group: str, topic: str) -> tuple[ShareConsumer, tuple[str, int]]:
    """A share consumer that took one batch, acknowledged its first ACKED records and stopped
    polling; the partition the batch came from."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "stalled-worker",
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])

    def batch() -> list | None:
        got = [m for m in consumer.poll(1.0) if m.error() is None]
        return got or None

    records = wait_for(batch, timeout=60, interval=0, what="a batch for the share consumer")
    first = min(m.offset() for m in records)
    for m in records:
        if m.offset() < first + ACKED:
            consumer.acknowledge(m)
    consumer.commit_sync()
    return consumer, (records[0].topic(), records[0].partition())


def diagnosed(snap: ClusterSnapshot, history: Path, spark: SparkSession) -> Diagnosis:
    assert HistoryStore(history).append(snap).skipped is None
    return run_diagnosis(snap, history, THRESHOLDS, spark)


def lag_findings(d: Diagnosis, group: str) -> list[Finding]:
    return [f for f in d.findings if f.check == "consumer_lag" and f.subject.group == group]


def group_status(d: Diagnosis, group: str) -> str | None:
    found = [f for f in lag_findings(d, group) if f.subject.partition is None]
    return str(found[0].evidence["status"]) if found else None


def test_a_share_group_reads_as_the_tool_shows_it_and_a_stalled_queue_then_a_stopped_one(
    kafka: Testbed, bootstrap: str, unique_name: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic, group, history = unique_name, unique_name, tmp_path / "history"
    faults.create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, {0: PER_PARTITION, 1: PER_PARTITION})
    reset = kafka.tool(
        "kafka-share-groups",
        ["--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"],
    )
    assert reset.returncode == 0, reset.stdout + reset.stderr

    consumer, (_, taken) = stalled_consumer(bootstrap, group, topic)
    try:
        snap = read_alike(kafka, bootstrap, group)
        g = ours(snap, group)
        # Kafka's lag leaves out the acknowledged records; the start offset moves past them when
        # the share coordinator has written them (it may not have yet: at most ACKED).
        lags = {key: lag for key, (_, lag) in our_offsets(g).items()}
        assert lags == {(topic, p): PER_PARTITION - (ACKED if p == taken else 0) for p in (0, 1)}
        starts = {key: start for key, (start, _) in our_offsets(g).items()}
        assert starts[(topic, 1 - taken)] == 0 and 0 <= (starts[(topic, taken)] or 0) <= ACKED, starts
        assert (g.kind, g.state, g.members) == ("share", "Stable", 1)
        assert (g.state, g.members) == tool_state(kafka, group)
        members = tool_members(kafka, group)
        assert {m.member_id: (m.client_id, frozenset(m.assignment)) for m in g.member_details} == members
        assert members[g.member_ids[0]] == ("stalled-worker", frozenset({(topic, 0), (topic, 1)}))

        assert group_status(diagnosed(snap, history, spark), group) is None  # one sample: no status yet
        d = diagnosed(snapshot_of(bootstrap), history, spark)
        (stall,) = [f for f in lag_findings(d, group) if f.subject.partition is None]
        assert (stall.evidence["status"], stall.evidence["kind"]) == ("STALL", "share"), stall.evidence
        assert stall.message.startswith(f"Share group {group} is STALL")
        (incident,) = [i for i in d.incidents if i.id == f"consumer_group:{group}"]
        assert "consumer_lag" in {f.check for f in incident.findings}
        print("finding:", stall.model_dump_json())

        result = CliRunner().invoke(
            app,
            [
                "diagnose",
                "--bootstrap-servers",
                bootstrap,
                "--history",
                str(history),
                "--threshold",
                f"lag_min_samples={THRESHOLDS.lag_min_samples}",
                "-o",
                "json",
            ],
        )
        assert result.exit_code != 2, result.output
        assert group_status(Diagnosis.model_validate(json.loads(result.stdout)), group) == "STALL"
    finally:
        consumer.close()

    def without_members() -> ClusterSnapshot | None:
        taken = snapshot_of(bootstrap)
        return taken if ours(taken, group).members == 0 else None

    snap = wait_for(without_members, timeout=60, interval=1, what="the share group without members")
    assert (ours(snap, group).state, 0) == tool_state(kafka, group) == ("Empty", 0)
    assert group_status(diagnosed(snap, history, spark), group) == "STOP"
