"""A node that exits during start-up is reported with the last error lines of its log and stdout:
a test session's teardown removes the files, so the reason must travel in the error itself."""

from __future__ import annotations

from pathlib import Path

from kafka_health.testbed.exit_reason import last_error_lines


def test_the_last_error_lines_of_a_nodes_log_and_stdout(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "broker-0.log").write_text(
        "INFO starting\n"
        "ERROR [BrokerServer id=0] Fatal error during broker startup. Prepare to shutdown\n"
        "INFO shut down\n"
    )
    (tmp_path / "logs" / "broker-0.out").write_text("Exception in thread main: TimeoutException\n")
    said = last_error_lines(tmp_path / "logs", 0)
    assert said.splitlines() == [
        "ERROR [BrokerServer id=0] Fatal error during broker startup. Prepare to shutdown",
        "Exception in thread main: TimeoutException",
    ]


def test_a_node_with_no_log_says_so(tmp_path: Path) -> None:
    assert last_error_lines(tmp_path, 3) == "(no ERROR, FATAL, WARN or Exception line)"
