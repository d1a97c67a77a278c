"""Input that cannot lie (issue 12, item 4): every value the schema accepts means what it says
to the clients that use it. The rejected values themselves are in bad_specs.py (checked by the
models here and by a real API server in tests/k8s/test_operator_e2e.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from kafka_health.diagnose.from_policy import thresholds_for
from kafka_health.models.policy import (
    DURATION_MAX,
    DURATION_PATTERN,
    EPOCH,
    INT64_MAX,
    KafkaHealthPolicySpec,
    epoch_millis_at_or_after,
    parse_duration,
    parse_spec,
)
from kafka_health.plan.windows import next_opening
from kafka_health.resources.crd import crd, model_schema

MINIMAL = {"cluster": {"bootstrapServers": ["a:9092"]}}


def _walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, child in (node.get("properties") or {}).items():
        yield from _walk(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{path}[]")


def spec_schema() -> dict[str, Any]:
    return crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def test_parse_duration_overflow_is_a_value_error_not_a_crash() -> None:
    with pytest.raises(ValueError, match="too long"):
        parse_duration("99999999999h")


def test_every_duration_field_has_a_maximum_on_the_api_server() -> None:
    durations = [
        (p, n) for p, n in _walk(spec_schema()) if n.get("pattern") == f"^{DURATION_PATTERN.strip('^$')}$"
    ]
    assert len(durations) >= 15
    for path, node in durations:
        rules = [v["rule"] for v in node.get("x-kubernetes-validations", [])]
        assert any("duration(self) <= duration(" in r for r in rules), path


def test_every_spec_integer_has_an_upper_bound_in_the_models() -> None:
    """The CRD leaves out int64 bounds (its integers are int64; the API server reads a bound of
    2**63 - 1 as a float and overflows); the models state every bound."""
    schema = model_schema(KafkaHealthPolicySpec, nullable=False)
    integers = [(p, n) for p, n in _walk(schema) if n.get("type") == "integer"]
    assert len(integers) >= 20
    for path, node in integers:
        assert "maximum" in node or "le" in node or _is_int64(path), path


def _is_int64(path: str) -> bool:
    limits = {
        ".diagnostics.checks.consumerLag.warningLag",
        ".diagnostics.checks.consumerLag.criticalLag",
        ".diagnostics.checks.quorum.maxVoterLag",
        ".remediation.offsetResets.requests[].toOffset",
        ".remediation.offsetResets.requests[].shiftBy",
        ".remediation.transactionAborts.requests[].startOffset",
    }
    return path in limits


@pytest.mark.parametrize("value", [INT64_MAX + 1])
def test_the_models_refuse_integers_beyond_int64(value: int) -> None:
    spec = {**MINIMAL, "diagnostics": {"checks": {"quorum": {"maxVoterLag": value}}}}
    with pytest.raises(ValueError, match="maxVoterLag"):
        parse_spec(spec)


def test_no_bound_in_the_crd_overflows_the_api_servers_float64() -> None:
    for path, node in _walk(spec_schema()):
        for bound in ("minimum", "maximum"):
            if bound in node:
                assert abs(node[bound]) < 2**53, (path, node[bound])


@pytest.mark.parametrize("text", ["1s", "5m"])
def test_request_timeout_bounds_are_what_librdkafka_accepts(text: str) -> None:
    """Each bound, as the admin client gets it (socket.timeout.ms), creates a client."""
    spec = parse_spec({"cluster": {"bootstrapServers": ["127.0.0.1:1"], "requestTimeout": text}})
    ms = int(parse_duration(spec.cluster.request_timeout).total_seconds() * 1000)
    client = AdminClient({"bootstrap.servers": "127.0.0.1:1", "socket.timeout.ms": ms})
    assert client is not None


def test_beyond_the_request_timeout_bound_librdkafka_refuses() -> None:
    """Why the bound is 5m: one millisecond more and librdkafka refuses the configuration."""
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException, match=r"socket\.timeout\.ms"):
        AdminClient({"bootstrap.servers": "127.0.0.1:1", "socket.timeout.ms": 300_001})


def test_the_longest_by_duration_stays_after_1970() -> None:
    """byDuration is capped at DURATION_MAX, so now - byDuration is never a negative timestamp
    (until the year 2980)."""
    assert datetime(2026, 11, 23, tzinfo=UTC) - parse_duration(DURATION_MAX) > EPOCH


def test_history_retention_is_used_as_whole_days() -> None:
    spec = parse_spec({**MINIMAL, "diagnostics": {"historyRetention": "48h"}})
    assert parse_duration(spec.diagnostics.history_retention).total_seconds() / 86400 == 2


def test_the_one_window_reaches_spark_unchanged() -> None:
    windows = {"window": "40m"}
    spec = parse_spec(
        {
            **MINIMAL,
            "diagnostics": {
                "checks": {"leaderFlapping": windows, "consumerLag": windows, "rebalanceStorm": windows}
            },
        }
    )
    assert thresholds_for(spec.diagnostics.checks).window_minutes == 40


def test_a_cron_schedule_on_29_february_is_valid() -> None:
    """It fires every 4 years: rare, but it fires."""
    window = {"schedule": "0 0 29 2 *", "duration": "1h"}
    spec = parse_spec({**MINIMAL, "remediation": {"maintenanceWindows": [window]}})
    (parsed,) = spec.remediation.maintenance_windows or []
    assert next_opening(parsed, datetime(2027, 1, 1, tzinfo=UTC)) == datetime(2028, 2, 29, tzinfo=UTC)
    assert next_opening(parsed, datetime(2028, 2, 29, 0, 1, tzinfo=UTC)) == datetime(2032, 2, 29, tzinfo=UTC)


def test_why_r_is_refused_croniter_picks_a_new_random_minute_each_time() -> None:
    from croniter import croniter

    minutes = {croniter("R 2 * * *", datetime(2026, 1, 1)).get_next(datetime).minute for _ in range(50)}
    assert len(minutes) > 1


def test_month_and_day_names_with_r_or_h_are_not_taken_for_random_values() -> None:
    """MAR and THU are names, not croniter's R and H: the window opens on the Thursdays of March
    and April at 02:00, the same at every evaluation."""
    window = {"schedule": "0 2 * MAR,APR THU", "duration": "1h"}
    spec = parse_spec({**MINIMAL, "remediation": {"maintenanceWindows": [window]}})
    (parsed,) = spec.remediation.maintenance_windows or []
    starts = []
    now = datetime(2027, 1, 1, tzinfo=UTC)
    for _ in range(10):
        start = next_opening(parsed, now)
        assert start is not None
        starts.append(start)
        now = start
    assert [s.date().isoformat() for s in starts] == [
        "2027-03-04", "2027-03-11", "2027-03-18", "2027-03-25",
        "2027-04-01", "2027-04-08", "2027-04-15", "2027-04-22", "2027-04-29",
        "2028-03-02",
    ]  # fmt: skip
    assert all(s.weekday() == 3 and (s.hour, s.minute) == (2, 0) for s in starts)
    assert (
        starts[0]
        == datetime(2027, 3, 4, 2, 0, tzinfo=UTC)
        == next_opening(parsed, datetime(2027, 1, 1, tzinfo=UTC))
    )


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("2024-06-01T00:00:00Z", 1_717_200_000_000),
        ("2024-06-01T00:00:00.123Z", 1_717_200_000_123),
        ("2024-06-01T00:00:00.123000Z", 1_717_200_000_123),
        ("2024-06-01T00:00:00.0005Z", 1_717_200_000_001),  # not ...000: that ms is before the time
        ("2024-06-01T00:00:00.999999Z", 1_717_200_001_000),
        ("2024-06-01T02:00:00.0001+02:00", 1_717_200_000_001),
    ],
)
def test_a_time_is_looked_up_at_the_first_whole_millisecond_at_or_after_it(text: str, ms: int) -> None:
    assert epoch_millis_at_or_after(datetime.fromisoformat(text)) == ms


def test_whole_milliseconds_are_exact_over_a_second_of_them() -> None:
    base = datetime(2024, 6, 1, tzinfo=UTC)
    for n in range(1000):
        assert epoch_millis_at_or_after(base + timedelta(milliseconds=n)) == 1_717_200_000_000 + n
