"""The pydantic models reject what the API server rejects, with the field and the fix in the message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kafka_health.models.policy import (
    MAX_HISTORY,
    ActionOutcome,
    ActionRecord,
    ActionType,
    KafkaHealthPolicy,
    KafkaHealthPolicySpec,
    Mode,
    PolicyError,
    RequestState,
    append_history,
    error_messages,
    format_duration,
    parse_duration,
    parse_spec,
    parse_status,
)

from .bad_specs import BAD_SPECS, GOOD_SPECS, PYDANTIC_ONLY_BAD_SPECS, BadSpec


@pytest.mark.parametrize(("description", "spec"), GOOD_SPECS, ids=[d for d, _ in GOOD_SPECS])
def test_good_specs_are_accepted(description: str, spec: dict[str, Any]) -> None:
    parsed = parse_spec(spec)
    assert parsed.cluster.bootstrap_servers == spec["cluster"]["bootstrapServers"]


@pytest.mark.parametrize("bad", BAD_SPECS + PYDANTIC_ONLY_BAD_SPECS, ids=lambda b: b.description)
def test_bad_specs_are_rejected_naming_the_field(bad: BadSpec) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_spec(bad.spec)
    assert any(m.startswith(bad.field + ":") for m in caught.value.messages), caught.value.messages


def test_enough_kinds_of_bad_spec() -> None:
    assert len(BAD_SPECS) >= 8 and len({b.field for b in BAD_SPECS}) >= 8
    assert len({b.description for b in BAD_SPECS + PYDANTIC_ONLY_BAD_SPECS}) == len(
        BAD_SPECS + PYDANTIC_ONLY_BAD_SPECS
    )


def test_messages_say_how_to_fix() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_spec({"cluster": {"bootstrapServers": ["k:9092"]}, "diagnostics": {"interval": "5 min"}})
    (message,) = caught.value.messages
    assert message.startswith("spec.diagnostics.interval: ") and '"30s"' in message and "units" in message
    assert "spec.diagnostics.interval" in str(caught.value)


def test_defaults_are_safe() -> None:
    spec = KafkaHealthPolicySpec.model_validate({"cluster": {"bootstrapServers": ["k:9092"]}})
    assert spec.remediation.mode is Mode.OBSERVE
    assert spec.remediation.rolling_restart.require_maintenance_window is True
    assert spec.remediation.rate_limits.rolling_restart.max_actions == 2


def test_spark_settings_are_the_operators_not_a_policys() -> None:
    """Spark runs one session per process (one master, one JVM): a per-policy setting could
    not be honoured, so the field is gone and a spec that still sets it is refused by name."""
    with pytest.raises(ValidationError) as err:
        KafkaHealthPolicySpec.model_validate(
            {"cluster": {"bootstrapServers": ["k:9092"]}, "diagnostics": {"spark": {"master": "local[2]"}}}
        )
    assert "spark" in str(err.value)


def test_fields_use_camel_case_on_the_wire() -> None:
    spec = KafkaHealthPolicySpec.model_validate(GOOD_SPECS[1][1])
    dumped = spec.model_dump(mode="json", exclude_none=True)
    assert dumped["remediation"]["rollingRestart"]["pauseBetweenBrokers"] == "1m"
    assert spec.remediation.offset_resets.requests is not None
    assert [r.strategy for r in spec.remediation.offset_resets.requests] == [
        "toDatetime",
        "shiftBy",
        "byDuration",
        "earliest",
        "latest",
        "toOffset",
    ]


def test_a_false_boolean_strategy_is_not_a_strategy() -> None:
    spec = {"id": "r", "group": "g", "topics": ["t"], "earliest": False, "toOffset": 3}
    body = {
        "cluster": {"bootstrapServers": ["k:9092"]},
        "remediation": {"offsetResets": {"requests": [spec]}},
    }
    requests = parse_spec(body).remediation.offset_resets.requests
    assert requests is not None and requests[0].strategy == "toOffset"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("1h30m", 5400), ("500ms", 0.5), ("1.5h", 5400), ("0s", 0)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "-5m", "5 m", "1d", "m5", "1h-5m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_format_duration() -> None:
    assert format_duration(timedelta(hours=1, minutes=2, seconds=3)) == "1h2m3s"
    assert format_duration(timedelta(0)) == "0s"


def test_status_round_trips_and_tolerates_unknown_fields() -> None:
    now = datetime(2024, 6, 3, tzinfo=UTC)
    status = parse_status(
        {
            "observedGeneration": 3,
            "health": "Warning",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Diagnosed",
                    "lastTransitionTime": now.isoformat(),
                }
            ],
            "rollingRestarts": [{"id": "r1", "state": "Succeeded"}],
            "fieldFromANewerOperator": 1,
        }
    )
    assert status.rolling_restarts is not None and status.rolling_restarts[0].state is RequestState.SUCCEEDED
    assert status.rolling_restarts[0].state.terminal
    again = parse_status(status.model_dump(mode="json", exclude_none=True))
    assert again == status
    assert parse_status(None).health.value == "Unknown"


def test_history_is_bounded() -> None:
    now = datetime(2024, 6, 3, tzinfo=UTC)
    history: list[ActionRecord] = []
    for i in range(MAX_HISTORY + 5):
        record = ActionRecord(
            action=ActionType.OFFSET_RESET, plan_id=f"p{i}", outcome=ActionOutcome.SUCCEEDED, started_at=now
        )
        history = append_history(history, record)
    assert (
        len(history) == MAX_HISTORY
        and history[0].plan_id == "p5"
        and history[-1].plan_id == f"p{MAX_HISTORY + 4}"
    )


def test_whole_resource_parses_from_yaml_shape() -> None:
    body = {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": "main", "namespace": "kafka"},
        "spec": GOOD_SPECS[0][1],
    }
    assert KafkaHealthPolicy.model_validate(body).spec.remediation.mode is Mode.OBSERVE
    with pytest.raises(ValidationError) as caught:
        KafkaHealthPolicy.model_validate({**body, "apiVersion": "kafkahealth.io/v2"})
    assert error_messages(caught.value, root="")[0].startswith("apiVersion:")
