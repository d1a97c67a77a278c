"""The guardrails every automatic action passes, as pure functions of their inputs.

Each check returns None (pass) or a `Hold` saying why not and what would change it.
`common_holds` runs them all for one action type, in a fixed order, and returns every Hold
(not just the first), so status can tell the whole story ("outside the window, and
rate-limited until 14:00").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kafka_health.models.policy import (
    ActionType,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    MaintenanceWindow,
    Mode,
    WithheldReason,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.circuit_breaker import breaker_reset_token, check_circuit_breaker
from kafka_health.plan.cluster_lock import DEFAULT_LOCK_TTL, ClusterLock, check_cluster_lock
from kafka_health.plan.hold import Hold, iso
from kafka_health.plan.rate_limit import check_cooldown, check_rate_limit
from kafka_health.plan.restart_safety import MAX_VOTER_LAG, MAX_VOTER_LAG_MS
from kafka_health.plan.windows import window_state


@dataclass(frozen=True)
class PolicyRef:
    """Who is asking: the policy's identity and the metadata the guardrails read."""

    namespace: str
    name: str
    generation: int = 0
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, object]) -> PolicyRef:
        """From a Kubernetes object's metadata (e.g. Kopf's `body["metadata"]`)."""
        raw = metadata.get("annotations")
        annotations = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
        generation = metadata.get("generation")
        return cls(
            namespace=str(metadata.get("namespace") or "default"),
            name=str(metadata.get("name") or ""),
            generation=generation if isinstance(generation, int) else 0,
            annotations=annotations,
        )


@dataclass(frozen=True)
class SafetyLimits:
    """Tunables of the safety checks that are not part of the user's spec."""

    max_snapshot_age: timedelta = timedelta(minutes=2)
    lock_ttl: timedelta = DEFAULT_LOCK_TTL
    max_voter_lag: int = MAX_VOTER_LAG
    max_voter_lag_ms: int = MAX_VOTER_LAG_MS


# Parts of ClusterSnapshot.missing (as `collect` names them) each action cannot do without:
# whole parts by name, and per-topic parts by prefix. A roll must see every partition and the
# quorum (configs:<topic> gaps are caught per partition by the min-ISR rule); an offset reset
# needs offsets and groups (offsets:<topic> gaps are caught per partition by its plan). An
# election or a roll acts on every partition: none may be hidden from the principal, and the
# totals must be checked (`visibility`: partitions the brokers hold that its metadata leaves out).
_NEEDS: dict[ActionType, tuple[frozenset[str], tuple[str, ...]]] = {
    ActionType.PREFERRED_LEADER_ELECTION: (frozenset({"visibility"}), ()),
    ActionType.ROLLING_RESTART: (
        frozenset({"quorum", "configs", "partitions", "visibility"}),
        ("partitions:",),
    ),
    ActionType.OFFSET_RESET: (frozenset({"offsets", "groups"}), ()),
    # An abort reads its partition live before it acts (`remediate.transaction_abort`).
    ActionType.TRANSACTION_ABORT: (frozenset(), ()),
}


def check_snapshot(
    snapshot: ClusterSnapshot | None,
    action: ActionType,
    now: datetime,
    *,
    max_age: timedelta,
    group: str | None = None,
) -> Hold | None:
    """No action on a snapshot that is missing, unreadable, stale, or lacks a part the action needs."""
    if snapshot is None or not snapshot.reachable or not snapshot.brokers:
        why = "no snapshot" if snapshot is None else "the cluster metadata could not be read"
        return Hold(WithheldReason.SNAPSHOT_UNREADABLE, f"{why}: no action without knowing the cluster state")
    age = now - snapshot.taken_at
    if age > max_age:
        return Hold(
            WithheldReason.SNAPSHOT_STALE,
            f"the cluster state was read at {iso(snapshot.taken_at)} ({int(age.total_seconds())}s ago): "
            "safety checks need a fresh read",
        )
    names, prefixes = _NEEDS[action]
    gaps = [
        f"{m.part} ({m.reason})"
        for m in snapshot.missing
        if m.part in names
        or m.part.startswith(prefixes)
        or (group is not None and m.part == f"group:{group}")
    ]
    if gaps:
        return Hold(WithheldReason.SNAPSHOT_INCOMPLETE, f"could not read {', '.join(gaps)}")
    return None


