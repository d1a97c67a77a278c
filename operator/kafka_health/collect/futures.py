"""How a librdkafka future failed, read from its `KafkaError` code: the partition's leader moved
(ask the new one) or the request ran past its `request_timeout` (renew the client)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException

__all__ = ["request_timed_out", "retriable"]

_LEADER_MOVED = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.OFFSET_NOT_AVAILABLE,
    }
)
"""Partition errors that mean "ask the new leader": matched by code, because librdkafka builds a
partition's error without its `retriable()` flag."""


def _error_of(exc: BaseException | None) -> KafkaError | None:
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return err if isinstance(err, KafkaError) else None


def retriable(fut: Future[Any]) -> bool:
    """The future failed because the partition's leader moved (or was moving) under the request."""
    err = _error_of(fut.exception() if fut.done() else None)
    return err is not None and (err.code() in _LEADER_MOVED or bool(err.retriable()))


def request_timed_out(exc: BaseException) -> bool:
    """librdkafka reports a request past its `request_timeout` as `_TIMED_OUT`."""
    err = _error_of(exc)
    return err is not None and err.code() == KafkaError._TIMED_OUT
