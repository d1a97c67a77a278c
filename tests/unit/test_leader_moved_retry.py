"""Which ListOffsets answers are asked again (collect.futures.retriable): a moved leader is,
an authorization error or a missing topic is not (those are the answer, not a race)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_health.collect.futures import request_timed_out, retriable


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
    assert retriable(_failed(code))


@pytest.mark.parametrize(
    "code",
    [
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._TIMED_OUT,
    ],
)
def test_an_answer_that_is_not_a_race_is_not_asked_again(code: int) -> None:
    assert not retriable(_failed(code))


def test_a_success_or_a_pending_call_is_not_asked_again() -> None:
    done: Future[object] = Future()
    done.set_result(1)
    assert not retriable(done)
    assert not retriable(Future())
    plain: Future[object] = Future()
    plain.set_exception(RuntimeError("not Kafka's"))
    assert not retriable(plain)


def test_only_timed_out_is_a_request_timeout() -> None:
    assert request_timed_out(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    assert not request_timed_out(KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)))
    assert not request_timed_out(RuntimeError("timed out"))
