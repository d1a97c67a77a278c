"""Each guardrail on its own: mode, pause, window, snapshot, cluster state, rate limit, cooldown,
circuit breaker, cluster lock and approval."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_health.models.policy import (
    ANNOTATION_APPROVE_PLAN,
    ANNOTATION_RESET_CIRCUIT_BREAKER,
    ActionOutcome,
    ActionRecord,
    ActionType,
    ElectionRateLimit,
    KafkaHealthPolicyStatus,
    MaintenanceWindow,
    Mode,
    RemediationSpec,
    WithheldReason,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.approval import approvals, check_approval, plan_digest, plan_id
from kafka_health.plan.circuit_breaker import breaker_reset_token, check_circuit_breaker, consecutive_failures
from kafka_health.plan.cluster_lock import (
    ClusterLock,
    LockVerdict,
    check_cluster_lock,
    cluster_key,
    lock_is_stale,
    lock_name,
    lock_verdict,
)
from kafka_health.plan.guardrails import (
    PolicyRef,
    check_cluster_state,
    check_mode,
    check_paused,
    check_snapshot,
    check_window,
    common_holds,
)
from kafka_health.plan.rate_limit import check_cooldown, check_rate_limit

from .factories import NOW, balanced, partition, record, snapshot, spec

PLE = ActionType.PREFERRED_LEADER_ELECTION
ROLL = ActionType.ROLLING_RESTART
RESET = ActionType.OFFSET_RESET
AGE = timedelta(minutes=2)


# --- mode and pause -----------------------------------------------------------------------------


def test_observe_holds_and_dry_run_and_enforce_pass() -> None:
    hold = check_mode(Mode.OBSERVE)
    assert hold is not None and hold.reason is WithheldReason.MODE_OBSERVE
    assert check_mode(Mode.DRY_RUN) is None and check_mode(Mode.ENFORCE) is None


def test_paused() -> None:
    hold = check_paused(spec(paused=True))
    assert hold is not None and hold.reason is WithheldReason.PAUSED
    assert check_paused(spec()) is None


# --- maintenance windows -----------------------------------------------------------------------

NIGHTLY = MaintenanceWindow(name="nightly", schedule="0 2 * * *", duration="1h")  # NOW is 02:30 UTC


def test_window_not_required_passes_anywhere() -> None:
    assert check_window(None, False, NOW) is None


def test_window_required_but_none_defined_holds() -> None:
    hold = check_window([], True, NOW)
    assert hold is not None and "maintenanceWindows is empty" in hold.message


def test_window_required_inside_and_outside() -> None:
    assert check_window([NIGHTLY], True, NOW) is None
    hold = check_window([NIGHTLY], True, NOW + timedelta(hours=1))
    assert hold is not None and hold.reason is WithheldReason.OUTSIDE_MAINTENANCE_WINDOW
    assert hold.retry_at == NOW.replace(hour=2, minute=0) + timedelta(days=1)
    assert "'nightly'" in hold.message


# --- snapshot and cluster state ----------------------------------------------------------------


def test_no_snapshot_or_no_metadata_holds_everything() -> None:
    for snap in (None, snapshot(missing=[("metadata", "timeout")]), snapshot(brokers=(), partitions=[])):
        hold = check_snapshot(snap, PLE, NOW, max_age=AGE)
        assert hold is not None and hold.reason is WithheldReason.SNAPSHOT_UNREADABLE


def test_stale_snapshot_holds() -> None:
    hold = check_snapshot(snapshot(taken_at=NOW - timedelta(minutes=3)), PLE, NOW, max_age=AGE)
    assert hold is not None and hold.reason is WithheldReason.SNAPSHOT_STALE


def test_missing_parts_hold_only_the_actions_that_need_them() -> None:
    no_quorum = snapshot(missing=[("quorum", "kafka-python timeout")])
    assert check_snapshot(no_quorum, PLE, NOW, max_age=AGE) is None
    hold = check_snapshot(no_quorum, ROLL, NOW, max_age=AGE)
    assert hold is not None and hold.reason is WithheldReason.SNAPSHOT_INCOMPLETE and "quorum" in hold.message
    for part in ("configs", "partitions:orders"):
        assert check_snapshot(snapshot(missing=[(part, "denied")]), ROLL, NOW, max_age=AGE) is not None
    # Per-topic gaps the safety rules and plans catch per partition do not hold everything.
    assert check_snapshot(snapshot(missing=[("configs:orders", "denied")]), ROLL, NOW, max_age=AGE) is None
    assert check_snapshot(snapshot(missing=[("offsets:orders", "timeout")]), RESET, NOW, max_age=AGE) is None
    assert check_snapshot(snapshot(missing=[("groups", "timeout")]), RESET, NOW, max_age=AGE) is not None
    group = snapshot(missing=[("group:billing", "timeout")])
    assert check_snapshot(group, RESET, NOW, max_age=AGE, group="billing") is not None
    assert check_snapshot(group, RESET, NOW, max_age=AGE, group="audit") is None


def test_hidden_partitions_hold_the_election_and_the_roll_not_a_reset() -> None:
    """An election or a roll acts on every partition: while some are hidden from the principal
    (or the totals cannot be checked) it is withheld with the reason; an offset reset names its
    topics, which its plan checks one by one."""
    hidden = snapshot(missing=[("visibility", "authorization denied: 5 partitions in 1 topic … hidden")])
    for action in (PLE, ROLL):
        hold = check_snapshot(hidden, action, NOW, max_age=AGE)
        assert hold is not None and hold.reason is WithheldReason.SNAPSHOT_INCOMPLETE
        assert "visibility (authorization denied: 5 partitions" in hold.message
    assert check_snapshot(hidden, RESET, NOW, max_age=AGE) is None


def test_offline_partitions_and_leaderless_quorum_hold() -> None:
    offline = snapshot([*balanced(), partition("t", 0, [1], isr=[], leader=None)])
    hold = check_cluster_state(offline)
    assert hold is not None and hold.reason is WithheldReason.OFFLINE_PARTITIONS and "t-0" in hold.message
    hold = check_cluster_state(snapshot(controller=None))
    assert hold is not None and hold.reason is WithheldReason.NO_QUORUM_LEADER
    assert check_cluster_state(snapshot()) is None
    assert check_cluster_state(snapshot(quorum=False)) is None  # unknown is not "no leader"


# --- rate limit and cooldown -------------------------------------------------------------------

LIMIT = ElectionRateLimit(max_actions=2, per="1h", cooldown="10m")


def test_rate_limit_counts_actions_of_the_type_within_the_period() -> None:
    history = [
        record(PLE, started=NOW - timedelta(minutes=50)),
        record(PLE, started=NOW - timedelta(minutes=30)),
        record(ROLL, started=NOW - timedelta(minutes=20)),
        record(PLE, started=NOW - timedelta(minutes=70)),  # outside the hour
    ]
    hold = check_rate_limit(LIMIT, history, PLE, NOW)
    assert hold is not None and hold.reason is WithheldReason.RATE_LIMITED
    assert hold.retry_at == NOW + timedelta(minutes=10)  # when the 50-minute-old one leaves the hour
    assert check_rate_limit(LIMIT, history, ROLL, NOW) is None
    assert check_rate_limit(LIMIT, history[1:], PLE, NOW) is None


def test_cooldown_after_the_last_action_ends() -> None:
    history = [record(PLE, started=NOW - timedelta(minutes=8), minutes=3)]  # ended 5 minutes ago
    hold = check_cooldown(LIMIT, history, PLE, NOW)
    assert hold is not None and hold.reason is WithheldReason.COOLING_DOWN
    assert hold.retry_at == NOW + timedelta(minutes=5)
    assert check_cooldown(LIMIT, history, PLE, NOW + timedelta(minutes=5)) is None
    assert check_cooldown(LIMIT, [], PLE, NOW) is None


def test_cooldown_holds_while_the_previous_action_still_runs() -> None:
    running = [record(PLE, started=NOW - timedelta(hours=5), outcome=ActionOutcome.RUNNING)]
    hold = check_cooldown(ElectionRateLimit(cooldown="0s"), running, PLE, NOW)
    assert hold is not None and "has not finished" in hold.message


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 180), max_size=12), st.integers(1, 5))
def test_rate_limit_never_allows_more_than_max_in_any_period(
    minutes_ago: list[int], max_actions: int
) -> None:
    limit = ElectionRateLimit(max_actions=max_actions, per="1h", cooldown="0s")
    history = [record(PLE, started=NOW - timedelta(minutes=m)) for m in minutes_ago]
    in_last_hour = sum(1 for m in minutes_ago if m < 60)
    hold = check_rate_limit(limit, history, PLE, NOW)
    assert (hold is None) == (in_last_hour < max_actions)
    if hold is not None:
        assert hold.retry_at is not None and hold.retry_at > NOW
        # At retry_at, one fewer action is within the period: exactly room for one more.
        assert check_rate_limit(limit, history, PLE, hold.retry_at) is None or in_last_hour > max_actions


# --- circuit breaker ---------------------------------------------------------------------------


def failures(
    n: int, *, generation: int = 1, token: str | None = None, start: int = 100
) -> list[ActionRecord]:
    return [
        record(
            started=NOW - timedelta(minutes=start - i),
            outcome=ActionOutcome.FAILED,
            generation=generation,
            breaker_reset=token,
        )
        for i in range(n)
    ]


def test_breaker_opens_after_max_consecutive_failures() -> None:
    history = failures(3)
    hold = check_circuit_breaker(history, 3, 1, None)
    assert hold is not None and hold.reason is WithheldReason.CIRCUIT_BREAKER_OPEN
    assert ANNOTATION_RESET_CIRCUIT_BREAKER in hold.message
    assert check_circuit_breaker(history[:2], 3, 1, None) is None


def test_a_success_ends_the_streak() -> None:
    history = [*failures(2, start=100), record(started=NOW - timedelta(minutes=50)), *failures(2, start=40)]
    assert consecutive_failures(history, 1, None) == 2


def test_running_records_are_not_counted() -> None:
    history = [*failures(3), record(started=NOW, outcome=ActionOutcome.RUNNING)]
    assert consecutive_failures(history, 1, None) == 3


def test_a_spec_change_resets_the_breaker() -> None:
    assert check_circuit_breaker(failures(3, generation=1), 3, 2, None) is None


def test_a_new_annotation_value_resets_the_breaker() -> None:
    history = failures(3, token=None)
    assert check_circuit_breaker(history, 3, 1, "2024-06-03T02:00Z") is None
    # Failures after the reset count again.
    history += failures(3, token="2024-06-03T02:00Z", start=10)
    assert check_circuit_breaker(history, 3, 1, "2024-06-03T02:00Z") is not None


def test_breaker_reset_token_reads_the_annotation() -> None:
    assert breaker_reset_token({ANNOTATION_RESET_CIRCUIT_BREAKER: " x "}) == "x"
    assert breaker_reset_token({ANNOTATION_RESET_CIRCUIT_BREAKER: " "}) is None
    assert breaker_reset_token({}) is None


# --- cluster lock ------------------------------------------------------------------------------


def lock(holder: str, renewed_seconds_ago: int = 5, replica: str | None = "pod-a") -> ClusterLock:
    return ClusterLock(
        cluster="id:c",
        holder=holder,
        replica=replica,
        action=ROLL,
        id="r1",
        acquired_at=NOW - timedelta(hours=1),
        renewed_at=NOW - timedelta(seconds=renewed_seconds_ago),
        ttl_seconds=30,
    )


def test_lock_free_or_ours_passes_and_another_policy_conflicts() -> None:
    assert check_cluster_lock(None, "kafka/main", NOW) is None
    assert check_cluster_lock(lock("kafka/main"), "kafka/main", NOW) is None
    hold = check_cluster_lock(lock("other/policy"), "kafka/main", NOW)
    assert hold is not None and hold.reason is WithheldReason.CLUSTER_LOCKED
    assert hold.message.startswith("ClusterLocked by other/policy (RollingRestart r1) on replica pod-a"), hold
    assert hold.retry_at == NOW + timedelta(seconds=25)  # when it expires unless renewed


def test_a_stale_lock_can_be_taken_over() -> None:
    stale = lock("other/policy", renewed_seconds_ago=31)
    assert lock_is_stale(stale, NOW)
    assert check_cluster_lock(stale, "kafka/main", NOW) is None
    assert not lock_is_stale(lock("other/policy", renewed_seconds_ago=30), NOW)


@pytest.mark.parametrize(
    ("holder", "replica", "renewed", "me", "verdict"),
    [
        (None, None, 0, "pod-a", LockVerdict.FREE),
        ("kafka/main", "pod-a", 5, "pod-a", LockVerdict.OURS),
        # Same policy, another replica still renewing: a hand-over in progress, not ours yet.
        ("kafka/main", "pod-b", 5, "pod-a", LockVerdict.CONFLICT),
        # ... handed over (replica cleared): the policy's next replica takes it at once.
        ("kafka/main", None, 5, "pod-a", LockVerdict.HANDED_OVER),
        # ... but a handed-over lock is still another policy's until it expires.
        ("other/policy", None, 5, "pod-a", LockVerdict.CONFLICT),
        ("other/policy", "pod-a", 5, "pod-a", LockVerdict.CONFLICT),
        # A frozen holder (not renewed for longer than the TTL): anyone takes it.
        ("kafka/main", "pod-b", 31, "pod-a", LockVerdict.EXPIRED),
        ("other/policy", "pod-b", 31, "pod-a", LockVerdict.EXPIRED),
    ],
)
def test_lock_verdicts(
    holder: str | None, replica: str | None, renewed: int, me: str, verdict: LockVerdict
) -> None:
    current = lock(holder, renewed_seconds_ago=renewed, replica=replica) if holder else None
    assert lock_verdict(current, "kafka/main", NOW, replica=me) is verdict
    # The planner does not know replicas: any replica of the policy counts as ours there.
    if holder == "kafka/main" and renewed < 30:
        assert lock_verdict(current, "kafka/main", NOW) is not LockVerdict.CONFLICT


def test_the_lock_records_own_ttl_wins_over_the_default() -> None:
    short = lock("other/policy", renewed_seconds_ago=8).model_copy(update={"ttl_seconds": 7})
    assert lock_verdict(short, "kafka/main", NOW, replica="pod-a") is LockVerdict.EXPIRED
    no_ttl = lock("other/policy", renewed_seconds_ago=8).model_copy(update={"ttl_seconds": None})
    assert lock_verdict(no_ttl, "kafka/main", NOW, ttl=timedelta(seconds=60)) is LockVerdict.CONFLICT


def test_cluster_key_prefers_the_cluster_id_and_normalizes_bootstrap_servers() -> None:
    a = spec().cluster.model_copy(update={"bootstrap_servers": ["B:9092", "a:9092"]})
    b = spec().cluster.model_copy(update={"bootstrap_servers": ["a:9092", "b:9092"]})
    assert cluster_key(a) == cluster_key(b) == "bootstrap:a:9092,b:9092"
    snap: ClusterSnapshot = snapshot(cluster_id="abc")
    assert cluster_key(a, snap) == "id:abc"
    name = lock_name("id:abc")
    assert name.startswith("khp-lock-") and len(name) <= 63 and name == lock_name("id:abc")


# --- approval ----------------------------------------------------------------------------------


def test_plan_id_is_deterministic_and_content_addressed() -> None:
    assert plan_id("ple", {"a": [1, 2]}) == plan_id("ple", {"a": [1, 2]})
    assert plan_id("ple", {"a": [1, 2]}) != plan_id("ple", {"a": [2, 1]})
    assert plan_id("ple", {"x": 1, "y": 2}) == plan_id("ple", {"y": 2, "x": 1})
    assert plan_id("ple", {"a": 1}) == f"ple-{plan_digest({'a': 1})}"


def test_plan_id_used_in_history_gets_a_suffix_so_an_approval_is_used_once() -> None:
    base = plan_id("ple", {"a": 1})
    history = [record(started=NOW, plan_id=base)]
    assert plan_id("ple", {"a": 1}, history) == f"{base}-2"
    history.append(record(started=NOW, plan_id=f"{base}-2"))
    assert plan_id("ple", {"a": 1}, history) == f"{base}-3"


def test_approval_by_annotation_or_spec() -> None:
    remediation = RemediationSpec(approved_plan_id="ple-1")
    approved = approvals(remediation, {ANNOTATION_APPROVE_PLAN: "roll-2"})
    assert approved == {"ple-1", "roll-2"}
    assert check_approval(True, "ple-1", approved) is None
    assert check_approval(True, "roll-2", approved) is None
    hold = check_approval(True, "reset-3", approved)
    assert hold is not None and hold.reason is WithheldReason.AWAITING_APPROVAL and "reset-3" in hold.message
    assert check_approval(False, "reset-3", set()) is None


# --- composition -------------------------------------------------------------------------------


def test_common_holds_reports_every_failing_guardrail() -> None:
    s = spec(mode="Enforce", paused=True, maintenanceWindows=[{"schedule": "0 12 * * *", "duration": "1h"}])
    s.remediation.preferred_leader_election.require_maintenance_window = True
    holds = common_holds(
        PLE,
        policy=PolicyRef("kafka", "main", 1),
        spec=s,
        status=KafkaHealthPolicyStatus(),
        snapshot=snapshot(),
        lock=lock("other/policy"),
        now=NOW,
    )
    assert [h.reason for h in holds] == [
        WithheldReason.PAUSED,
        WithheldReason.CLUSTER_LOCKED,
        WithheldReason.OUTSIDE_MAINTENANCE_WINDOW,
    ]


def test_a_step_of_an_action_in_flight_skips_the_starting_guardrails() -> None:
    status = KafkaHealthPolicyStatus(history=failures(5))
    kwargs: dict[str, Any] = {
        "policy": PolicyRef("kafka", "main", 1),
        "spec": spec(mode="Enforce"),
        "status": status,
        "snapshot": snapshot(),
        "lock": None,
        "now": NOW,
    }
    assert [h.reason for h in common_holds(ROLL, **kwargs)] == [
        WithheldReason.CIRCUIT_BREAKER_OPEN,
        WithheldReason.OUTSIDE_MAINTENANCE_WINDOW,  # rolling restarts need a window; none defined
    ]
    assert [h.reason for h in common_holds(ROLL, starting=False, **kwargs)] == [
        WithheldReason.OUTSIDE_MAINTENANCE_WINDOW
    ]


def test_policy_ref_from_metadata() -> None:
    ref = PolicyRef.from_metadata(
        {"namespace": "ns", "name": "p", "generation": 4, "annotations": {"a": "b"}}
    )
    assert (ref.key, ref.generation, dict(ref.annotations)) == ("ns/p", 4, {"a": "b"})
    assert PolicyRef.from_metadata({"name": "p"}).key == "default/p"


@pytest.mark.parametrize("mode", list(Mode))
def test_observe_is_the_only_mode_held_by_check_mode(mode: Mode) -> None:
    assert (check_mode(mode) is None) is (mode is not Mode.OBSERVE)
