"""Kafka errors by CODE, for the executors' decisions (never by the wording after it).

The admin calls run in the client process and hand each error back as a reason: confluent-kafka's
`KafkaError.name()` first ("UNKNOWN_MEMBER_ID: Broker: Unknown member"), or kafka-python's
error class with its errno ("[Error 25] UnknownMemberIdError: …"). `code_of` reads that head,
once, into the protocol's numeric code (`KafkaErrorCode`); every decision compares codes. The
names are Kafka's protocol error names; librdkafka spells code 3 `UNKNOWN_TOPIC_OR_PART`.
"""

from __future__ import annotations

import re
from enum import IntEnum


class KafkaErrorCode(IntEnum):
    """The Kafka protocol error codes the executors decide on (org.apache.kafka.common.protocol.Errors)."""

    UNKNOWN_TOPIC_OR_PARTITION = 3
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    UNKNOWN_MEMBER_ID = 25
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    NON_EMPTY_GROUP = 68


COORDINATOR_NOT_READY = frozenset(
    {
        KafkaErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaErrorCode.COORDINATOR_NOT_AVAILABLE,
        KafkaErrorCode.NOT_COORDINATOR,
    }
)
"""The group coordinator was loading, unavailable or moved: the same request may be sent again."""

_NAMES = {c.name: c for c in KafkaErrorCode} | {
    "UNKNOWN_TOPIC_OR_PART": KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION
}
_ERRNO = re.compile(r"\s*\[Error (-?\d+)\]")
_NAME = re.compile(r"\s*(_?[A-Z][A-Z0-9_]*)(?![a-z])")


def code_of(reason: str | None) -> KafkaErrorCode | None:
    """The code of the error a reason reports, or None (no reason, another code, not a Kafka
    error such as a timeout of the call). The head read: the code's name ("NAME: …",
    "NAME (25): …") or kafka-python's errno ("[Error 25] …")."""
    if not reason:
        return None
    if (errno := _ERRNO.match(reason)) is not None:
        value = int(errno[1])
        return KafkaErrorCode(value) if value in KafkaErrorCode._value2member_map_ else None
    name = _NAME.match(reason)
    return _NAMES.get(name[1]) if name is not None else None
