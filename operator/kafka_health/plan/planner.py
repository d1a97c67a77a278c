"""The planner: findings + policy + remediation state + live state + clock → one `Decision`.

Pure: everything it reads is in `PlanContext`, including `now`. It never acts; executors do
what the decision says and record it in status, which the next call reads back.

Order of business:
1. An action in flight (status.currentRemediation) comes first. A roll between brokers gets
   its next broker (after the guardrails that gate a step and the restart safety rules), or a
   reason to wait; any other step in flight is left to its executor (Resume).
2. Otherwise the candidates, in priority order — requested rolling restarts, requested offset
   resets, then preferred leader election (requested by annotation, or automatic when the
   live leader imbalance is over the threshold) — are each checked against every guardrail.
   The first that passes is the decision: Act in Enforce (after approval, if required), only
   shown in DryRun; each of the others is withheld with its reasons (or Queued: one action
   at a time).

The parts, by job: `plan_context` (what the planner reads, the holds every part asks for),
`candidates` (what could run, with its plan), `choose` (which one does) and `in_flight` (the
next step of an action already running).
"""

from __future__ import annotations

from kafka_health.plan.candidates import candidates, invalid_annotation_requests, timestamp_lookups
from kafka_health.plan.choose import choose
from kafka_health.plan.decision import Decision
from kafka_health.plan.in_flight import in_flight
from kafka_health.plan.plan_context import MAX_DETAILS, PlanContext, restart_requests

__all__ = ["MAX_DETAILS", "PlanContext", "plan", "restart_requests", "timestamp_lookups"]


def plan(ctx: PlanContext) -> Decision:
    """The one thing to do now (or nothing), with the reason for everything withheld."""
    current = ctx.status.current_remediation
    if current is not None:
        return in_flight(ctx, current)
    withheld = invalid_annotation_requests(ctx)
    return choose(ctx, candidates(ctx, withheld), withheld)
