"""`testbed up --controllers 3`: dedicated KRaft controllers beside broker-only nodes, with the
authorizer (SASL_SSL); the collector reads controller-only voters as Kafka's own tool does, and a
stopped active controller hands the quorum over and rejoins."""

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
from kafka_health.models.snapshot import Quorum
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


def read_quorum(tb: Testbed) -> Quorum | None:
    props = tb.client_properties()
    assert props is not None
    with KafkaAdmin(connection(tb.require().bootstrap_servers, props), timeouts=Timeouts(6, 6)) as admin:
        snap = collect_snapshot(admin, "dedicated", lambda: datetime.now(UTC), safety_only=True)
    return snap.quorum


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
