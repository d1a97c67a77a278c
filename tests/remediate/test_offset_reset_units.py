"""Pure parts of the offset reset executor and CLI: names, saved-offset formats, outcome mapping."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest

from kafka_health.cli.remediation_cli import parse_cli_datetime, parse_cli_duration
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.results import GroupDescription, Partial
from kafka_health.models.policy import OffsetResetEntry, OffsetResetResult, RequestState
from kafka_health.models.snapshot import GroupOffset, PartitionOffsets
from kafka_health.plan.offset_reset_plan import OffsetResetPlan
from kafka_health.remediate.offset_reset import (
    FileStore,
    OffsetResetOutcome,
    PartitionReset,
    ResetState,
    SavedOffsets,
    SavedPartition,
    apply_offset_reset,
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


# ------------------------------------------------------------------------------------------
# A consumer joining between the Empty check and the alter (the executor's logic, fake admin;
# tests/remediate/test_offset_reset.py makes the same race happen on the real cluster).

GROUP, TOPIC = "orders", "t"
KEYS = [(TOPIC, 0), (TOPIC, 1)]


class FakeAdmin:
    """Answers like KafkaAdmin: an Empty group at offsets 5, logs [0, 10], and `alter` as given."""

    def __init__(self, alter: Callable[[dict[tuple[str, int], int]], Partial[tuple[str, int], int]]):
        self.alter, self.committed = alter, {k: 5 for k in KEYS}

    def describe_groups(self, groups: list[str]) -> Partial[str, GroupDescription]:
        return Partial(values={GROUP: GroupDescription(GROUP, "Empty", [], [])})

    def group_offsets(self, groups: list[str]) -> Partial[str, list[GroupOffset]]:
        return Partial(
            values={
                GROUP: [
                    GroupOffset(topic=t, partition=p, committed_offset=o)
                    for (t, p), o in self.committed.items()
                ]
            }
        )

    def list_offsets(self, keys: list[tuple[str, int]]) -> Partial[tuple[str, int], PartitionOffsets]:
        return Partial(
            values={
                k: PartitionOffsets(topic=k[0], partition=k[1], log_start_offset=0, log_end_offset=10)
                for k in keys
            }
        )

    def alter_group_offsets(
        self, group: str, targets: dict[tuple[str, int], int]
    ) -> Partial[tuple[str, int], int]:
        answer = self.alter(dict(targets))
        self.committed.update(answer.values)
        return answer


class MemoryStore:
    def __init__(self, *, discard_fails: bool = False) -> None:
        self.records: dict[str, dict[str, str]] = {}
        self.discard_fails = discard_fails

    def describe(self, name: str) -> str:
        return f"record {name}"

    def load(self, name: str) -> dict[str, str] | None:
        return self.records.get(name)

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
        if name in self.records:
            raise FileExistsError(name)
        self.records[name] = data

    def discard(self, name: str) -> None:
        if self.discard_fails:
            raise OSError("read-only")
        del self.records[name]


MEMBERS = "UNKNOWN_MEMBER_ID (25): The coordinator is not aware of this member."


def refuse_all(targets: dict[tuple[str, int], int]) -> Partial[tuple[str, int], int]:
    return Partial(errors=dict.fromkeys(targets, MEMBERS))


def refuse_whole_request(targets: dict[tuple[str, int], int]) -> Partial[tuple[str, int], int]:
    raise AdminCallError("alter_consumer_group_offsets", MEMBERS)


def refuse_one(targets: dict[tuple[str, int], int]) -> Partial[tuple[str, int], int]:
    return Partial(values={KEYS[0]: targets[KEYS[0]]}, errors={KEYS[1]: MEMBERS})


def time_out(targets: dict[tuple[str, int], int]) -> Partial[tuple[str, int], int]:
    raise AdminCallError("alter_consumer_group_offsets", "timed out after 10s")


def reset_plan() -> OffsetResetPlan:
    entries = [OffsetResetEntry(topic=t, partition=p, current=5, target=0) for t, p in KEYS]
    return OffsetResetPlan(request_id="r1", group=GROUP, strategy="earliest", entries=entries)


def run_reset(
    alter: Callable[..., Partial[tuple[str, int], int]], store: MemoryStore
) -> tuple[OffsetResetOutcome, FakeAdmin]:
    admin = FakeAdmin(alter)
    outcome = apply_offset_reset(
        cast(KafkaAdmin, admin), store, reset_plan(), saved_name="r1", clock=lambda: NOW
    )
    return outcome, admin


@pytest.mark.parametrize("alter", [refuse_all, refuse_whole_request], ids=["per-partition", "whole-request"])
def test_member_joined_meanwhile_waits_and_keeps_the_id(
    alter: Callable[..., Partial[tuple[str, int], int]],
) -> None:
    store = MemoryStore()
    outcome, admin = run_reset(alter, store)
    assert outcome.state is ResetState.NOT_EMPTY, outcome.message
    assert "joined" in outcome.message and "nothing changed" in outcome.message
    assert MEMBERS in outcome.message  # Kafka's own refusal is quoted
    assert outcome.request_state() is RequestState.WAITING
    assert not outcome.changed
    assert store.records == {}  # the record is gone: the same id runs once the group is Empty
    assert admin.committed == {k: 5 for k in KEYS}
    # ...and it does run, once.
    again, admin = run_reset(lambda t: Partial(values=dict(t)), store)
    assert again.state is ResetState.APPLIED, again.message
    assert admin.committed == {k: 0 for k in KEYS} and "r1" in store.records


def test_partial_refusal_keeps_the_record_and_fails() -> None:
    store = MemoryStore()
    outcome, admin = run_reset(refuse_one, store)
    assert outcome.state is ResetState.FAILED
    assert "r1" in store.records  # one partition changed: the id is used, the offsets before kept
    assert admin.committed[KEYS[0]] == 0 and admin.committed[KEYS[1]] == 5
    assert [p.ok for p in outcome.partitions] == [True, False]


def test_other_alter_errors_keep_the_record() -> None:
    store = MemoryStore()
    outcome, _ = run_reset(time_out, store)
    assert outcome.state is ResetState.FAILED and "timed out" in outcome.message
    assert "r1" in store.records  # a timeout may have applied: never run twice


def test_record_that_cannot_be_removed_uses_up_the_id() -> None:
    store = MemoryStore(discard_fails=True)
    outcome, admin = run_reset(refuse_all, store)
    assert outcome.state is ResetState.FAILED
    assert "could not be removed" in outcome.message and "new id" in outcome.message
    assert "r1" in store.records and admin.committed == {k: 5 for k in KEYS}
    assert run_reset(lambda t: Partial(values=dict(t)), store)[0].state is ResetState.ALREADY_APPLIED


def test_file_store_discards_only_what_it_created(tmp_path: Path) -> None:
    path = tmp_path / "before.json"
    earlier = FileStore(path)
    earlier.create("x", {"offsets.json": "{}", "rollback.csv": ""}, {})
    with pytest.raises(ValueError, match="not created by this run"):
        FileStore(path).discard("x")  # another run's saved offsets are never deleted
    assert path.exists() and earlier.csv_path.exists()
    earlier.discard("x")
    assert not path.exists() and not earlier.csv_path.exists()


def _failed(message: str, *errors: tuple[str, str | None]) -> OffsetResetOutcome:
    return OffsetResetOutcome(
        state=ResetState.FAILED,
        group="billing",
        request_id="r1",
        message=message,
        partitions=[
            PartitionReset(topic=topic, partition=i, before=5, target=0, error=error)
            for i, (topic, error) in enumerate(errors)
        ],
    )


def test_a_refused_reset_keeps_what_to_grant_in_its_own_result_and_history() -> None:
    """The policy's summary is the latest cycle's and a later cycle replaces it ("nothing to
    do"): the request's result and its history entry lead with the missing ACL themselves."""
    outcome = _failed(
        "reset offsets of group billing: 1 of 1 partition(s) failed",
        ("orders", "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."),
    )
    result = outcome.result(None, NOW)
    assert result.message.startswith("authorization denied: the principal lacks READ on TOPIC orders")
    assert result.message.endswith("reset offsets of group billing: 1 of 1 partition(s) failed")
    record = outcome.record(plan_id="p", started_at=NOW, finished_at=NOW, generation=1, breaker_reset=None)
    assert record is not None and "lacks READ on TOPIC orders" in record.message
    # A failure that is not authorization keeps its message as it is.
    other = _failed("boom", ("orders", "UNKNOWN_MEMBER_ID: member left"))
    assert other.result(None, NOW).message == "boom"


def test_a_reset_refused_for_authorization_names_the_missing_acl() -> None:
    """The operator's KafkaAuthorizationDenied text: READ on the GROUP or on the TOPIC for the
    commit (a partition's error), DESCRIBE on the GROUP for the live read (the whole call)."""
    group = _failed(
        "reset offsets of billing: 0 of 2 partitions",
        ("orders", None),
        ("orders", "GROUP_AUTHORIZATION_FAILED: Group authorization failed."),
    ).denied()
    assert group is not None and "lacks READ on GROUP billing" in group
    assert "--operation Read --group billing" in group
    topic = _failed("x", ("orders", "TOPIC_AUTHORIZATION_FAILED: Topic authorization failed.")).denied()
    assert topic is not None and "lacks READ on TOPIC orders" in topic
    live = _failed(
        "could not read the group live: describe_consumer_groups: GROUP_AUTHORIZATION_FAILED; nothing changed"
    ).denied()
    assert live is not None and "lacks DESCRIBE on GROUP billing" in live
    # Not authorization, or not failed: nothing to grant.
    assert _failed("x", ("orders", "UNKNOWN_MEMBER_ID: member left")).denied() is None
    applied = _failed("x", ("orders", "GROUP_AUTHORIZATION_FAILED")).model_copy(
        update={"state": ResetState.APPLIED}
    )
    assert applied.denied() is None
