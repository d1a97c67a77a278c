"""`kafka-health operator` refuses bad flags before it touches Kubernetes, naming the flag."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_health.cli.main import app


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--namespace", "x", "--spark-driver-memory", "6 GB"], "--spark-driver-memory"),
        (["--namespace", "x", "--spark-driver-memory", "0g"], "--spark-driver-memory"),
        (["--namespace", "x", "--log-format", "yaml"], "--log-format"),
        (["--namespace", "x", "--diagnosis-timeout", "10 minutes"], "--diagnosis-timeout"),
        (["--namespace", "x", "--diagnosis-timeout", "500ms"], "--diagnosis-timeout"),
        ([], "--namespace"),
    ],
)
def test_bad_flags_are_refused_naming_the_flag(args: list[str], flag: str) -> None:
    result = CliRunner().invoke(app, ["operator", *args])
    assert result.exit_code == 2
    assert flag in result.output


def test_the_diagnosis_timeout_reaches_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def run(**kwargs: object) -> None:
        seen.update(kwargs)

    monkeypatch.setattr("kafka_health.controller.app.run", run)
    result = CliRunner().invoke(app, ["operator", "--namespace", "x", "--diagnosis-timeout", "2m30s"])
    assert result.exit_code == 0, result.output
    assert seen["settings"].diagnosis_timeout_s == 150  # type: ignore[attr-defined]
    result = CliRunner().invoke(
        app, ["operator", "--namespace", "x"], env={"KAFKA_HEALTH_DIAGNOSIS_TIMEOUT": "90s"}
    )
    assert seen["settings"].diagnosis_timeout_s == 90  # type: ignore[attr-defined]
