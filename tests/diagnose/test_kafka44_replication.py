"""Replication on a real Kafka 4.4 cluster with dedicated controllers (the quorum stays up while
brokers stop), each step checked against Kafka's own tools.

Eligible leader replicas (KIP-966): a topic on brokers 0 and 1 with min.insync.replicas 2.
Broker 1 stops: the ISR shrinks below min ISR and 1 enters the ELR; broker 0 stops: the partition
is offline, its ISR empty, its ELR 0 and 1. At each step the collector's ELR and last-known ELR
equal `kafka-topics --describe`'s `Elr` and `LastKnownElr`, and the diagnosis says the partition
comes back cleanly when an eligible replica returns; broker 1 returns and leads it.

Reassignments: a throttled `kafka-reassign-partitions --execute` adds broker 2 to a topic on
brokers 0 and 1. The reassignments read, their adding replicas and the throttle configs equal
`--verify`, `kafka-topics --describe` and `kafka-configs --describe`; the diagnosis makes them one
`reassignment:cluster` incident (never "broker 2 out of sync"); the restart safety rules hold
every broker it involves (rule 5) and count none of its new replicas as under-replicated, nor
does the roll's wait for 0 under-replicated partitions. Completed without `--verify`, the
reassignment leaves its throttles: `replication_throttle_left` names them, and its own command
removes them."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health._kits.waiting import WaitTimeout, wait_for
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.diagnose import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Finding
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.reassignment_safety import reassignments_involving
from kafka_health.plan.restart_safety import check_restart_safety
from kafka_health.remediate.roll_checks import fully_replicated
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import snapshot_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

# From KAFKA_HEALTH_TEST_PORT: brokers 1050-1052, controllers 1150-1152 (clear of the session
# cluster, of tests/secured's clusters and, modulo 1000, of every other module's).
PORT_OFFSET = 1050
TOPIC = "elr"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    tb = Testbed(tmp_path_factory.mktemp("elr"))
    try:
        tb.up(3, int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET, controllers=3)
        created = tb.tool(
            "kafka-topics",
            [
                "--create",
                "--topic",
                TOPIC,
                "--replica-assignment",
                "0:1",
                "--config",
                "min.insync.replicas=2",
            ],
        )
        assert created.returncode == 0, created.stderr
        yield tb
    finally:
        tb.down(purge=True)


def oracle(tb: Testbed) -> tuple[list[int], list[int], list[int]]:
    """`kafka-topics --describe --topic elr`: the partition's (ISR, ELR, last-known ELR)."""
    out = tb.tool("kafka-topics", ["--describe", "--topic", TOPIC])
    assert out.returncode == 0, out.stderr
    m = re.search(r"Partition: 0\s.*Isr: ?(\S*)\s+Elr: ?(\S*)\s+LastKnownElr: ?(\S*)", out.stdout)
    assert m is not None, out.stdout

    def ids(text: str) -> list[int]:
        return sorted(int(x) for x in text.split(",") if x)

    return ids(m[1]), ids(m[2]), ids(m[3])


def ours(snap: ClusterSnapshot) -> tuple[list[int], list[int], list[int]]:
    (p,) = [p for p in snap.partitions if p.topic == TOPIC]
    found = [e for e in snap.eligible_leaders if (e.topic, e.partition) == (TOPIC, 0)]
    elr, last = (found[0].elr, found[0].last_known_elr) if found else ([], [])
    return sorted(p.isr), elr, last


def settled(tb: Testbed, bootstrap: str, want_isr: list[int]) -> ClusterSnapshot:
    """A snapshot taken once Kafka's tool shows `want_isr` and agrees with it twice in a row."""

    def same() -> ClusterSnapshot | None:
        before = oracle(tb)
        snap = snapshot_of(bootstrap)
        return snap if before[0] == want_isr and ours(snap) == before == oracle(tb) else None

    return wait_for(same, timeout=60, interval=1, what=f"ISR {want_isr} read alike by us and kafka-topics")


