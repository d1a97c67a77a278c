"""Every command's `--help` renders what its source says (issue 13): no help text loses a
`[...]` to a markup parser, no bracket is left unbalanced, and every documented exit code is there."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from kafka_health.cli.main import app

COMMAND = typer.main.get_command(app)


def commands(cmd: Any = COMMAND, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, cmd
    if hasattr(cmd, "commands"):  # a group (typer ships its own click)
        for name, sub in sorted(cmd.commands.items()):
            yield from commands(sub, (*path, name))


ALL = list(commands())


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_every_command_is_covered() -> None:
    names = {" ".join(p) for p, _ in ALL}
    assert {"diagnose", "operator", "reset-offsets", "elect-leaders", "restart", "crd", "testbed"} <= names


@pytest.mark.parametrize(("path", "cmd"), ALL, ids=[" ".join(p) or "kafka-health" for p, _ in ALL])
def test_help_keeps_every_bracket_and_word(path: tuple[str, ...], cmd: Any) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.count("[") == out.count("]"), out
    rendered = squeeze(out)
    sources = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
    for text in sources:
        # click shows the first paragraph up to a `\f`; everything else must appear as written.
        text = text.split("\f")[0]
        for group in re.findall(r"\[[^\]]*\]", text):
            assert squeeze(group) in rendered, f"{group!r} lost from `{' '.join(path)} --help`"
        for word in re.findall(r"[A-Za-z0-9_./:=-]{3,}", text):
            assert squeeze(word) in rendered, f"{word!r} lost from `{' '.join(path)} --help`"


@pytest.mark.parametrize("path", [("diagnose",), ("reset-offsets",), ("elect-leaders",), ("restart",)])
def test_exit_codes_are_in_the_help(path: tuple[str, ...]) -> None:
    out = squeeze(CliRunner().invoke(app, [*path, "--help"], terminal_width=100).output)
    assert squeeze("Exit codes:") in out or squeeze("Exit:") in out
    assert "2usage" in out or "2ausage" in out, "each command says that 2 is a usage error"


def test_enumerated_options_refuse_other_values() -> None:
    result = CliRunner().invoke(app, ["operator", "-n", "x", "--log-format", "yaml"])
    assert result.exit_code == 2
    assert "yaml" in result.output and "text" in result.output and "json" in result.output
