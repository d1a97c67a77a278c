"""Rate limit and cooldown per action type, counted from status.history (the clock passed in)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kafka_health.models.policy import (
    ActionOutcome,
    ActionRecord,
    ActionType,
    RateLimit,
    WithheldReason,
    parse_duration,
)
from kafka_health.plan.hold import Hold, iso


def check_rate_limit(
    limit: RateLimit, history: Sequence[ActionRecord], action: ActionType, now: datetime
) -> Hold | None:
    """Held when `limit.max_actions` actions of this type started within the last `limit.per`."""
    period = parse_duration(limit.per)
    recent = sorted(
        r.started_at for r in history if r.action is action and now - period < r.started_at <= now
    )
    if len(recent) < limit.max_actions:
        return None
    # The oldest of the newest max_actions starts must leave the period first.
    retry_at = recent[-limit.max_actions] + period
    return Hold(
        WithheldReason.RATE_LIMITED,
        f"{len(recent)} {action} action(s) in the last {limit.per} (limit {limit.max_actions}); "
        f"next allowed at {iso(retry_at)}",
        retry_at,
    )


def check_cooldown(
    limit: RateLimit, history: Sequence[ActionRecord], action: ActionType, now: datetime
) -> Hold | None:
    """Held until `limit.cooldown` after the end of the last action of this type (a running one: not ended)."""
    cooldown = parse_duration(limit.cooldown)
    same = [r for r in history if r.action is action]
    if not same:
        return None
    last = max(same, key=lambda r: r.started_at)
    if last.outcome is ActionOutcome.RUNNING or last.finished_at is None:
        return Hold(WithheldReason.COOLING_DOWN, f"the previous {action} ({last.plan_id}) has not finished")
    if not cooldown:
        return None
    retry_at = last.finished_at + cooldown
    if now < retry_at:
        return Hold(
            WithheldReason.COOLING_DOWN,
            f"cooling down {limit.cooldown} after {action} {last.plan_id} ended at {iso(last.finished_at)}; "
            f"next allowed at {iso(retry_at)}",
            retry_at,
        )
    return None