def test_elr_read_as_kafka_topics_shows_it_and_the_offline_finding_names_it(
    cluster: Testbed, spark: SparkSession
) -> None:
    serving = f"127.0.0.1:{cluster.require().brokers[2].port}"  # broker 2 holds no replica of the topic
    assert ours(settled(cluster, serving, [0, 1])) == ([0, 1], [], [])

    cluster.stop(1)
    snap = settled(cluster, serving, [0])
    assert ours(snap) == ([0], [1], [])  # below min ISR: 1 left the ISR into the ELR
    assert not [m for m in snap.missing if m.part.startswith("eligible_leaders")]

    cluster.stop(0)
    snap = settled(cluster, serving, [])
    isr, elr, last = ours(snap)
    assert (isr, elr) == ([], [0, 1]) and last  # offline: the ISR emptied, both replicas eligible
    diagnosis = run_diagnosis(snap, None, Thresholds(), spark)
    (offline,) = [
        f for f in diagnosis.findings if f.check == "offline_partition" and f.subject.topic == TOPIC
    ]
    assert "eligible leader replicas 0,1" in offline.message and "elects cleanly" in offline.message
    assert offline.evidence["eligible_leaders"] == "0,1"

    # An eligible replica returns: Kafka elects it (no unclean election), as the finding said.
    cluster.start(1)
    led = wait_for(
        lambda: next((p.leader for p in snapshot_of(serving).partitions if p.topic == TOPIC), None) == 1,
        timeout=60,
        interval=1,
        what="broker 1 leading the partition again",
    )
    assert led
    cluster.start(0)


MOVING = "moving"
PLAN = {
    "version": 1,
    "partitions": [
        {"topic": MOVING, "partition": 0, "replicas": [0, 1, 2]},
        {"topic": MOVING, "partition": 1, "replicas": [1, 0, 2]},
        {"topic": MOVING, "partition": 2, "replicas": [0, 1, 2]},
    ],
}
THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _tool_ok(tb: Testbed, tool: str, args: list[str]) -> str:
    out = tb.tool(tool, args)
    assert out.returncode == 0, out.stdout + out.stderr
    return str(out.stdout)


def _reassign(tb: Testbed, plan: Path, *args: str) -> str:
    return _tool_ok(tb, "kafka-reassign-partitions", ["--reassignment-json-file", str(plan), *args])


def _verify_in_progress(tb: Testbed, plan: Path) -> set[tuple[str, int]]:
    """The partitions `--verify` says are still being reassigned (it reports, and once a
    reassignment is complete removes its throttles: only called while one is in flight)."""
    out = _reassign(tb, plan, "--verify")
    return {(t, int(p)) for t, p in re.findall(r"partition (\S+)-(\d+) is still in progress", out)}


def _adding(tb: Testbed) -> dict[int, list[int]]:
    """`kafka-topics --describe`: each partition's adding replicas."""
    out = _tool_ok(tb, "kafka-topics", ["--describe", "--topic", MOVING])
    return {
        int(p): sorted(int(b) for b in ids.split(",") if b)
        for p, ids in re.findall(r"Partition: (\d+)\s.*Adding Replicas: ?(\S*)", out)
    }


def _broker_rates(tb: Testbed, broker: int) -> dict[str, int]:
    """`kafka-configs --describe --entity-type brokers`: broker's dynamic throttle rates."""
    out = _tool_ok(
        tb, "kafka-configs", ["--describe", "--entity-type", "brokers", "--entity-name", str(broker)]
    )
    return {k: int(v) for k, v in re.findall(r"^\s+(\S+\.replication\.throttled\.rate)=(\d+) ", out, re.M)}


def _ours_rates(snap: ClusterSnapshot, broker: int) -> dict[str, int]:
    found = [t for t in snap.broker_throttles if t.broker == broker]
    if not found:
        return {}
    pairs = zip(RATES, (found[0].leader_rate, found[0].follower_rate), strict=True)
    return {k: v for k, v in pairs if v is not None}


