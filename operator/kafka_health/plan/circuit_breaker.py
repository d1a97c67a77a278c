"""Circuit breaker: after N consecutive failed actions, no automatic action until a person
changes the spec (a new generation) or sets the reset annotation to a new value.

Stateless: each history record carries the generation and the reset-annotation value it ran
under; only failures of the current (generation, annotation) epoch count, and a success ends
the streak.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_health.models.policy import (
    ANNOTATION_RESET_CIRCUIT_BREAKER,
    ActionOutcome,
    ActionRecord,
    WithheldReason,
)
from kafka_health.plan.hold import Hold


def breaker_reset_token(annotations: Mapping[str, str]) -> str | None:
    """The reset annotation's value (record it in every new ActionRecord.breaker_reset)."""
    value = annotations.get(ANNOTATION_RESET_CIRCUIT_BREAKER)
    return value.strip() if value and value.strip() else None


def consecutive_failures(history: Sequence[ActionRecord], generation: int, reset_token: str | None) -> int:
    """Failures at the end of history (newest first) in the current epoch, up to the last success."""
    count = 0
    for record in sorted(history, key=lambda r: r.started_at, reverse=True):
        if record.outcome is ActionOutcome.RUNNING:
            continue
        if record.generation != generation or record.breaker_reset != reset_token:
            break
        if record.outcome is ActionOutcome.SUCCEEDED:
            break
        count += 1
    return count


def check_circuit_breaker(
    history: Sequence[ActionRecord], max_failures: int, generation: int, reset_token: str | None
) -> Hold | None:
    failures = consecutive_failures(history, generation, reset_token)
    if failures < max_failures:
        return None
    return Hold(
        WithheldReason.CIRCUIT_BREAKER_OPEN,
        f"{failures} consecutive failed action(s) (limit {max_failures}): fix the cause, then change the spec "
        f"or run kubectl annotate khp <name> {ANNOTATION_RESET_CIRCUIT_BREAKER}=$(date -u +%FT%TZ) --overwrite",
    )
