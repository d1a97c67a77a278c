"""Reasons are enums in one module (kafka_health.models.reasons), each documented in
docs/observability.md: a reason emitted by the code that the doc does not list fails here, and so
does a reason the doc lists that the code does not have."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import pytest

from kafka_health.models import policy, reasons
from kafka_health.models.policy import ConditionStatus, ConditionType
from kafka_health.models.reasons import (
    BlockerRule,
    EventReason,
    ProblemReason,
    RollWaitReason,
    UnknownReason,
    WithheldReason,
    all_reasons,
    checked,
    reason_enums,
)
from kafka_health.report import events, status

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "observability.md"
SOURCES = REPO / "operator" / "kafka_health"

CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*$")
SNAKE = re.compile(r"^[a-z]+(?:_[a-z]+)*$")


def documented_reasons(text: str) -> set[str]:
    """The first cell's `names` of every row of every table whose header's first cell is
    `reason` or `rule` (a row may name several: `ElectionSucceeded` / `ElectionFailed`)."""
    found: set[str] = set()
    in_table = False
    for line in text.splitlines():
        if not line.startswith("|"):
            in_table = False
            continue
        first = line.split("|")[1].strip()
        if first in ("reason", "rule"):
            in_table = True
            continue
        if in_table and not set(first) <= set("-: "):
            found.update(re.findall(r"`([A-Za-z_]+)`", first))
    return found


def test_the_doc_parser_reads_rows_with_several_reasons_and_skips_other_tables() -> None:
    text = "\n".join(
        [
            "| type | meaning |",
            "|---|---|",
            "| `Ready` | not a reason |",
            "",
            "| reason | type |",
            "|---|---|",
            "| `A` / `B` | x |",
            "| `C`, `D` | y `NotThisOne` |",
            "text",
            "| `E` | after the table: not read |",
        ]
    )
    assert documented_reasons(text) == {"A", "B", "C", "D"}


def test_every_reason_in_the_code_is_documented_and_every_documented_one_exists() -> None:
    documented = documented_reasons(DOC.read_text())
    code = set(all_reasons())
    assert code - documented == set(), "reasons not in docs/observability.md"
    assert documented - code == set(), "documented reasons that kafka_health.models.reasons lacks"


def test_reason_enums_are_found_without_registration() -> None:
    found = set(reason_enums())
    assert {ProblemReason, WithheldReason, RollWaitReason, EventReason, BlockerRule} <= found
    assert StrEnum not in found


@pytest.mark.parametrize("value", sorted(all_reasons()))
def test_reasons_are_camel_case_and_rules_snake_case(value: str) -> None:
    enums = all_reasons()[value]
    if enums == [BlockerRule]:
        assert SNAKE.match(value), value
    else:
        assert CAMEL.match(value), value
        assert BlockerRule not in enums


def test_wire_values_are_unchanged() -> None:
    """The values are API: a few that alerts and scripts match on, pinned."""
    assert WithheldReason.CLUSTER_LOCKED == "ClusterLocked"
    assert RollWaitReason.WAITING_FOR_SAFETY == "WaitingForSafety"
    assert ProblemReason.KAFKA_UNREACHABLE == "KafkaUnreachable"
    assert EventReason.BROKER_RESTARTED == "BrokerRestarted"
    assert status.HALTED == "RemediationHalted"
    assert BlockerRule.MIN_ISR == "min_isr"


def test_old_import_paths_still_work() -> None:
    assert policy.WithheldReason is WithheldReason
    assert policy.RollWaitReason is RollWaitReason


def test_an_unknown_reason_raises_under_the_test_suite() -> None:
    assert checked("FindingAppeared") == "FindingAppeared"
    with pytest.raises(UnknownReason, match="NoSuchReason"):
        checked("NoSuchReason")


def test_an_unknown_reason_is_logged_not_raised_in_production(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(reasons.STRICT_ENV, raising=False)
    assert checked("NoSuchReason") == "NoSuchReason"
    assert "NoSuchReason" in caplog.text


def test_conditions_and_events_refuse_an_undocumented_reason() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(UnknownReason):
        status.set_condition([], ConditionType.READY, ConditionStatus.TRUE, "Undocumented", "m", now, 1)
    posted: list[str] = []

    class Body(dict[str, str]):
        pass

    with pytest.raises(UnknownReason):
        events.post(Body(), events.EventSpec("Normal", "Undocumented", "m"))
    assert posted == []


# ------------------------------------------------------------------------------------------
# Static: every string literal passed as a reason in the operator's code is a known reason.

# callee name -> (position of the reason argument, keyword name)
EMITTERS: dict[str, tuple[int | None, str]] = {
    "on_event": (1, "reason"),
    "EventSpec": (1, "reason"),
    "Problem": (0, "reason"),
    "set_condition": (3, "reason"),
    "cond": (2, "reason"),
    "BrokerPodsError": (0, "reason"),
    "CredentialsError": (0, "reason"),
    "Hold": (0, "reason"),
    "Blocker": (None, "rule"),
    "WithheldAction": (None, "reason"),
    "event": (None, "reason"),  # kopf.event
}

FORMATTED = {
    # (file, source of the f-string) -> the values it can take, each checked below.
    (
        "controller/short_actions.py",
        "f'OffsetReset{state}'",
    ): [f"OffsetReset{s}" for s in ("Succeeded", "Waiting", "Failed")],
}


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def emitted_literals() -> list[tuple[str, int, str, ast.expr]]:
    """(file, line, callee, reason expression) for every emitter call with a literal reason."""
    out = []
    for path in sorted(SOURCES.rglob("*.py")):
        if "testbed" in path.parts:
            continue  # the testbed plays kubelet: its reasons are Kubernetes', not ours
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _callee(node)
            if name not in EMITTERS:
                continue
            position, keyword = EMITTERS[name]
            args: list[ast.expr] = []
            if position is not None and len(node.args) > position:
                args.append(node.args[position])
            args += [k.value for k in node.keywords if k.arg == keyword]
            for arg in args:
                if isinstance(arg, ast.Constant | ast.JoinedStr):
                    out.append((str(path.relative_to(SOURCES)), node.lineno, name, arg))
    return out


def test_the_scan_finds_the_emitters() -> None:
    """Guards the scan itself: it sees the known literal and f-string call sites."""
    found = emitted_literals()
    assert any(isinstance(e, ast.JoinedStr) for _, _, _, e in found)


def test_every_literal_reason_in_the_code_is_a_known_reason() -> None:
    known = all_reasons()
    unknown = []
    for file, line, name, expr in emitted_literals():
        if isinstance(expr, ast.Constant):
            if expr.value not in known:
                unknown.append(f"{file}:{line}: {name}(... {expr.value!r} ...)")
            continue
        key = (file, ast.unparse(expr))
        if key not in FORMATTED:
            unknown.append(f"{file}:{line}: {name}(... {ast.unparse(expr)} ...): use an enum member")
            continue
        unknown += [f"{file}:{line}: {v}" for v in FORMATTED[key] if v not in known]
    assert unknown == []


def test_offset_reset_events_take_only_the_listed_states() -> None:
    """controller/short_actions.py posts f"OffsetReset{state}" with the state of the request's result."""
    from kafka_health.remediate.offset_reset import OffsetResetOutcome, ResetState

    states = {
        OffsetResetOutcome(state=s, group="g", request_id="r", message="m").request_state().value
        for s in ResetState
    }
    assert {f"OffsetReset{s}" for s in states} == set(
        FORMATTED[("controller/short_actions.py", "f'OffsetReset{state}'")]
    )
