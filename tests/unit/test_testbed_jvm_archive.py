"""Which class archive a testbed JVM maps, and when none (`testbed/jvm_archive.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_health.testbed import distribution, jvm_archive


@pytest.fixture
def kafka_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Kafka version's cache with two jars, in a temporary directory."""
    libs = tmp_path / "9.9.9" / "libs"
    libs.mkdir(parents=True)
    for jar in ("kafka-clients-9.9.9.jar", "kafka_2.13-9.9.9.jar"):
        (libs / jar).write_bytes(b"")
    monkeypatch.setattr(distribution, "kafka_home", lambda version: tmp_path / version)
    monkeypatch.setattr(distribution, "libs_dir", lambda version: tmp_path / version / "libs")
    jvm_archive.fingerprint.cache_clear()
    yield tmp_path / "9.9.9"
    jvm_archive.fingerprint.cache_clear()


def test_nodes_map_the_node_archive_and_every_tool_the_tool_archive(kafka_home: Path) -> None:
    assert jvm_archive.kind_of("kafka.Kafka") == "node"
    assert jvm_archive.kind_of("org.apache.kafka.tools.TopicCommand") == "tool"
    assert jvm_archive.kind_of("kafka.tools.StorageTool") == "tool"
    node, tool = (jvm_archive.archive_path("9.9.9", k) for k in jvm_archive.KINDS)
    assert node is not None and tool is not None and node != tool
    assert node.parent == kafka_home and node.name.startswith("classes-node-")


def test_no_option_until_the_archive_is_built(kafka_home: Path) -> None:
    assert jvm_archive.java_options("9.9.9", "kafka.Kafka") == []
    path = jvm_archive.archive_path("9.9.9", "node")
    assert path is not None
    path.write_bytes(b"")
    options = jvm_archive.java_options("9.9.9", "kafka.Kafka")
    assert options[:2] == [f"-XX:SharedArchiveFile={path}", "-Xshare:auto"]
    assert "-Xlog:all=warning:stderr" in options  # never on a tool's stdout
    assert jvm_archive.java_options("9.9.9", "org.apache.kafka.tools.TopicCommand") == []


def test_recording_writes_each_kind_to_its_own_file(kafka_home: Path, tmp_path: Path) -> None:
    options = jvm_archive.java_options("9.9.9", "kafka.Kafka", record_to=tmp_path)
    assert options[0] == f"-XX:ArchiveClassesAtExit={tmp_path / 'node.jsa'}"
    tool = jvm_archive.java_options("9.9.9", "kafka.tools.StorageTool", record_to=tmp_path)
    assert tool[0] == f"-XX:ArchiveClassesAtExit={tmp_path / 'tool.jsa'}"


def test_other_jars_get_another_archive(kafka_home: Path) -> None:
    before = jvm_archive.archive_path("9.9.9", "node")
    (kafka_home / "libs" / "kafka-tools-9.9.9.jar").write_bytes(b"")
    jvm_archive.fingerprint.cache_clear()
    assert jvm_archive.archive_path("9.9.9", "node") != before


def test_no_jars_no_archive(kafka_home: Path) -> None:
    assert jvm_archive.archive_path("1.0.0", "node") is None
    assert jvm_archive.java_options("1.0.0", "kafka.Kafka") == []
