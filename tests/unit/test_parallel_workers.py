"""The suite side by side (tests/parallel.py): each xdist worker its own ports and state, and the
longest files first, the same order on every worker."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from tests import parallel
from tests.compat import test_older_kafka
from tests.diagnose import test_kafka44_replication
from tests.k8s import test_controller_pods, test_controller_roll
from tests.secured.helpers import PORT_OFFSET

# How far a cluster's ports reach above its offset: client +0..+2 and controllers +100..+102;
# a secured or Kafka 3.9 cluster also has its inter-broker listener at +200..+202.
PLAIN_SPAN = 102
WITH_INTER_BROKER_SPAN = 202


def range_file(tmp_path: Path, text: str = "32768\t60999\n") -> Path:
    path = tmp_path / "ip_local_port_range"
    path.write_text(text)
    return path


def test_a_worker_gets_its_own_port_range_and_state_dir(tmp_path: Path) -> None:
    env = {
        "PYTEST_XDIST_WORKER": "gw2",
        "KAFKA_HEALTH_TEST_PORT": "50092",
        "KAFKA_HEALTH_TEST_TESTBED_DIR": "/s",
    }
    assert parallel.isolate_worker(env, range_file(tmp_path)) == 2
    assert env["KAFKA_HEALTH_TEST_PORT"] == str(50092 + 2 * parallel.WORKER_PORT_STRIDE)
    assert env["KAFKA_HEALTH_TEST_TESTBED_DIR"] == str(Path("/s") / "gw2")


def test_below_the_ephemeral_range_the_workers_stay_below_it(tmp_path: Path) -> None:
    """The default base 29092: every worker's ports (up to +3102) stay below 32768, where an
    outgoing connection never takes a restarted broker's port."""
    for index in range(4):
        env = {"PYTEST_XDIST_WORKER": f"gw{index}"}
        parallel.isolate_worker(env, range_file(tmp_path))
        port = int(env["KAFKA_HEALTH_TEST_PORT"])
        assert port == 29092 - index * parallel.WORKER_PORT_STRIDE
        assert port + parallel.WIDEST_PORT_OFFSET < 32768
        assert port > 19294  # clear of the demo cluster's ports (19092..19294)


def test_steps_up_when_the_range_is_unknown_or_the_ports_would_run_out() -> None:
    assert parallel.worker_port(29092, 1, None) == 29092 + parallel.WORKER_PORT_STRIDE
    assert parallel.worker_port(2000, 1, 32768) == 2000 + parallel.WORKER_PORT_STRIDE
    assert parallel.worker_port(29092, 0, 32768) == 29092


def test_a_serial_run_is_untouched(tmp_path: Path) -> None:
    for serial in ({}, {"KAFKA_HEALTH_TEST_PORT": "29092"}, {"PYTEST_XDIST_WORKER": "master"}):
        before = dict(serial)
        assert parallel.isolate_worker(serial, range_file(tmp_path)) is None
        assert serial == before


def test_an_unreadable_range_file_is_no_range(tmp_path: Path) -> None:
    assert parallel.ephemeral_low(range_file(tmp_path, "32768 60999")) == 32768
    assert parallel.ephemeral_low(range_file(tmp_path, "garbage")) is None
    assert parallel.ephemeral_low(tmp_path / "absent") is None


def test_no_test_cluster_reaches_the_next_workers_ports() -> None:
    """Every offset a test adds to KAFKA_HEALTH_TEST_PORT, with its cluster's span, stays below the
    stride: worker N+1's session cluster (+0..+102) is never worker N's module cluster."""
    reaches = [
        *(offset + WITH_INTER_BROKER_SPAN for offset in PORT_OFFSET.values()),
        test_older_kafka.PORT_OFFSET + WITH_INTER_BROKER_SPAN,
        test_kafka44_replication.PORT_OFFSET + PLAIN_SPAN,
        test_controller_pods.PORT_OFFSET + PLAIN_SPAN,
        test_controller_roll.PORT_OFFSET + PLAIN_SPAN,
    ]
    widest = max(reaches)
    assert widest == parallel.WIDEST_PORT_OFFSET  # the constant says what it guards
    assert (
        widest < parallel.SERVICE_PORTS.start and parallel.SERVICE_PORTS.stop <= parallel.WORKER_PORT_STRIDE
    )


def test_service_ports_come_from_the_workers_block_in_turn_skipping_bound_ones() -> None:
    env = {"KAFKA_HEALTH_TEST_PORT": "20092"}
    first = parallel.service_port(env)
    assert 20092 + parallel.SERVICE_PORTS.start <= first < 20092 + parallel.SERVICE_PORTS.stop
    with socket.socket() as held:
        nxt = (
            first + 1
            if first + 1 < 20092 + parallel.SERVICE_PORTS.stop
            else 20092 + parallel.SERVICE_PORTS.start
        )
        held.bind(("127.0.0.1", nxt))
        second = parallel.service_port(env)
    assert second not in (first, nxt)


@dataclass(frozen=True)
class Item:
    nodeid: str


def test_longest_files_first_keeping_each_files_own_order() -> None:
    items = [Item(n) for n in ("a.py::1", "a.py::2", "b.py::1", "c.py::1", "c.py::2", "d.py::1")]
    ordered = parallel.longest_files_first(items, {"c.py": 300.0, "b.py": 20.0, "gone.py": 999.0})
    assert [i.nodeid for i in ordered] == ["c.py::1", "c.py::2", "b.py::1", "a.py::1", "a.py::2", "d.py::1"]


def test_the_committed_table_reads_and_a_broken_one_orders_nothing(tmp_path: Path) -> None:
    table = parallel.load_file_seconds()
    assert table and all(name.startswith("tests/") and name.endswith(".py") for name in table)
    broken = tmp_path / "t.json"
    broken.write_text("{not json")
    assert parallel.load_file_seconds(broken) == {}
    assert parallel.load_file_seconds(tmp_path / "absent.json") == {}


def test_the_table_names_only_files_that_exist() -> None:
    repo = Path(__file__).resolve().parents[2]
    missing = [name for name in parallel.load_file_seconds() if not (repo / name).is_file()]
    assert missing == [], "files moved or removed: refresh tests/file_seconds.json"
