"""Guardrails and the planner: pure functions of policy, status, live cluster state and the clock.

Entry point: `plan(PlanContext(...)) -> Decision`. The rules behind it are importable on their
own (restart safety, election and offset-reset plans, each guardrail) for executors and the
standalone CLI, which must apply the same rules.
"""

from kafka_health.plan.approval import approvals, check_approval, plan_id
from kafka_health.plan.circuit_breaker import breaker_reset_token, check_circuit_breaker, consecutive_failures
from kafka_health.plan.cluster_lock import (
    ClusterLock,
    check_cluster_lock,
    cluster_key,
    lock_is_stale,
    lock_name,
)
from kafka_health.plan.decision import (
    Decision,
    PlannedAction,
    PlannedElection,
    PlannedOffsetReset,
    PlannedRestart,
    PlannedTransactionAbort,
    RequestUpdate,
    RestartStep,
    Verdict,
    merge_withheld,
)
from kafka_health.plan.guardrails import PolicyRef, SafetyLimits, common_holds
from kafka_health.plan.hold import Hold
from kafka_health.plan.leader_election_plan import (
    ElectionPlan,
    TopicPartition,
    imbalance_exceeds,
    leader_imbalance,
    plan_preferred_election,
)
from kafka_health.plan.offset_reset_plan import (
    GateState,
    GroupGate,
    OffsetResetPlan,
    group_gate,
    plan_offset_reset,
    target_timestamp,
)
from kafka_health.plan.planner import PlanContext, plan, restart_requests, timestamp_lookups
from kafka_health.plan.restart_safety import RestartSafety, check_restart_safety, order_brokers
from kafka_health.plan.windows import WindowState, window_state

__all__ = [
    "ClusterLock",
    "Decision",
    "ElectionPlan",
    "GateState",
    "GroupGate",
    "Hold",
    "OffsetResetPlan",
    "PlanContext",
    "PlannedAction",
    "PlannedElection",
    "PlannedOffsetReset",
    "PlannedRestart",
    "PlannedTransactionAbort",
    "PolicyRef",
    "RequestUpdate",
    "RestartSafety",
    "RestartStep",
    "SafetyLimits",
    "TopicPartition",
    "Verdict",
    "WindowState",
    "approvals",
    "breaker_reset_token",
    "check_approval",
    "check_circuit_breaker",
    "check_cluster_lock",
    "check_restart_safety",
    "cluster_key",
    "common_holds",
    "consecutive_failures",
    "group_gate",
    "imbalance_exceeds",
    "leader_imbalance",
    "lock_is_stale",
    "lock_name",
    "merge_withheld",
    "order_brokers",
    "plan",
    "plan_id",
    "plan_offset_reset",
    "plan_preferred_election",
    "restart_requests",
    "target_timestamp",
    "timestamp_lookups",
    "window_state",
]
