"""Stuck reconciliation (KIP-848) on the real Kafka 4.4 test cluster, checked against Kafka's own
`kafka-consumer-groups --describe --members --verbose`.

Consumer A (`group.protocol=consumer`) owns every partition of a topic; its revocation callback
then blocks. Consumer B joins: the coordinator's new target gives B half the partitions, but A
never revokes them, so A's assignment stays unlike its target (and B waits for its half). The
members' assignments and targets read equal the tool's CURRENT-ASSIGNMENT and TARGET-ASSIGNMENT;
the first recorded snapshot of the mismatch is not judged yet, one past the threshold is
`reconciliation_stuck` naming A (blocking, with the partitions it must revoke) and B, under the
group's incident, in `run_diagnosis` and in the CLI's `diagnose`. A released, both reconcile and
the finding clears."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.main import app
from kafka_health.diagnose import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Diagnosis, Finding
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import snapshot_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

PARTITIONS = 6
STUCK_SECONDS = 6  # the test's threshold (reconciliation_stuck_minutes = 0.1)
THRESHOLDS = Thresholds(reconciliation_stuck_minutes=STUCK_SECONDS / 60)

Assignment = frozenset[tuple[str, int]]


def _partitions(text: str) -> Assignment:
    """The tool's "topic:0,1,2" (topics separated by ";"; "-": none)."""
    if text == "-":
        return frozenset()
    out = set()
    for item in text.split(";"):
        topic, _, parts = item.rpartition(":")
        out |= {(topic, int(p)) for p in parts.split(",") if p}
    return frozenset(out)


def oracle(tb: Testbed, group: str) -> dict[str, tuple[str, Assignment, Assignment]]:
    """`kafka-consumer-groups --describe --group G --members --verbose`: member id → (client id,
    CURRENT-ASSIGNMENT, TARGET-ASSIGNMENT)."""
    out = tb.tool("kafka-consumer-groups", ["--describe", "--group", group, "--members", "--verbose"])
    assert out.returncode == 0, out.stderr
    print(out.stdout)  # shown with -s (-rP): the tool's own words beside ours
    lines = out.stdout.splitlines()
    header = next(line.split() for line in lines if line.startswith("GROUP"))
    assert header[-3:] == ["CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"], out.stdout
    rows = [line.split() for line in lines if line.split()[:1] == [group]]
    return {r[1]: (r[3], _partitions(r[6]), _partitions(r[8])) for r in rows}


def ours(snap: ClusterSnapshot, group: str) -> dict[str, tuple[str, Assignment, Assignment]]:
    (g,) = [g for g in snap.groups if g.group_id == group]
    return {
        m.member_id: (m.client_id, frozenset(m.assignment), frozenset(m.target or []))
        for m in g.member_details
    }


def read_alike(tb: Testbed, bootstrap: str, group: str, want: object) -> tuple[ClusterSnapshot, dict]:
    """A snapshot whose members read as the tool shows them before and after it, once `want`
    (a predicate over the tool's members) holds."""

    def same() -> tuple[ClusterSnapshot, dict] | None:
        before = oracle(tb, group)
        snap = snapshot_of(bootstrap)
        after = oracle(tb, group)
        return (snap, after) if want(after) and before == after == ours(snap, group) else None  # type: ignore[operator]

    return wait_for(same, timeout=90, interval=1, what=f"members of {group} read alike by us and the tool")


@dataclass
class Member:
    """A consumer polling in its own thread; `block` makes its revocation callback wait."""

    consumer: Consumer
    block: bool = False
    revoking: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def on_revoke(self, _consumer: Consumer, _partitions: list) -> None:
        if self.block:
            self.revoking.set()
            self.release.wait(120)  # below max.poll.interval.ms (300 s): A stays a member

    def start(self, topic: str) -> None:
        self.consumer.subscribe([topic], on_revoke=self.on_revoke)
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.2)

    def close(self) -> None:
        self.release.set()
        self.stop.set()
        if self.thread is not None:
            self.thread.join(30)
        self.consumer.close()


def member(bootstrap: str, group: str, client_id: str, *, block: bool = False) -> Member:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "client.id": client_id,
        "auto.offset.reset": "earliest",
    }
    return Member(Consumer(conf), block=block)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for m in reversed(started):
        m.close()


