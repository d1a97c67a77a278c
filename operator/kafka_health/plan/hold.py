"""`Hold`: the result of a guardrail that says no — the reason code and what would let it pass."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from kafka_health.models.policy import WithheldReason


@dataclass(frozen=True)
class Hold:
    """One guardrail that stops an action, in words a person can act on."""

    reason: WithheldReason
    message: str
    retry_at: datetime | None = None


def iso(value: datetime) -> str:
    """A UTC timestamp for messages."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
