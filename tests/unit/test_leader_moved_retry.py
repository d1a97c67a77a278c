"""Which ListOffsets answers are asked again (collect.admin_calls._retriable): a moved leader is,
an authorization error or a missing topic is not (those are the answer, not a race)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_health.collect.admin_calls import _retriable


def _failed(code: int) -> Future[object]:
    fut: Future[object] = Future()
    fut.set_exception(KafkaException(KafkaError(code)))
    return fut


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.OFFSET_NOT_AVAILABLE,
    ],
)
def test_a_moved_leader_is_asked_again(code: int) -> None:
    assert _retriable(_failed(code))


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._TIMED_OUT,
    ],
)
def test_an_answer_that_is_not_a_race_is_not_asked_again(code: int) -> None:
    assert not _retriable(_failed(code))


def test_a_success_or_a_pending_call_is_not_asked_again() -> None:
    done: Future[object] = Future()
    done.set_result(1)
    assert not _retriable(done)
    assert not _retriable(Future())
    plain: Future[object] = Future()
    plain.set_exception(RuntimeError("not Kafka's"))
    assert not _retriable(plain)
