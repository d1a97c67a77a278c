"""One-shot requests by id (rolling restarts, offset resets, transaction aborts): each runs once per id."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AwareDatetime, Field, field_validator, model_validator

from kafka_health.models.policy.base import SpecModel
from kafka_health.models.policy.constants import INT32_MAX, INT64_MAX
from kafka_health.models.policy.durations import PositiveDuration
from kafka_health.models.policy.rules import CelRule, FieldCel, rule_error, spec_error
from kafka_health.models.policy.text import BrokerId, RequestId, TopicName


class RollingRestartRequest(SpecModel):
    """One rolling restart, done once per id (commit a new id to roll again)."""

    id: RequestId = Field(description="Unique id of this request; the result is reported under it.")
    brokers: list[BrokerId] | None = Field(
        None,
        description="Node ids to restart: brokers, and dedicated controllers when spec.cluster.controllerPods "
        "is set. Absent: all brokers (and all dedicated controllers with controllerPods).",
        min_length=1,
        max_length=1000,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    reason: str | None = Field(None, max_length=1024, description="Why (shown in status and Events).")

    @field_validator("brokers")
    @classmethod
    def _unique(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) != len(value):
            raise spec_error("list each broker id once")
        return value


def unique_ids(items: Iterable[RollingRestartRequest | OffsetResetRequest | TransactionAbortRequest]) -> None:
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item.id in seen:
            raise spec_error(
                f"duplicate id {item.id!r}: every request needs its own id (commit a new id to repeat an action)",
                f"[{index}]",
            )
        seen.add(item.id)


REQUEST_LIST: dict[str, Any] = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"]}


class TopicPartitionRef(SpecModel):
    """One partition of a topic."""

    topic: TopicName = Field(description="Topic name.")
    partition: int = Field(ge=0, le=INT32_MAX, description="Partition number.")


STRATEGIES = ("earliest", "latest", "toDatetime", "byDuration", "shiftBy", "toOffset")
_STRATEGY_RULE = CelRule(
    " + ".join(
        f"({cond} ? 1 : 0)"
        for cond in (
            "has(self.earliest) && self.earliest",
            "has(self.latest) && self.latest",
            "has(self.toDatetime)",
            "has(self.byDuration)",
            "has(self.shiftBy)",
            "has(self.toOffset)",
        )
    )
    + " == 1",
    "set exactly one strategy: earliest: true, latest: true, toDatetime, byDuration, shiftBy or toOffset",
)
_TARGET_RULE = CelRule(
    "(has(self.topics) ? size(self.topics) : 0) + (has(self.partitions) ? size(self.partitions) : 0) > 0",
    "name what to reset: topics (all their partitions) and/or partitions",
)


_SHIFT_RULE = CelRule("self != 0", "shiftBy: 0 changes nothing: use a positive or negative number")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_millis_at_or_after(ts: datetime) -> int:
    """The Kafka timestamp (ms since 1970) of the first whole millisecond at or after `ts`.
    "The first offset at or after a time" finer than a millisecond must not start a millisecond
    early (truncating would); integer arithmetic, so no float rounding either."""
    return -((EPOCH - ts) // timedelta(milliseconds=1))


_EPOCH_RULE = CelRule(
    "timestamp(self) >= timestamp('1970-01-01T00:00:00Z')",
    "must be 1970-01-01T00:00:00Z or later (Kafka reads an earlier, negative timestamp as 'latest' or "
    "'earliest')",
)


class OffsetResetRequest(SpecModel):
    """One consumer-group offset reset, done once per id, only while the group is Empty."""

    cel_rules = (_STRATEGY_RULE, _TARGET_RULE)

    id: RequestId = Field(description="Unique id of this request; the result is reported under it.")
    group: str = Field(min_length=1, max_length=255, description="Consumer group id.")
    topics: list[TopicName] | None = Field(
        None,
        max_length=1000,
        description="Reset every partition of these topics.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    partitions: list[TopicPartitionRef] | None = Field(
        None,
        max_length=10_000,
        description="Reset these partitions.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["topic", "partition"],
        },
    )
    earliest: bool | None = Field(None, description="Strategy: to the log start offset (set true).")
    latest: bool | None = Field(None, description="Strategy: to the log end offset (set true).")
    to_datetime: Annotated[AwareDatetime, FieldCel(_EPOCH_RULE, max_length=64)] | None = Field(
        None,
        description="Strategy: to the first offset at or after this RFC 3339 time (e.g. 2024-06-01T00:00:00Z).",
    )
    by_duration: PositiveDuration | None = Field(
        None, description="Strategy: to the first offset at or after (now - byDuration), e.g. '2h'."
    )
    shift_by: Annotated[int, FieldCel(_SHIFT_RULE), Field(ge=-INT64_MAX, le=INT64_MAX)] | None = Field(
        None, description="Strategy: move the committed offset by this many (negative: back). Not 0."
    )
    to_offset: int | None = Field(None, ge=0, le=INT64_MAX, description="Strategy: to this offset.")
    empty_group_timeout: PositiveDuration = Field(
        "30m", description="How long to wait for the group to become Empty before reporting Blocked."
    )

    @field_validator("to_datetime")
    @classmethod
    def _after_epoch(cls, value: datetime | None) -> datetime | None:
        if value is not None and value < EPOCH:
            raise rule_error(_EPOCH_RULE)
        return value

    @field_validator("shift_by")
    @classmethod
    def _shift(cls, value: int | None) -> int | None:
        if value == 0:
            raise rule_error(_SHIFT_RULE)
        return value

    @field_validator("topics")
    @classmethod
    def _unique_topics(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise spec_error("list each topic once")
        return value

    @model_validator(mode="after")
    def _strategy_and_target(self) -> OffsetResetRequest:
        if len(self.strategies()) != 1:
            raise rule_error(_STRATEGY_RULE)
        if not (self.topics or self.partitions):
            raise rule_error(_TARGET_RULE)
        return self

    def strategies(self) -> list[str]:
        values = {
            "earliest": self.earliest is True,
            "latest": self.latest is True,
            "toDatetime": self.to_datetime is not None,
            "byDuration": self.by_duration is not None,
            "shiftBy": self.shift_by is not None,
            "toOffset": self.to_offset is not None,
        }
        return [name for name in STRATEGIES if values[name]]

    @property
    def strategy(self) -> str:
        return self.strategies()[0]


class TransactionAbortRequest(SpecModel):
    """Abort the transaction that starts at `startOffset` on one partition, once per id, only when
    it is hanging (the `hanging_transaction` finding names all three)."""

    id: RequestId = Field(description="Unique id of this request; the result is reported under it.")
    topic: TopicName = Field(description="The partition's topic.")
    partition: int = Field(ge=0, le=INT32_MAX, description="The partition.")
    start_offset: int = Field(
        ge=0, le=INT64_MAX, description="The transaction's first offset (the finding's start_offset)."
    )
