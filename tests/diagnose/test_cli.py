"""`kafka-health diagnose` on a saved snapshot: outputs, exit codes, history recording."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_health.cli.main import app
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Diagnosis
from kafka_health.models.snapshot import ClusterSnapshot, LogDir
from tests.spark.builders import balanced_topic, brokers, part, snapshot

pytestmark = pytest.mark.spark


def save(tmp_path: Path, snap: ClusterSnapshot) -> Path:
    path = tmp_path / "snapshot.json"
    path.write_text(snap.model_dump_json())
    return path


def broken() -> ClusterSnapshot:
    return snapshot(
        partitions=[*balanced_topic("orders"), part("rf1", 0, 0, [0])],
        broker_list=brokers(0, 2, dead=(1,)),
        log_dirs=[LogDir(broker_id=0, path="/d", used_bytes=85, total_bytes=100)],
    )


def test_json_output_is_the_diagnosis_and_exit_code_follows_it(spark: object, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--snapshot", str(save(tmp_path, broken())), "-o", "json"])
    d = Diagnosis.model_validate_json(result.stdout)
    assert result.exit_code == d.exit_code() == 4
    assert {"broker_missing", "disk_usage", "low_replication_factor"} <= {f.check for f in d.findings}
    # Incidents beside the findings: each finding in exactly one, the broker's first.
    assert sorted(f.model_dump_json() for i in d.incidents for f in i.findings) == sorted(
        f.model_dump_json() for f in d.findings
    )
    assert d.incidents[0].id == "broker_down:1"


def test_warnings_only_exit_1_and_table_lists_them(spark: object, tmp_path: Path) -> None:
    snap = snapshot(partitions=[*balanced_topic("orders"), part("rf2", 0, 0, [0, 1])])
    path = str(save(tmp_path, snap))
    result = CliRunner().invoke(app, ["diagnose", "--snapshot", path])
    assert result.exit_code == 1, result.output
    assert "never_safe_topic:rf2" in result.stdout  # RF 2 with the default min.insync.replicas 2
    assert "topic rf2" not in result.stdout  # the member finding's subject: only with --members
    assert "warnings (exit 1)" in result.stdout
    members = CliRunner().invoke(app, ["diagnose", "--snapshot", path, "--members"])
    assert members.exit_code == 1, members.output
    assert "low_replication_factor  topic rf2: Topic rf2 has replication factor 2" in members.stdout


def test_threshold_override_changes_the_verdict(spark: object, tmp_path: Path) -> None:
    snap = snapshot(
        partitions=balanced_topic("orders"),
        log_dirs=[LogDir(broker_id=0, path="/d", used_bytes=85, total_bytes=100)],
    )
    path = str(save(tmp_path, snap))
    assert CliRunner().invoke(app, ["diagnose", "--snapshot", path]).exit_code == 1
    relaxed = CliRunner().invoke(app, ["diagnose", "--snapshot", path, "--threshold", "disk_warn_percent=86"])
    assert relaxed.exit_code == 0, relaxed.output
    assert "healthy (exit 0)" in relaxed.stdout


def test_html_report_is_self_contained_with_plots(spark: object, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["diagnose", "--snapshot", str(save(tmp_path, broken())), "-o", "html", "--out", str(out)]
    )
    assert result.exit_code == 4, result.output
    html = out.read_text()
    assert html.count('src="data:image/png;base64,') == 2  # brokers and disk; no lag without groups
    assert "http://" not in html and "https://" not in html
    assert "broker_missing" in html


def test_history_is_recorded_and_read(spark: object, tmp_path: Path) -> None:
    history = tmp_path / "history"
    snap = snapshot(partitions=balanced_topic("orders"))
    result = CliRunner().invoke(
        app, ["diagnose", "--snapshot", str(save(tmp_path, snap)), "--history", str(history), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    assert HistoryStore(history).latest(snap.cluster) == snap


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "nope=1"], "unknown threshold"),
        (["--threshold", "disk_warn_percent"], "NAME=VALUE"),
        (["--spark-master", "local[1]", "--spark-remote", "sc://x"], "at most one"),
    ],
)
def test_bad_options_are_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--snapshot", str(save(tmp_path, snapshot())), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_needs_a_cluster_or_a_snapshot() -> None:
    result = CliRunner().invoke(app, ["diagnose"], env={"KAFKA_BOOTSTRAP_SERVERS": ""})
    assert result.exit_code == 2
    assert "exactly one of" in result.output
