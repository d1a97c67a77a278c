"""`testbed up --controllers 3`: dedicated KRaft controllers beside broker-only nodes, with the
authorizer (SASL_SSL); the collector reads controller-only voters as Kafka's own tool does, a
stopped active controller hands the quorum over and rejoins, and the diagnosis reports a stopped
controller-only voter (and no broker for it)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from kafka_health._kits.waiting import wait_for
from kafka_health.cli.kafka_options import connection
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.diagnose import run_diagnosis
from kafka_health.models.findings import Diagnosis, Severity
from kafka_health.models.snapshot import ClusterSnapshot, Quorum
from kafka_health.testbed.cluster import CONTROLLER_ID_BASE, Testbed
from tests.secured.helpers import PORT_OFFSET

pytestmark = pytest.mark.kafka

VOTERS = {CONTROLLER_ID_BASE, CONTROLLER_ID_BASE + 1, CONTROLLER_ID_BASE + 2}


@pytest.fixture(scope="module")
def dedicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET["dedicated"]
    tb = Testbed(tmp_path_factory.mktemp("dedicated"))
    tb.up(1, base, controllers=3, security_mode="sasl_ssl")
    try:
        yield tb
    finally:
        tb.down(purge=True)


def snapshot_of(tb: Testbed, *, safety_only: bool = True) -> ClusterSnapshot:
    props = tb.client_properties()
    assert props is not None
    with KafkaAdmin(connection(tb.require().bootstrap_servers, props), timeouts=Timeouts(6, 6)) as admin:
        return collect_snapshot(admin, "dedicated", lambda: datetime.now(UTC), safety_only=safety_only)


def read_quorum(tb: Testbed) -> Quorum | None:
    return snapshot_of(tb).quorum


def quorum(tb: Testbed) -> Quorum:
    q = read_quorum(tb)
    assert q is not None
    return q


def oracle_leader(tb: Testbed) -> int:
    out = tb.tool("kafka-metadata-quorum", ["describe", "--status"])
    assert out.returncode == 0, out.stderr
    return next(int(line.split()[-1]) for line in out.stdout.splitlines() if line.startswith("LeaderId:"))


def test_layout_and_quorum_as_kafka_reports_it(dedicated: Testbed) -> None:
    rows = {r["id"]: r for r in dedicated.status()}
    assert {i: r["role"] for i, r in rows.items()} == {0: "broker", **dict.fromkeys(VOTERS, "controller")}
    assert all(r["state"] == "up" and r["serving"] for r in rows.values())
    q = quorum(dedicated)
    assert {v.id for v in q.voters} == VOTERS
    assert {o.id for o in q.observers} == {0}  # the broker-only node observes
    assert q.leader_id in VOTERS and q.leader_id == oracle_leader(dedicated)


def test_stopped_active_controller_hands_over_and_rejoins(dedicated: Testbed) -> None:
    old = quorum(dedicated).leader_id
    assert old is not None
    dedicated.stop(old)
    try:
        new = wait_for(
            lambda: (lambda q: q.leader_id if q and q.leader_id not in (None, old) else None)(
                read_quorum(dedicated)
            ),
            timeout=60,
            what="a new active controller",
        )
        assert new in VOTERS - {old}
    finally:
        dedicated.start(old)
    rejoined = wait_for(
        lambda: (lambda q: q if all(v.lag == 0 for v in q.voters) and len(q.voters) == 3 else None)(
            quorum(dedicated)
        ),
        timeout=60,
        what="every voter caught up",
    )
    assert {v.id for v in rejoined.voters} == VOTERS


@pytest.mark.spark
def test_stopped_controller_voter_is_diagnosed_as_lagging_not_as_a_missing_broker(dedicated: Testbed) -> None:
    from kafka_health_spark.session import get_session
    from kafka_health_spark.thresholds import Thresholds

    spark = get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g")
    thresholds = Thresholds().with_overrides({"quorum_caught_up_seconds": 3})

    def diagnose() -> Diagnosis:
        return run_diagnosis(snapshot_of(dedicated, safety_only=False), None, thresholds, spark)

    healthy = diagnose()
    assert [f.check for f in healthy.findings if f.check.startswith("quorum")] == []

    leader = quorum(dedicated).leader_id
    stopped = min(VOTERS - {leader})  # a follower: the quorum keeps its leader
    dedicated.stop(stopped)
    try:
        found = wait_for(
            lambda: (lambda d: d if any(f.check == "quorum_voter_lagging" for f in d.findings) else None)(
                diagnose()
            ),
            timeout=60,
            interval=2,
            what=f"controller {stopped} reported as lagging",
        )
    finally:
        dedicated.start(stopped)
    lagging = [f for f in found.findings if f.check == "quorum_voter_lagging"]
    assert [(f.subject.broker, f.severity) for f in lagging] == [(stopped, Severity.WARNING)]  # 2 of 3 remain
    assert (
        f"Controller voter {stopped} " in lagging[0].message
        and "2 of 3 voters caught up" in lagging[0].message
    )
    assert lagging[0].evidence["caught_up_voters"] == 2
    assert not [f for f in found.findings if f.check in ("quorum_no_leader", "broker_missing")]
    # Back and caught up (read cheaply from the quorum): the finding clears.
    wait_for(
        lambda: (lambda q: q is not None and all(v.lag == 0 for v in q.voters))(read_quorum(dedicated)),
        timeout=90,
        what=f"controller {stopped} caught up again",
    )
    assert not [f for f in diagnose().findings if f.check.startswith("quorum")]


@pytest.mark.spark
def test_a_lost_quorum_is_a_critical_finding_not_just_an_incomplete_snapshot(dedicated: Testbed) -> None:
    """Two of three controllers stopped (the active one among them): the brokers still answer
    metadata, DescribeQuorum goes unanswered, and the diagnosis says the quorum has no leader
    (critical), not merely that a part could not be read."""
    from kafka_health_spark.session import get_session
    from kafka_health_spark.thresholds import Thresholds

    spark = get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g")
    leader = quorum(dedicated).leader_id
    assert leader is not None
    stopped = [leader, min(VOTERS - {leader})]
    for node in stopped:
        dedicated.stop(node)
    try:
        snap = wait_for(
            lambda: (lambda s: s if any(m.part == "quorum" for m in s.missing) else None)(
                snapshot_of(dedicated, safety_only=False)
            ),
            timeout=90,
            interval=2,
            what="DescribeQuorum unanswered",
        )
        print("unread parts:", [(m.part, m.reason[:120]) for m in snap.missing])
        assert snap.reachable and snap.brokers, snap.missing  # the brokers still answer
        found = run_diagnosis(snap, None, Thresholds(), spark)
        lost = [f for f in found.findings if f.check == "quorum_no_leader"]
        assert [f.severity for f in lost] == [Severity.CRITICAL], [f.check for f in found.findings]
        assert "did not answer" in lost[0].message
        assert not [
            f
            for f in found.findings
            if f.check == "snapshot_incomplete" and f.evidence.get("part") == "quorum"
        ]
    finally:
        for node in stopped:
            dedicated.start(node)
    wait_for(
        lambda: (lambda q: q is not None and q.leader_id in VOTERS and all(v.lag == 0 for v in q.voters))(
            read_quorum(dedicated)
        ),
        timeout=120,
        what="the quorum led and caught up again",
    )
