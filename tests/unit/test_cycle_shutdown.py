"""A cycle that fails because the operator is stopping (Spark stopped under it) is no bug: it is
logged without a traceback. Any other failure still logs one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kafka_health.controller import cycle, observe
from kafka_health.controller.cycle import PolicyWorker
from kafka_health.controller.runtime import OperatorSettings, Runtime
from kafka_health.models.policy import KafkaHealthPolicySpec
from kafka_health.report.status import CycleOutcome

SPEC = {"cluster": {"bootstrapServers": ["k:9092"]}}


def _worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PolicyWorker:
    runtime = Runtime(OperatorSettings(history_dir=tmp_path, work_dir=tmp_path), k8s=object())  # type: ignore[arg-type]
    worker = PolicyWorker(runtime, "ns", "policy")

    def failing(worker: PolicyWorker, spec: KafkaHealthPolicySpec, secrets: Any) -> Any:
        raise RuntimeError("[CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND] Checkpoint block rdd_1_1 not found!")

    monkeypatch.setattr(cycle, "collect", failing)
    return worker


def _run(worker: PolicyWorker) -> CycleOutcome:
    """The cycle's seeing stages (collect → history → diagnose) on SPEC, as the cycle runs them."""
    return cycle.see(worker, cycle.parse(SPEC)).outcome


def test_failure_during_shutdown_is_logged_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    worker = _worker(tmp_path, monkeypatch)
    worker.runtime.stopping.set()
    with caplog.at_level(logging.INFO, logger="kafka_health.controller.observe"):
        outcome = _run(worker)
    assert outcome.problem is not None and outcome.problem.reason == "CycleFailed"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert any("the operator is stopping" in r.getMessage() for r in caplog.records)


def test_failure_while_running_logs_the_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    worker = _worker(tmp_path, monkeypatch)
    with caplog.at_level(logging.INFO, logger="kafka_health.controller.observe"):
        outcome = _run(worker)
    assert outcome.problem is not None and "CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND" in outcome.problem.message
    assert [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]


class _Windows:
    invalidated = 0

    def invalidate(self) -> None:
        self.invalidated += 1


def test_a_cycle_failing_after_the_driver_exited_reports_the_driver_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = _worker(tmp_path, monkeypatch)
    worker.windows = _Windows()  # type: ignore[assignment]
    monkeypatch.setattr(worker.runtime, "spark_driver_exit", lambda **_: 3)
    outcome = _run(worker)
    assert outcome.problem is not None and outcome.problem.reason == "SparkDriverLost"
    assert "ran out of heap" in outcome.problem.message and "--spark-driver-memory" in outcome.problem.message
    assert worker.windows is None  # its frames lived in the dead JVM
    monkeypatch.setattr(worker.runtime, "spark_driver_exit", lambda **_: -9)
    assert "SIGKILL" in (_run(worker).problem or pytest.fail("no problem")).message


@pytest.mark.parametrize("stuck", [False, True])
def test_a_diagnosis_past_its_deadline_drops_its_windows_and_a_stuck_one_fails_liveness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stuck: bool
) -> None:
    from kafka_health._kits.deadline import DeadlineExceeded

    worker = _worker(tmp_path, monkeypatch)
    windows = _Windows()
    worker.windows = windows  # type: ignore[assignment]
    outcome = observe.timed_out(worker, DeadlineExceeded(90, stuck=stuck), windows)  # type: ignore[arg-type]
    assert outcome.problem is not None and outcome.problem.reason == "DiagnosisTimedOut"
    assert "--diagnosis-timeout of 1m30s" in outcome.problem.message
    assert worker.windows is None
    # A cancelled diagnosis has stopped: its kept frames are freed. A stuck one still uses them.
    assert windows.invalidated == (0 if stuck else 1)
    assert (worker.runtime.unresponsive is not None) is stuck
    assert ("/healthz" in outcome.problem.message) is stuck


def test_only_a_lost_connection_waits_for_the_driver_to_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = _worker(tmp_path, monkeypatch)
    waits: list[float] = []

    def exit_code(*, wait_s: float = 0.0) -> None:
        waits.append(wait_s)

    monkeypatch.setattr(worker.runtime, "spark_driver_exit", exit_code)
    _run(worker)  # a RuntimeError: no wait, still CycleFailed

    def lost(worker: PolicyWorker, spec: KafkaHealthPolicySpec, secrets: Any) -> Any:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as exc:
            raise RuntimeError("an error occurred while calling o69.collectToPython") from exc

    monkeypatch.setattr(cycle, "collect", lost)
    outcome = _run(worker)
    assert waits == [0.0, 10.0]
    assert outcome.problem is not None and outcome.problem.reason == "CycleFailed"  # it did not exit
