"""Stuck reconciliation's pure parts: a member read from confluent-kafka, the time since it
reconciles carried over recorded snapshots, the policy's threshold, the group's incident."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import TopicPartition
from confluent_kafka.admin import MemberAssignment, MemberDescription

from kafka_health.collect import parse
from kafka_health.diagnose.from_policy import CHECK_TOGGLES, thresholds_for
from kafka_health.diagnose.incidents import group_incidents
from kafka_health.history import reconciliation
from kafka_health.history.store import HistoryStore
from kafka_health.models.findings import Finding, Severity, Subject, SubjectKind
from kafka_health.models.policy import Checks
from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup, GroupMember

T0 = datetime(2026, 11, 29, 5, 0, tzinfo=UTC)
ALL = [("t", 0), ("t", 1)]


def snap(at: datetime, *members: GroupMember) -> ClusterSnapshot:
    group = ConsumerGroup(
        group_id="g",
        state="Stable",
        members=len(members),
        member_ids=[m.member_id for m in members],
        member_details=[m.model_copy() for m in members],
    )
    return ClusterSnapshot(cluster="c", taken_at=at, groups=[group])


def member(
    assignment: list[tuple[str, int]], target: list[tuple[str, int]] | None, mid: str = "A"
) -> GroupMember:
    return GroupMember(member_id=mid, assignment=assignment, target=target)


def since(s: ClusterSnapshot, mid: str = "A") -> datetime | None:
    return next(m.mismatch_since for m in s.groups[0].member_details if m.member_id == mid)


def test_a_consumer_member_keeps_its_target_and_a_classic_one_has_none() -> None:
    owned = MemberAssignment([TopicPartition("t", 1), TopicPartition("t", 0)])
    consumer = MemberDescription(
        "A", "app", "/h", owned, target_assignment=MemberAssignment([TopicPartition("t", 0)])
    )
    classic = MemberDescription("B", "app", "/h", owned)
    a, b = parse.group_member(consumer), parse.group_member(classic)
    assert (a.assignment, a.target, a.client_id, a.host) == (ALL, [("t", 0)], "app", "/h")
    assert a.reconciling
    assert b.target is None and not b.reconciling  # no target: not judged, never "matches"


def test_the_start_is_carried_while_the_member_keeps_reconciling() -> None:
    first = snap(T0, member(ALL, ALL[:1]), member([], ALL[1:], "B"))
    record = reconciliation.carry({}, first)
    assert since(first) == since(first, "B") == T0
    later = snap(T0 + timedelta(minutes=1), member(ALL, ALL[:1]), member(ALL[1:], ALL[1:], "B"))
    record = reconciliation.carry(record, later)
    assert since(later) == T0  # still reconciling: since the first sample that saw it
    assert since(later, "B") is None and record == {("g", "A"): T0}  # B reconciled


def test_a_member_that_matched_in_between_starts_again() -> None:
    record = reconciliation.carry({}, snap(T0, member(ALL, ALL[:1])))
    record = reconciliation.carry(record, snap(T0 + timedelta(minutes=1), member(ALL[:1], ALL[:1])))
    again = snap(T0 + timedelta(minutes=2), member(ALL, ALL[:1]))
    reconciliation.carry(record, again)
    assert since(again) == T0 + timedelta(minutes=2)


def test_the_record_survives_the_file_and_the_store_carries_it(tmp_path: Path) -> None:
    record = {("g", "A"): T0}
    path = tmp_path / reconciliation.RECONCILING_FILE
    path.write_text(reconciliation.dumps(record, T0))
    assert reconciliation.load(path) == record
    assert reconciliation.load(tmp_path / "absent.json") == {}

    store = HistoryStore(tmp_path / "h")
    first, later = snap(T0, member(ALL, ALL[:1])), snap(T0 + timedelta(minutes=6), member(ALL, ALL[:1]))
    store.append(first)
    HistoryStore(tmp_path / "h").append(later)  # another store (a restarted operator) reads the file
    assert since(later) == T0
    latest = store.latest("c")
    assert latest is not None and since(latest) == T0  # the recorded snapshot carries it too


def test_the_policy_sets_the_threshold_and_toggles_the_check() -> None:
    checks = Checks.model_validate({"reconciliation": {"stuckAfter": "90s"}})
    assert thresholds_for(checks).reconciliation_stuck_minutes == 1.5
    assert thresholds_for(Checks()).reconciliation_stuck_minutes == 5
    assert CHECK_TOGGLES["reconciliation_stuck"] == "reconciliation"


def test_the_finding_belongs_to_the_groups_incident() -> None:
    stuck = Finding(
        check="reconciliation_stuck",
        severity=Severity.WARNING,
        subject=Subject(kind=SubjectKind.GROUP, group="billing"),
        message="Group billing: 1 member(s) stuck reconciling.",
        evidence={"blocking_member_ids": "A"},
        remediation="check the application",
    )
    (incident,) = group_incidents([stuck])
    assert incident.id == "consumer_group:billing" and incident.findings == [stuck]