def diagnosed(snap: ClusterSnapshot, history: Path, spark: SparkSession) -> Diagnosis:
    assert HistoryStore(history).append(snap).skipped is None
    return run_diagnosis(snap, history, THRESHOLDS, spark)


def stuck(d: Diagnosis, group: str) -> list[Finding]:
    return [f for f in d.findings if f.check == "reconciliation_stuck" and f.subject.group == group]


def test_member_blocked_in_its_revocation_is_reconciliation_stuck_until_released(
    kafka: Testbed,
    bootstrap: str,
    unique_name: str,
    members: list[Member],
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    topic, group, history = unique_name, unique_name, tmp_path / "history"
    faults.create_topic(bootstrap, topic, PARTITIONS)
    every = frozenset((topic, p) for p in range(PARTITIONS))

    a = member(bootstrap, group, "recon-a", block=True)
    members.append(a)
    a.start(topic)
    snap, seen = read_alike(
        kafka, bootstrap, group, lambda o: [(c, t) for _, c, t in o.values()] == [(every, every)]
    )
    assert not stuck(diagnosed(snap, history, spark), group)  # reconciled: nothing to say
    (a_id,) = seen
    # Its kind, as `kafka-groups --list` shows the group's type: a KIP-848 consumer group.
    (ours_kind,) = [g.kind for g in snap.groups if g.group_id == group]
    listed = kafka.tool("kafka-groups", ["--list"]).stdout.splitlines()
    (line,) = [x.split() for x in listed if x.split()[:1] == [group]]
    assert ours_kind == "consumer" and line[1] == "Consumer", (ours_kind, listed)

    b = member(bootstrap, group, "recon-b")
    members.append(b)
    b.start(topic)
    assert a.revoking.wait(60), "A's revocation callback never ran"

    def a_mismatched(o: dict) -> bool:
        return len(o) == 2 and o[a_id][1] == every and o[a_id][2] != every

    snap, seen = read_alike(kafka, bootstrap, group, a_mismatched)
    print(
        "ours:", [m.model_dump_json() for g in snap.groups if g.group_id == group for m in g.member_details]
    )
    (b_id,) = set(seen) - {a_id}
    to_revoke = sorted(every - seen[a_id][2])
    to_gain_b = sorted(seen[b_id][2] - seen[b_id][1])
    assert to_revoke and to_revoke == to_gain_b  # what A must give up is what B waits for
    first = diagnosed(snap, history, spark)
    assert not stuck(first, group)  # first seen now: not judged before the threshold

    time.sleep(STUCK_SECONDS + 1)
    snap, _ = read_alike(kafka, bootstrap, group, a_mismatched)
    (finding,) = stuck(diagnosed(snap, history, spark), group)
    names = ",".join(f"{t}-{p}" for t, p in to_revoke)
    assert finding.severity.value == "warning"
    assert finding.evidence["blocking_member_ids"] == a_id
    assert finding.evidence["member_ids"] == ",".join(sorted([a_id, b_id]))
    assert finding.evidence["to_revoke"] == names
    assert finding.evidence["to_gain"] == names
    assert f"{a_id} (client recon-a" in finding.message and f"to revoke {names}" in finding.message
    print("finding:", finding.model_dump_json())

    result = CliRunner().invoke(
        app,
        [
            "diagnose",
            "--bootstrap-servers",
            bootstrap,
            "--history",
            str(history),
            "--threshold",
            f"reconciliation_stuck_minutes={STUCK_SECONDS / 60}",
            "-o",
            "json",
        ],
    )
    cli = Diagnosis.model_validate(json.loads(result.stdout))
    (by_cli,) = stuck(cli, group)
    assert by_cli.evidence["blocking_member_ids"] == a_id and by_cli.evidence["to_revoke"] == names
    (incident,) = [i for i in cli.incidents if i.id == f"consumer_group:{group}"]
    assert "reconciliation_stuck" in {f.check for f in incident.findings}

    a.release.set()
    snap, _ = read_alike(
        kafka, bootstrap, group, lambda o: len(o) == 2 and all(c == t and c for _, c, t in o.values())
    )
    assert not stuck(diagnosed(snap, history, spark), group)