def _log_dir_sizes(tb: Testbed) -> dict[tuple[int, int], int]:
    """`kafka-log-dirs --describe`: (partition, broker) → the size of each replica of MOVING."""
    out = _tool_ok(tb, "kafka-log-dirs", ["--describe", "--broker-list", "0,1,2", "--topic-list", MOVING])
    answer = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    return {
        (int(p["partition"].rsplit("-", 1)[1]), b["broker"]): int(p["size"])
        for b in answer["brokers"]
        for d in b["logDirs"]
        for p in d["partitions"]
        if not p["isFuture"]
    }


def _left_to_copy(snap: ClusterSnapshot) -> int:
    return sum(r.lag_bytes for r in snap.replica_lags if r.topic == MOVING)


def _topic_throttles(tb: Testbed) -> dict[str, str]:
    out = _tool_ok(tb, "kafka-configs", ["--describe", "--entity-type", "topics", "--entity-name", MOVING])
    return dict(re.findall(r"^\s+(\S+\.replication\.throttled\.replicas)=(\S*) ", out, re.M))


def test_a_throttled_reassignment_is_one_incident_and_its_throttle_left_behind_is_named(
    cluster: Testbed, spark: SparkSession, tmp_path: Path
) -> None:
    wait_for(  # the ELR test above restarted brokers 0 and 1
        lambda: (
            len(snapshot_of(cluster.require().bootstrap_servers).brokers) == 3
            and all(b.alive for b in snapshot_of(cluster.require().bootstrap_servers).brokers)
        ),
        timeout=60,
        what="three live brokers",
    )
    bootstrap = cluster.require().bootstrap_servers
    _tool_ok(
        cluster,
        "kafka-topics",
        [
            "--create",
            "--topic",
            MOVING,
            "--replica-assignment",
            "0:1,1:0,0:1",
            "--config",
            "min.insync.replicas=2",
        ],
    )
    faults.fill(bootstrap, MOVING, 3, kb_each=10_000)  # in flight for ~2 min, a busy machine included
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    _reassign(cluster, plan, "--execute", "--throttle", "1000")

    # In flight, throttled: what we read is what Kafka's tools say.
    moving = {(MOVING, p) for p in range(3)}
    assert _verify_in_progress(cluster, plan) == moving
    snap = snapshot_of(bootstrap)
    assert not [m for m in snap.missing if m.part == "reassignments"]
    ours = {(r.topic, r.partition): r for r in snap.reassignments}
    assert set(ours) == moving
    assert {p: ours[(MOVING, p)].adding for p in range(3)} == _adding(cluster) == {0: [2], 1: [2], 2: [2]}
    (config,) = [c for c in snap.topic_configs if c.topic == MOVING]
    tool = _topic_throttles(cluster)
    assert config.follower_replication_throttled_replicas == tool[THROTTLES[1]] == "0:2,1:2,2:2"
    assert config.leader_replication_throttled_replicas == tool[THROTTLES[0]]
    # The brokers' rates, as kafka-configs shows them; the new replicas' lag, from the log dirs.
    for broker in range(3):
        assert _ours_rates(snap, broker) == _broker_rates(cluster, broker), broker
    assert _ours_rates(snap, 2)[RATES[1]] == 1000
    # Each new replica's size and its leader's, as kafka-log-dirs reports them (the new replicas
    # copy meanwhile: ours lies between the tool's reads before and after it).
    before = _log_dir_sizes(cluster)
    snap = snapshot_of(bootstrap)
    after = _log_dir_sizes(cluster)
    leaders = {p.partition: p.leader for p in snap.partitions if p.topic == MOVING}
    for r in (r for r in snap.replica_lags if r.topic == MOVING):
        leader = leaders[r.partition]
        assert leader is not None
        assert r.leader_size_bytes == before[(r.partition, leader)] == after[(r.partition, leader)]
        assert before[(r.partition, 2)] <= r.size_bytes <= after[(r.partition, 2)], (r, before, after)
    assert {(r.partition, r.broker) for r in snap.replica_lags if r.topic == MOVING} == {
        (p, 2) for p in range(3)
    }
    assert _left_to_copy(snap) > 0
    # A later snapshot, once the new replicas copied more: with the first in the history, an ETA.
    history = tmp_path / "history"
    HistoryStore(history).append(snap)
    later = wait_for(
        lambda: s if _left_to_copy(s := snapshot_of(bootstrap)) < _left_to_copy(snap) else None,
        timeout=90,
        interval=2,
        what="the new replicas copying",
    )
    HistoryStore(history).append(later)
    progress = {
        f.subject.partition: f
        for f in run_diagnosis(later, history, Thresholds(), spark).findings
        if f.check == "partition_reassigning"
    }
    assert all(f.evidence["follower_throttle_rate"] == 1000 for f in progress.values())
    assert sum(int(str(f.evidence["left_bytes"])) for f in progress.values()) == _left_to_copy(later)
    assert any(f.evidence["eta_seconds"] is not None for f in progress.values()), progress

    # A roll: every broker is held by the reassignment (rule 5), none by "under-replicated";
    # after a restart its wait for 0 under-replicated partitions does not wait on the new replicas.
    for broker in range(3):
        held = {b.rule for b in check_restart_safety(snap, broker, remaining=[0, 1, 2]).blockers}
        assert "reassignment" in held and "under_replicated" not in held, held
    assert str(reassignments_involving(snap, [0, 1, 2])).startswith("3 partition reassignment(s) in flight")
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        assert fully_replicated(admin)

    diagnosis = run_diagnosis(snap, None, Thresholds(), spark)
    ids = {i.id: i for i in diagnosis.incidents}
    assert "broker_out_of_sync:2" not in ids, ids.keys()
    moves = ids["reassignment:cluster"]
    assert {(f.check, f.subject.partition) for f in moves.findings} >= {
        *(("partition_reassigning", p) for p in range(3)),
        *(("under_replicated", p) for p in range(3)),
    }
    assert moves.title.startswith(
        "3 partitions being reassigned: adding broker(s) 2, removing broker(s) none"
    )
    assert moves.evidence["throttled_partitions"] == 3
    urp = [f for f in moves.findings if f.check == "under_replicated"]
    assert all(f.evidence["reassigning"] == "2" and "being added by a reassignment" in f.message for f in urp)
    assert all(f.evidence["cause"] == "reassigning" for f in urp)
    assert not [f for f in diagnosis.findings if f.check == "replication_throttle_left"]

    # Lift the rate (--additional changes a running reassignment's throttle) and let it complete
    # WITHOUT --verify: Kafka leaves the throttles behind.
    _reassign(cluster, plan, "--execute", "--additional", "--throttle", "1000000000")
    wait_for(
        lambda: not snapshot_of(bootstrap).reassignments, timeout=120, interval=1, what="reassignment done"
    )
    assert _topic_throttles(cluster) == tool
    left = [
        f
        for f in run_diagnosis(snapshot_of(bootstrap), None, Thresholds(), spark).findings
        if f.check == "replication_throttle_left" and f.subject.topic is not None
    ]
    assert [f.subject.topic for f in left] == [MOVING]
    assert left[0].evidence["follower_replication_throttled_replicas"] == "0:2,1:2,2:2"

    # The finding's own command (before its note on brokers) removes them.
    command = shlex.split(str(left[0].remediation).split(" (and", 1)[0])
    assert command[0] == "kafka-configs"
    _tool_ok(cluster, command[0], command[1:])
    assert _topic_throttles(cluster) == {}

    # The brokers' rates stay behind too: one finding per broker, whose command removes them.
    again = run_diagnosis(snapshot_of(bootstrap), None, Thresholds(), spark)
    assert not [f for f in again.findings if f.check == "partition_reassigning" or f.subject.topic == MOVING]
    by_broker = {f.subject.broker: f for f in again.findings if f.check == "replication_throttle_left"}
    assert set(by_broker) == {b for b in range(3) if _broker_rates(cluster, b)} == {0, 1, 2}
    for kept, f in by_broker.items():
        assert kept is not None
        assert f.evidence["follower_replication_throttled_rate"] == str(
            _broker_rates(cluster, kept)[RATES[1]]
        )
        command = shlex.split(str(f.remediation))
        _tool_ok(cluster, command[0], command[1:])
        assert _broker_rates(cluster, kept) == {}
    assert not [
        f
        for f in run_diagnosis(snapshot_of(bootstrap), None, Thresholds(), spark).findings
        if f.check == "replication_throttle_left"
    ]


