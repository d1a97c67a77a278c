"""Names, ids and addresses: strings with a pattern, a length and a message that says how to fix them."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from kafka_health.models.policy.constants import INT32_MAX
from kafka_health.models.policy.rules import Text

RequestId = Annotated[
    str,
    Text(
        r"^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$",
        "lower-case letters, digits, '-', '.', '_', starting and ending with a letter or digit, "
        "at most 63 characters (e.g. 2024-06-01-kernel-upgrade)",
        max_length=63,
    ),
]
ObjectName = Annotated[
    str,
    Text(
        r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        "a Kubernetes object name: lower-case letters, digits, '-' and '.'",
    ),
]
SecretKey = Annotated[str, Text(r"^[-._a-zA-Z0-9]+$", "a Secret data key: letters, digits, '-', '_', '.'")]
LabelKey = Annotated[
    str,
    Text(
        r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        "a label key, e.g. 'app.kubernetes.io/instance' or 'broker-id'",
        max_length=316,
    ),
]
LabelValue = Annotated[
    str,
    Text(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$", "a label value (at most 63 characters)", 63, 0),
]
LABEL_KEY_CHECK: TypeAdapter[str] = TypeAdapter(LabelKey)
"""Checks one key of a label map (PodSelector.matchLabels), as LabelKey checks a field."""
LABEL_VALUE_CHECK: TypeAdapter[str] = TypeAdapter(LabelValue)
TopicName = Annotated[
    str,
    Text(
        r"^[a-zA-Z0-9._-]*[a-zA-Z0-9_-][a-zA-Z0-9._-]*$",
        "a Kafka topic name: letters, digits, '.', '_', '-', at most 249 characters, not only dots "
        "(Kafka refuses '.' and '..')",
        249,
    ),
]
NamespaceName = Annotated[
    str,
    Text(
        r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        "a namespace name: lower-case letters, digits and '-', at most 63 characters (no '.')",
        63,
    ),
]
BrokerId = Annotated[int, Field(ge=0, le=INT32_MAX)]
PORT_PATTERN = r"([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
"""1-65535 and nothing else: librdkafka takes a larger number modulo 65536 and dials that port."""
HostPort = Annotated[
    str,
    Text(
        r"^(\[[0-9a-fA-F:.]+\]|[^\s:,\[\]/]+):" + PORT_PATTERN + "$",
        "one host:port per list item, port 1-65535, e.g. 'kafka-0.kafka:9092' (not a comma-separated string)",
    ),
]
CRON_PATTERN = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$"
CronExpression = Annotated[
    str,
    Text(
        CRON_PATTERN,
        "a 5-field cron expression 'minute hour day-of-month month day-of-week' "
        "(e.g. '0 2 * * *' for 02:00 daily) or @daily/@weekly/...",
        max_length=128,
    ),
]
TimeZoneName = Annotated[
    str,
    Text(
        r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$",
        "an IANA time zone name, e.g. 'Europe/Berlin' or 'UTC'",
        64,
    ),
]
