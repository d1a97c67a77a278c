"""The rules of a share group's (KIP-932) offset reset that need no cluster: which groups may be
reset, which strategies and group flags the command line takes, the saved offsets' kind, how
Kafka's AlterShareGroupOffsets answer is read, and the executor on a share group whose consumer
joined between the Empty check and the alter (tests/remediate/test_share_group_reset.py shows
the rest on the real cluster, against kafka-share-groups)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from kafka_health.cli.main import app
from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import Partial
from kafka_health.collect.share_groups import _altered
from kafka_health.models.policy import OffsetResetEntry
from kafka_health.models.snapshot import ConsumerGroup, GroupOffset, PartitionOffsets
from kafka_health.plan.offset_reset_plan import OffsetResetPlan, share_group_refusal
from kafka_health.remediate.kafka_errors import KafkaErrorCode, code_of
from kafka_health.remediate.offset_reset import (
    SHARE,
    ResetState,
    SavedOffsets,
    SavedPartition,
    apply_offset_reset,
)

NOW = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)
GROUP, TOPIC = "queue", "t"
KEYS = [(TOPIC, 0), (TOPIC, 1)]
NON_EMPTY = "[Error 68] NonEmptyGroupError: The group is not empty."


def share(state: str, members: int) -> ConsumerGroup:
    return ConsumerGroup(group_id=GROUP, state=state, kind="share", members=members)


def test_only_an_existing_empty_share_group_may_be_reset() -> None:
    assert share_group_refusal(GROUP, share("Empty", 0)) is None
    stable = share_group_refusal(GROUP, share("Stable", 2))
    assert stable is not None and "is Stable with 2 member(s)" in stable and "stop its consumers" in stable
    assert share_group_refusal(GROUP, share("Dead", 0)) is not None  # being deleted: not Empty
    missing = share_group_refusal(GROUP, None)  # Kafka's alter would create it: refused
    assert missing is not None and "does not exist" in missing and "DESCRIBE on GROUP queue" in missing


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--share-group", "q", "--group", "g", "--to-earliest"], "--share-group"),
        (["--to-earliest"], "--group"),
        (["--share-group", "q", "--shift-by", "-3"], "--shift-by"),
        (["--share-group", "q", "--by-duration", "PT1H"], "--by-duration"),
    ],
)
def test_usage_errors_name_the_flag_before_any_connection(args: list[str], flag: str) -> None:
    result = CliRunner().invoke(app, ["reset-offsets", "-b", "127.0.0.1:1", "--topic", "t", *args])
    assert result.exit_code == 2, result.output
    assert flag in result.output


def test_saved_share_offsets_say_their_kind_and_a_consumer_record_reads_as_before(tmp_path: Path) -> None:
    parts = [SavedPartition(topic=TOPIC, partition=0, offset=7)]
    queue = SavedOffsets(group=GROUP, taken_at=NOW, kind="share", partitions=parts)
    path = tmp_path / "before.json"
    path.write_text(queue.data()["offsets.json"])
    assert SavedOffsets.from_file(path, GROUP, "share") == queue
    with pytest.raises(ValueError, match="share group, not of a consumer group"):
        SavedOffsets.from_file(path, GROUP, "consumer")
    consumer = SavedOffsets(group=GROUP, taken_at=NOW, partitions=parts)
    assert '"kind"' not in consumer.data()["offsets.json"]
    csv = tmp_path / "before.csv"
    csv.write_text(queue.to_csv())
    assert SavedOffsets.from_file(csv, GROUP, "share").kind == "share"


def answer(error: int = 0, partitions: dict[int, int] | None = None) -> dict[str, Any]:
    rows = [
        {"partition_index": p, "error_code": e, "error_message": None} for p, e in (partitions or {}).items()
    ]
    return {
        "error_code": error,
        "error_message": None,
        "responses": [{"topic_name": TOPIC, "topic_id": None, "partitions": rows}],
    }


class FakeKp:
    class _Manager:
        class cluster:  # kafka-python's attribute name
            _coordinators: dict[Any, int] = {}

    _manager = _Manager()


def test_the_alter_answer_per_partition_and_as_a_whole() -> None:
    offsets = {KEYS[0]: 3, KEYS[1]: 4}
    read = _altered(FakeKp(), GROUP, offsets, answer(partitions={0: 0, 1: 29}))
    assert read.values == {KEYS[0]: 3}
    assert code_of(read.errors[KEYS[1]]) is KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED
    whole = _altered(FakeKp(), GROUP, offsets, answer(error=68))
    assert not whole.values and {code_of(e) for e in whole.errors.values()} == {
        KafkaErrorCode.NON_EMPTY_GROUP
    }
    unanswered = _altered(FakeKp(), GROUP, offsets, answer(partitions={0: 0}))
    assert unanswered.errors == {KEYS[1]: "no result for this partition in the answer"}


def test_a_refused_alter_names_the_read_acls() -> None:
    group = security_errors.authorization_denied(
        f"alter_share_group_offsets:{GROUP}", "[Error 30] GroupAuthorizationFailedError: x"
    )
    topic = security_errors.authorization_denied(
        f"alter_share_group_offsets:{GROUP}", "[Error 29] TopicAuthorizationFailedError: x", TOPIC
    )
    assert group is not None and "lacks READ on GROUP queue" in group
    assert topic is not None and "lacks READ on TOPIC t" in topic


class FakeShareAdmin:
    """An Empty share group at start offsets 5, logs [0, 10]; the alter answers `refuse` first."""

    def __init__(self, refuse: str | None) -> None:
        self.refuse, self.start = refuse, {k: 5 for k in KEYS}

    def share_groups(self) -> Partial[str, ConsumerGroup]:
        offsets = [GroupOffset(topic=t, partition=p, committed_offset=o) for (t, p), o in self.start.items()]
        return Partial(values={GROUP: share("Empty", 0).model_copy(update={"offsets": offsets})})

    def list_offsets(self, keys: list[tuple[str, int]]) -> Partial[tuple[str, int], PartitionOffsets]:
        return Partial(
            values={
                k: PartitionOffsets(topic=k[0], partition=k[1], log_start_offset=0, log_end_offset=10)
                for k in keys
            }
        )

    def alter_share_group_offsets(self, group: str, targets: dict[tuple[str, int], int]) -> Partial[Any, int]:
        if self.refuse is not None:
            return Partial(errors=dict.fromkeys(targets, self.refuse))
        self.start.update(targets)
        return Partial(values=dict(targets))


class Store:
    def __init__(self) -> None:
        self.records: dict[str, dict[str, str]] = {}

    def describe(self, name: str) -> str:
        return name

    def load(self, name: str) -> dict[str, str] | None:
        return self.records.get(name)

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
        self.records[name] = data

    def discard(self, name: str) -> None:
        del self.records[name]


def test_a_consumer_joining_before_the_alter_changes_nothing_and_keeps_the_request() -> None:
    entries = [OffsetResetEntry(topic=t, partition=p, current=5, target=0) for t, p in KEYS]
    plan = OffsetResetPlan(request_id="r1", group=GROUP, strategy="earliest", entries=entries)
    store = Store()
    joined = FakeShareAdmin(NON_EMPTY)
    outcome = apply_offset_reset(cast(KafkaAdmin, joined), store, plan, saved_name="r1", kind=SHARE)
    assert outcome.state is ResetState.NOT_EMPTY and "NonEmptyGroupError" in outcome.message
    assert store.records == {} and joined.start == {k: 5 for k in KEYS}
    empty = FakeShareAdmin(None)
    done = apply_offset_reset(cast(KafkaAdmin, empty), store, plan, saved_name="r1", kind=SHARE)
    assert done.state is ResetState.APPLIED and empty.start == {k: 0 for k in KEYS}
    saved = SavedOffsets.from_data(store.records["r1"])
    assert saved.kind == "share" and [p.offset for p in saved.partitions] == [5, 5]