def test_a_replica_out_of_sync_says_it_is_fenced_then_throttled_by_a_throttle_left_behind(
    cluster: Testbed, spark: SparkSession
) -> None:
    """Broker 2 stops: its replicas are `fenced`. A throttle left on the topic and a low rate on
    broker 2 (as a reassignment completed without --verify leaves them): once it returns, its
    replicas copy at that rate and are `throttled`, never "check its disk"."""
    bootstrap = cluster.require().bootstrap_servers
    topic = "held"
    _tool_ok(cluster, "kafka-topics", ["--create", "--topic", topic, "--replica-assignment", "0:1:2,1:0:2"])
    # The throttle a reassignment completed without --verify leaves (it throttles nothing while in sync).
    _tool_ok(
        cluster,
        "kafka-configs",
        [
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
            "--alter",
            "--add-config",
            f"{THROTTLES[1]}=[0:2,1:2]",
        ],
    )
    _tool_ok(
        cluster,
        "kafka-configs",
        ["--entity-type", "brokers", "--entity-name", "2", "--alter", "--add-config", f"{RATES[1]}=1000"],
    )
    cluster.stop(2)

    def fenced() -> ClusterSnapshot | None:
        snap = snapshot_of(bootstrap)
        return snap if any(b.id == 2 and b.fenced for b in snap.brokers) else None

    serving = wait_for(fenced, timeout=60, what="broker 2 fenced")
    urp = [
        f
        for f in run_diagnosis(serving, None, Thresholds(), spark).findings
        if f.check == "under_replicated" and f.subject.topic == topic
    ]
    assert len(urp) == 2 and all(f.evidence["cause"] == "fenced" for f in urp), urp
    # Held back for ~11 s per MB (`faults.fill`): 15 MB is ~3 min, past the wait below and a broker
    # start on a busy machine (CI, 6 MB: copied in the ~70 s its restart and two diagnoses took).
    faults.fill(bootstrap, topic, 2, kb_each=15_000)
    cluster.start(2)

    last: list[object] = []  # what the last diagnosis said, for a failure's message

    def held() -> list[Finding] | None:
        snap = snapshot_of(bootstrap)
        if not any(b.id == 2 and b.alive for b in snap.brokers):
            return None
        found = [
            f
            for f in run_diagnosis(snap, None, Thresholds(), spark).findings
            if f.check == "under_replicated" and f.subject.topic == topic
        ]
        last[:] = [(f.subject.partition, f.evidence.get("causes")) for f in found] or ["in sync"]
        return found if found and all(f.evidence["cause"] == "throttled" for f in found) else None

    try:
        found = wait_for(held, timeout=90, interval=2, what="broker 2 back, throttled")
    except WaitTimeout as exc:
        raise AssertionError(f"{exc}; the last diagnosis with broker 2 alive: {last}") from exc
    # (its lag read: on a busy machine it may have copied every byte and not yet rejoined the ISR)
    assert all(
        "2 throttled (" in str(f.evidence["causes"]) and f.evidence["lag_bytes"] is not None for f in found
    ), [f.message for f in found]
    assert all("replication throttle holds it" in str(f.remediation) for f in found)
    # The throttle left behind is the finding to act on; removed, broker 2 catches up.
    left = {
        (f.subject.topic, f.subject.broker)
        for f in run_diagnosis(snapshot_of(bootstrap), None, Thresholds(), spark).findings
        if f.check == "replication_throttle_left"
    }
    assert left == {(topic, None), (None, 2)}
    _tool_ok(
        cluster,
        "kafka-configs",
        ["--entity-type", "topics", "--entity-name", topic, "--alter", "--delete-config", THROTTLES[1]],
    )
    _tool_ok(
        cluster,
        "kafka-configs",
        ["--entity-type", "brokers", "--entity-name", "2", "--alter", "--delete-config", RATES[1]],
    )
    wait_for(
        lambda: not [p for p in snapshot_of(bootstrap).partitions if p.topic == topic and len(p.isr) < 3],
        timeout=90,
        interval=2,
        what="broker 2 back in sync",
    )
