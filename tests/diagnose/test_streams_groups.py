"""Streams groups (KIP-1071) in the snapshot and the diagnosis, on the real Kafka 4.4 test cluster
with two real Kafka Streams apps (`testbed.streams_app`) side by side:

- `healthy` reads a topic that exists: its group is kind `streams`, Stable, its member assigned
  (and targeted) the partitions its active tasks read -- the source topic's and the repartition
  topic's -- as `kafka-streams-groups --describe --members --verbose` lists its tasks, with
  committed offsets as `--describe --offsets` lists them; nothing is said of it;
- `broken` reads a topic that does not exist: Kafka holds its group NotReady; the diagnosis says
  `streams_group_not_ready` naming that topic, under the group's incident, in `run_diagnosis`
  and in the CLI's `diagnose` (exit 4: critical)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.diagnose import run_diagnosis
from kafka_health.models.findings import Diagnosis
from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup
from kafka_health.testbed.cluster import Testbed
from tests.collect.test_streams_groups import create_topics, kp, streams_app, tool, tool_members  # noqa: F401
from tests.diagnose.kafka_tools import produce, snapshot_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def tool_offsets(tb: Testbed, group_id: str) -> dict[tuple[str, int], int]:
    """`kafka-streams-groups --describe --offsets --verbose`: GROUP TOPIC PARTITION CURRENT-OFFSET
    LEADER-EPOCH LOG-END-OFFSET OFFSET-LAG; the partitions with a committed offset."""
    rows = tool(tb, "--describe", "--offsets", "--verbose", "--group", group_id)
    return {(r[1], int(r[2])): int(r[3]) for r in rows if r[3] != "-"}


def group_of(snap: ClusterSnapshot, group_id: str) -> ConsumerGroup | None:
    found = [g for g in snap.groups if g.group_id == group_id]
    return found[0] if found else None


def settled(bootstrap: str, healthy: str, broken: str) -> ClusterSnapshot | None:
    """A snapshot with `healthy` Stable, its member's tasks reconciled, and `broken` NotReady."""
    snap = snapshot_of(bootstrap)
    ok, bad = group_of(snap, healthy), group_of(snap, broken)
    if ok is None or bad is None or ok.state != "Stable" or bad.state != "NotReady":
        return None
    reconciled = all(m.assignment and m.assignment == m.target for m in ok.member_details)
    return snap if reconciled else None


@pytest.fixture
def apps(testbed: Testbed, bootstrap: str, kp: Any, unique_name: str) -> Iterator[tuple[str, str, str]]:  # noqa: F811
    healthy, broken = f"{unique_name}-ok", f"{unique_name}-nr"
    source = f"{unique_name}-in"
    create_topics(bootstrap, source, f"{healthy}-out", f"{broken}-out")
    produce(bootstrap, source, {0: 20, 1: 20, 2: 20})
    with (
        streams_app(testbed, kp, healthy, source, f"{healthy}-out"),
        streams_app(testbed, kp, broken, f"{unique_name}-absent", f"{broken}-out"),
    ):
        yield healthy, broken, unique_name


def test_streams_groups_are_read_and_a_not_ready_one_is_critical(
    kafka: Testbed, bootstrap: str, apps: tuple[str, str, str], spark: SparkSession, tmp_path: Path
) -> None:
    healthy, broken, name = apps
    source = f"{name}-in"
    snap = wait_for(
        lambda: settled(bootstrap, healthy, broken), timeout=90, interval=1, what="both apps settled"
    )
    ok = group_of(snap, healthy)
    assert ok is not None and ok.kind == "streams" and ok.streams is not None
    repartition = f"{healthy}-by-value-repartition"
    assert ok.streams.source_topics == {"0": [source], "1": [repartition]}
    assert ok.streams.missing_source_topics == []
    (member,) = ok.member_details
    every = [(t, p) for t in sorted([source, repartition]) for p in range(3)]
    assert member.assignment == member.target == every
    # The tool's ACTIVE tasks of the member are the subtopologies' partitions we read.
    (listed,) = tool_members(kafka, healthy).values()
    assert listed["current"].active == {"0": [0, 1, 2], "1": [0, 1, 2]}

    # Committed offsets (OffsetFetch of the group id): the tool's CURRENT-OFFSET per partition,
    # read alike before and after a snapshot.
    def committed_alike() -> bool:
        before = tool_offsets(kafka, healthy)
        g = group_of(snapshot_of(bootstrap), healthy)
        assert g is not None
        ours = {
            (o.topic, o.partition): o.committed_offset for o in g.offsets if o.committed_offset is not None
        }
        return before == ours == tool_offsets(kafka, healthy) and len(ours) == 6

    wait_for(committed_alike, timeout=60, interval=1, what="committed offsets read alike by us and the tool")

    bad = group_of(snap, broken)
    assert bad is not None and bad.streams is not None
    assert bad.streams.missing_source_topics == [f"{name}-absent"]
    assert all(not m.assignment and not m.target for m in bad.member_details)

    d = run_diagnosis(snap, None, None, spark)
    (finding,) = [f for f in d.findings if f.check == "streams_group_not_ready"]
    assert finding.subject.group == broken and finding.severity.value == "critical"
    assert finding.evidence["missing_source_topics"] == bad.streams.missing_source_topics[0]
    assert f"Streams group {broken} is NOT_READY" in finding.message
    print("finding:", finding.model_dump_json())
    (incident,) = [i for i in d.incidents if i.id == f"consumer_group:{broken}"]
    assert "streams_group_not_ready" in {f.check for f in incident.findings}
    assert not [f for f in d.findings if f.subject.group == healthy and f.check.startswith("streams_")]

    result = CliRunner().invoke(app, ["diagnose", "--bootstrap-servers", bootstrap, "-o", "json"])
    assert result.exit_code == 4, result.output  # critical
    cli = Diagnosis.model_validate(json.loads(result.stdout))
    assert [f.subject.group for f in cli.findings if f.check == "streams_group_not_ready"] == [broken]