def check_cluster_state(snapshot: ClusterSnapshot) -> Hold | None:
    """No automatic action while partitions are offline or the KRaft quorum has no leader."""
    offline = sorted(f"{p.topic}-{p.partition}" for p in snapshot.partitions if p.leader is None)
    if offline:
        listed = ", ".join(offline[:10]) + (" ..." if len(offline) > 10 else "")
        return Hold(
            WithheldReason.OFFLINE_PARTITIONS,
            f"{len(offline)} offline partition(s) ({listed}): no automatic action until they have leaders",
        )
    if snapshot.quorum is not None and snapshot.quorum.leader_id is None:
        return Hold(WithheldReason.NO_QUORUM_LEADER, "the KRaft quorum has no leader: no automatic action")
    return None


def check_paused(spec: KafkaHealthPolicySpec) -> Hold | None:
    if spec.remediation.paused:
        return Hold(WithheldReason.PAUSED, "spec.remediation.paused is true")
    return None


def check_mode(mode: Mode) -> Hold | None:
    """Observe acts on nothing and plans nothing. DryRun passes here; the planner never executes in DryRun."""
    if mode is Mode.OBSERVE:
        return Hold(
            WithheldReason.MODE_OBSERVE, "mode is Observe: set spec.remediation.mode to DryRun or Enforce"
        )
    return None


def check_window(windows: Sequence[MaintenanceWindow] | None, required: bool, now: datetime) -> Hold | None:
    """Held outside every maintenance window when the action type requires one (none defined: never)."""
    if not required:
        return None
    if not windows:
        return Hold(
            WithheldReason.OUTSIDE_MAINTENANCE_WINDOW,
            "this action requires a maintenance window and spec.remediation.maintenanceWindows is empty",
        )
    state = window_state(windows, now)
    if state.open:
        return None
    return Hold(WithheldReason.OUTSIDE_MAINTENANCE_WINDOW, state.describe(), state.next_opens_at)


def requires_window(spec: KafkaHealthPolicySpec, action: ActionType) -> bool:
    r = spec.remediation
    return {
        ActionType.PREFERRED_LEADER_ELECTION: r.preferred_leader_election.require_maintenance_window,
        ActionType.ROLLING_RESTART: r.rolling_restart.require_maintenance_window,
        ActionType.OFFSET_RESET: r.offset_resets.require_maintenance_window,
        ActionType.TRANSACTION_ABORT: r.transaction_aborts.require_maintenance_window,
    }[action]


def common_holds(
    action: ActionType,
    *,
    policy: PolicyRef,
    spec: KafkaHealthPolicySpec,
    status: KafkaHealthPolicyStatus,
    snapshot: ClusterSnapshot | None,
    lock: ClusterLock | None,
    now: datetime,
    limits: SafetyLimits = SafetyLimits(),
    group: str | None = None,
    starting: bool = True,
    replica: str | None = None,
) -> list[Hold]:
    """Every guardrail that holds `action` back now. `starting=False` (the next step of an action in
    flight) skips those that only gate a new action: circuit breaker, rate limit, cooldown."""
    holds: list[Hold | None] = [
        check_snapshot(snapshot, action, now, max_age=limits.max_snapshot_age, group=group)
    ]
    if snapshot is not None and holds[0] is None:
        holds.append(check_cluster_state(snapshot))
    holds += [check_paused(spec), check_mode(spec.remediation.mode)]
    history = status.history or []
    if starting:
        holds.append(
            check_circuit_breaker(
                history,
                spec.remediation.circuit_breaker.max_failures,
                policy.generation,
                breaker_reset_token(policy.annotations),
            )
        )
    holds.append(check_cluster_lock(lock, policy.key, now, limits.lock_ttl, replica=replica))
    holds.append(check_window(spec.remediation.maintenance_windows, requires_window(spec, action), now))
    if starting:
        limit = spec.remediation.rate_limits.for_action(action)
        holds += [check_rate_limit(limit, history, action, now), check_cooldown(limit, history, action, now)]
    return [h for h in holds if h is not None]


def first(holds: Iterable[Hold]) -> Hold | None:
    return next(iter(holds), None)
