"""Kubernetes API conventions of the status conditions (issue 13): CamelCase reasons and the
metav1.Condition fields, and the finalizer named for the project's API group."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_health.controller import handlers
from kafka_health.models.policy import GROUP, Condition, ConditionType, RollWaitReason, WithheldReason
from kafka_health.report import status

CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*$")
DOC = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text()


def documented_condition_reasons() -> set[str]:
    section = DOC.split("## Status conditions", 1)[1].split("## Events", 1)[0]
    return set(re.findall(r"^\| `([A-Z][A-Za-z]+)` \|", section, flags=re.MULTILINE))


@pytest.mark.parametrize(
    "reason",
    sorted(
        {
            *documented_condition_reasons(),
            *(r.value for r in WithheldReason),
            *(r.value for r in RollWaitReason),
        }
        | {status.HALTED}
    ),
)
def test_reasons_are_camel_case(reason: str) -> None:
    assert CAMEL.match(reason), reason


def test_condition_has_the_metav1_fields() -> None:
    cond = Condition(
        type=ConditionType.READY,
        status="True",
        reason="Diagnosed",
        message="ok",
        last_transition_time=datetime(2026, 1, 1, tzinfo=UTC),
        observed_generation=3,
    )
    dumped = cond.model_dump(by_alias=True, mode="json")
    assert set(dumped) == {"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}
    with pytest.raises(ValueError):
        Condition.model_validate({**dumped, "reason": "not camel case"})


def test_finalizer_is_named_for_the_api_group() -> None:
    assert f"{GROUP}/finalizer" == handlers.FINALIZER
    assert handlers.LEGACY_FINALIZER == "kopf.zalando.org/KopfFinalizerMarker"
