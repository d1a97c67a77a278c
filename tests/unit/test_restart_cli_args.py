"""`kafka-health restart`: the dedicated-controller and output options refused before any
connection (no cluster, no Kubernetes needed)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kafka_health.cli.main import app

BASE = ["restart", "-b", "127.0.0.1:1", "-n", "kafka", "--statefulset", "kafka"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--controller-statefulset", "kafka-controller", "--controller-selector", "a=b"],
            "give at most one of --controller-statefulset or --controller-selector",
        ),
        (["--output", "json", "--execute"], "--output json is for the dry run"),
        (["--controller-selector", "nolabel"], "--controller-selector 'nolabel': use key=value"),
    ],
)
def test_refused_before_connecting(extra: list[str], message: str) -> None:
    result = CliRunner().invoke(app, [*BASE, *extra])
    assert result.exit_code == 3, result.output
    assert message in result.output
