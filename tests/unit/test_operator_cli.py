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
        ([], "--namespace"),
    ],
)
def test_bad_flags_are_refused_naming_the_flag(args: list[str], flag: str) -> None:
    result = CliRunner().invoke(app, ["operator", *args])
    assert result.exit_code == 2
    assert flag in result.output
