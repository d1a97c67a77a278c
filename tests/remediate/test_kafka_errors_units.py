"""Kafka errors are matched by code (remediate/kafka_errors.py): the head of a reason as both
clients report it, never the wording after it."""

from __future__ import annotations

import pytest

from kafka_health.remediate.kafka_errors import COORDINATOR_NOT_READY, KafkaErrorCode, code_of


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("UNKNOWN_MEMBER_ID: Broker: Unknown member", KafkaErrorCode.UNKNOWN_MEMBER_ID),  # confluent-kafka
        (
            "UNKNOWN_MEMBER_ID (25): The coordinator is not aware of this member.",
            KafkaErrorCode.UNKNOWN_MEMBER_ID,
        ),
        ("[Error 25] UnknownMemberIdError: gone", KafkaErrorCode.UNKNOWN_MEMBER_ID),  # kafka-python
        (
            "UNKNOWN_TOPIC_OR_PART: Broker: Unknown topic or partition",
            KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ),
        ("GROUP_AUTHORIZATION_FAILED", KafkaErrorCode.GROUP_AUTHORIZATION_FAILED),
        ("NOT_COORDINATOR: Broker: Not coordinator", KafkaErrorCode.NOT_COORDINATOR),
    ],
)
def test_the_code_is_read_from_the_head_of_a_reason(reason: str, code: KafkaErrorCode) -> None:
    assert code_of(reason) is code


@pytest.mark.parametrize(
    "reason",
    [
        None,
        "",
        "timed out after 10.0s",
        "_TIMED_OUT: Local: Timed out",
        "[Error 7] RequestTimedOutError: x",
        # The wording after another code never counts, even when it names one.
        "rejected, the group is not Empty any more: UNKNOWN_MEMBER_ID: x",
        "log start/end offsets not read: NOT_COORDINATOR",
    ],
)
def test_anything_else_has_no_code_the_executors_decide_on(reason: str | None) -> None:
    assert code_of(reason) is None


def test_a_coordinator_that_is_not_ready_is_retried_by_code() -> None:
    assert {c.value for c in COORDINATOR_NOT_READY} == {14, 15, 16}
