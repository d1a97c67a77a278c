"""A ZooKeeper-mode cluster is refused with one clear reason, not half diagnosed.

Its brokers answer metadata but list no DescribeQuorum (API key 55) in ApiVersions; kafka-python
then raises IncompatibleBrokerVersion before sending (its real version check is used here, on a
ZooKeeper-mode broker's API list). The collector turns that into the `quorum` part's
ZOOKEEPER_MODE reason, `zookeeper_mode` recognises it, and the CLI refuses (exit 3) before Spark.
"""

from __future__ import annotations

from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import DescribeQuorumRequest
from kafka.protocol.broker_version_data import BrokerVersionData
from typer.testing import CliRunner

from kafka_health.cli import diagnose as cli_diagnose
from kafka_health.cli.main import app
from kafka_health.collect.admin_calls import AdminCalls
from kafka_health.collect.results import ZOOKEEPER_MODE, AdminCallError, Timeouts
from kafka_health.collect.snapshot import zookeeper_mode
from kafka_health.models.reasons import ProblemReason
from kafka_health.models.snapshot import ClusterSnapshot, Missing

# A Kafka 3.x ZooKeeper-mode broker's ApiVersions: 0..50 and 60..68 (KRaft's 52-59 absent).
ZK_APIS = {key: (0, 3) for key in [*range(0, 51), *range(60, 69)]}
KRAFT_APIS = {**ZK_APIS, 55: (0, 2)}


class Broker:
    """kafka-python's admin client as far as DescribeQuorum goes, with its real version check."""

    def __init__(self, apis: dict[int, tuple[int, int]], *, max_version: int | None = None) -> None:
        self.versions = BrokerVersionData(api_versions=apis)
        self.max_version = max_version

    def close(self) -> None:
        pass

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return dict(self.versions.api_versions)

    def describe_metadata_quorum(self) -> dict[str, Any]:
        if self.max_version is not None:  # listed, but no version in common
            self.versions.api_version(DescribeQuorumRequest, min_version=self.max_version + 1)
        self.versions.api_version(DescribeQuorumRequest)
        return {"topics": []}


def calls_with(broker: Broker) -> AdminCalls:
    calls = AdminCalls({"bootstrap.servers": "127.0.0.1:1"}, timeouts=Timeouts(2, 2))
    calls._kp.client = lambda: broker  # type: ignore[method-assign]  # what kafka-python would bootstrap (every attempt)
    return calls


def test_a_broker_without_the_quorum_api_is_zookeeper_mode() -> None:
    calls = calls_with(Broker(ZK_APIS))
    try:
        with pytest.raises(AdminCallError) as err:
            calls.describe_quorum()
    finally:
        calls.close()
    assert err.value.reason == ZOOKEEPER_MODE
    assert "ZooKeeper-mode" in ZOOKEEPER_MODE and "KRaft clusters only" in ZOOKEEPER_MODE


def test_a_listed_quorum_api_without_a_common_version_is_not_zookeeper_mode() -> None:
    calls = calls_with(Broker(KRAFT_APIS, max_version=2))
    try:
        with pytest.raises(AdminCallError) as err:
            calls.describe_quorum()
    finally:
        calls.close()
    assert err.value.reason != ZOOKEEPER_MODE
    assert "IncompatibleBrokerVersion" in err.value.reason


def snapshot(*missing: Missing) -> ClusterSnapshot:
    return ClusterSnapshot(cluster="c", taken_at=datetime(2026, 11, 23, tzinfo=UTC), missing=list(missing))


def test_zookeeper_mode_is_only_the_quorum_part_with_that_reason() -> None:
    assert zookeeper_mode(snapshot(Missing(part="quorum", reason=ZOOKEEPER_MODE)))
    assert not zookeeper_mode(snapshot())
    assert not zookeeper_mode(snapshot(Missing(part="quorum", reason="timed out after 5.0s")))
    assert not zookeeper_mode(snapshot(Missing(part="configs:t", reason=ZOOKEEPER_MODE)))
    assert ProblemReason.KAFKA_ZOOKEEPER_MODE_UNSUPPORTED == "KafkaZooKeeperModeUnsupported"


def test_cli_diagnose_refuses_a_zookeeper_mode_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Refused before Spark is needed: no driver JVM is started (one started here would stay in
    # this test process, tuned for a one-shot CLI, under the Spark tests that share it).
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(cli_diagnose, "_start_spark", lambda **session: started.append(session) or Future())
    path = tmp_path / "zk.json"
    path.write_text(snapshot(Missing(part="quorum", reason=ZOOKEEPER_MODE)).model_dump_json())
    result = CliRunner().invoke(app, ["diagnose", "--snapshot", str(path)])
    assert result.exit_code == 3, result.output
    assert f"cannot diagnose c: {ZOOKEEPER_MODE}" in result.output
    assert len(started) == 1  # the JVM's start was asked for (in parallel) but never awaited
