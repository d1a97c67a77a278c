"""Pure parts of the offset reset executor and CLI: names, saved-offset formats, outcome mapping."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafka_health.cli.remediation_cli import parse_cli_datetime, parse_cli_duration
from kafka_health.models.policy import OffsetResetResult, RequestState
from kafka_health.remediate.offset_reset import (
    FileStore,
    OffsetResetOutcome,
    PartitionReset,
    ResetState,
    SavedOffsets,
    SavedPartition,
    saved_offsets_name,
)

NOW = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)


def test_configmap_names_are_valid_and_distinct() -> None:
    assert saved_offsets_name("orders", "2026-06-01-rewind") == "khp-orders-offsets-2026-06-01-rewind"
    a, b = saved_offsets_name("orders", "a_b"), saved_offsets_name("orders", "a-b")
    assert a != b and "_" not in a and a.startswith("khp-orders-offsets-a-b-")
    long = saved_offsets_name("p" * 250, "x")
    assert len(long) <= 253


def test_saved_offsets_round_trip_and_csv(tmp_path: Path) -> None:
    saved = SavedOffsets(
        group="g",
        taken_at=NOW,
        request_id="r1",
        partitions=[
            SavedPartition(topic="orders", partition=0, offset=5),
            SavedPartition(topic="orders", partition=1, offset=None),
        ],
    )
    assert saved.to_csv() == "orders,0,5\n"  # nothing committed before: nothing to restore
    data = saved.data()
    assert SavedOffsets.from_data(data) == saved
    csv_file = tmp_path / "x.csv"
    csv_file.write_text("orders,0,5\n\norders,2,9\n")
    assert [(p.partition, p.offset) for p in SavedOffsets.from_file(csv_file, "g").partitions] == [
        (0, 5),
        (2, 9),
    ]
    with pytest.raises(ValueError, match="group"):
        SavedOffsets.from_file(csv_file)
    csv_file.write_text("orders,zero,5\n")
    with pytest.raises(ValueError, match="line 1"):
        SavedOffsets.from_file(csv_file, "g")


def test_file_store_never_overwrites(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "saved.json")
    assert store.load("x") is None
    store.create("x", {"offsets.json": "{}", "rollback.csv": "t,0,1\n"}, {})
    assert (tmp_path / "saved.csv").read_text() == "t,0,1\n"
    with pytest.raises(FileExistsError):
        store.create("x", {"offsets.json": "{}", "rollback.csv": ""}, {})


@pytest.mark.parametrize(
    ("state", "request_state", "recorded"),
    [
        (ResetState.APPLIED, RequestState.SUCCEEDED, "Succeeded"),
        (ResetState.ALREADY_APPLIED, RequestState.SUCCEEDED, None),
        (ResetState.NOT_EMPTY, RequestState.WAITING, None),
        (ResetState.FAILED, RequestState.FAILED, "Failed"),
    ],
)
def test_outcome_to_status(state: ResetState, request_state: RequestState, recorded: str | None) -> None:
    outcome = OffsetResetOutcome(
        state=state,
        group="g",
        request_id="r1",
        message="m",
        saved_offsets="ConfigMap ns/khp-p-offsets-r1",
        partitions=[PartitionReset(topic="t", partition=0, before=5, target=0, after=0)],
    )
    update = outcome.request_update(waiting_since=NOW)
    assert update.state is request_state and update.id == "r1"
    assert update.waiting_since == (NOW if state is ResetState.NOT_EMPTY else None)
    previous = OffsetResetResult(id="r1", state=RequestState.RUNNING, group="g", waiting_since=NOW)
    result = outcome.result(previous, NOW)
    assert result.state is request_state
    assert result.saved_offsets == "ConfigMap ns/khp-p-offsets-r1"
    assert result.finished_at == (NOW if request_state.terminal else None)
    record = outcome.record(
        plan_id="reset-1", started_at=NOW, finished_at=NOW, generation=2, breaker_reset=None
    )
    assert (record.outcome if record else None) == recorded


def test_cli_durations_and_datetimes() -> None:
    assert parse_cli_duration("PT30M") == "30m"
    assert parse_cli_duration("P1DT2H") == "26h"
    assert parse_cli_duration("30m") == "30m"
    assert parse_cli_datetime("2026-06-01T00:00:00") == datetime(2026, 6, 1, tzinfo=UTC)
    assert parse_cli_datetime("2026-06-01T02:00:00+02:00") == datetime(2026, 6, 1, tzinfo=UTC)
