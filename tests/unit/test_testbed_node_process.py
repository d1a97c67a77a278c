"""One JVM per testbed node (testbed/node_process.py): the pieces that need no Kafka. The real
cluster's test starts one node from three processes at once (tests/testbed/test_real_cluster.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed import node_process


def write_pids(state_file: str, node_id: int, rounds: int) -> None:
    for i in range(rounds):
        node_process.record_pid(Path(state_file), node_id, 1000 * node_id + i)


def test_each_actor_changes_only_its_nodes_pid(tmp_path: Path) -> None:
    """Two processes record pids of different nodes 200 times each: neither write undoes the other."""
    state = tmp_path / "testbed.json"
    nodes = [{"id": i, "port": 1, "controller_port": 2, "pid": None} for i in (1, 2)]
    state.write_text(
        json.dumps({"brokers": nodes, "controllers": [], "cluster_id": "c", "kafka_version": "4.1.0"})
    )
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(write_pids, [str(state)] * 2, [1, 2], [200, 200]))
    raw = json.loads(state.read_text())
    assert [n["pid"] for n in raw["brokers"]] == [1199, 2199]
    assert raw["cluster_id"] == "c"


def test_a_node_process_is_found_by_its_config_file_alone(tmp_path: Path) -> None:
    config = tmp_path / "config" / "broker-1.properties"
    other = tmp_path / "config" / "broker-11.properties"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(other)])
    try:
        found = wait_for(
            lambda: node_process.find_node_process(other), timeout=10, interval=0.1, what="the sleeper found"
        )
        assert found == sleeper.pid, (found, sleeper.poll())
        assert node_process.find_node_process(config) is None  # broker-11 is not broker-1
        assert node_process.running_pid(None, other) == sleeper.pid
        assert node_process.running_pid(sleeper.pid, config) is None
    finally:
        sleeper.kill()
        sleeper.wait()
    assert node_process.is_node_process(sleeper.pid, other) is False
    assert node_process.find_node_process(other) is None
