"""Stuck reconciliation (KIP-848): members whose assignment stays unlike their target, judged
by how long the history has seen them so."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.diagnose.run import run_diagnosis
from kafka_health.history.store import HistoryStore
from kafka_health.models.snapshot import ConsumerGroup, GroupMember
from kafka_health_spark import reuse
from kafka_health_spark.checks import reconciliation
from kafka_health_spark.slot_windows import SlotWindows
from kafka_health_spark.thresholds import Thresholds
from tests.spark.builders import CLUSTER, at, balanced_topic, check_findings, record, snapshot

pytestmark = pytest.mark.spark

ALL = [("t", p) for p in range(4)]


def grp(*members: GroupMember) -> ConsumerGroup:
    ids = [m.member_id for m in members]
    return ConsumerGroup(
        group_id="g", state="Stable", members=len(ids), member_ids=ids, member_details=list(members)
    )


def blocked() -> GroupMember:
    """Owns every partition; its target keeps only 0 and 1 (2 and 3 went to `waiting`)."""
    return GroupMember(member_id="A", client_id="app-a", host="/10.0.0.1", assignment=ALL, target=ALL[:2])


def waiting() -> GroupMember:
    return GroupMember(member_id="B", client_id="app-b", host="/10.0.0.2", assignment=[], target=ALL[2:])


def settled() -> GroupMember:
    return GroupMember(member_id="A", client_id="app-a", host="/10.0.0.1", assignment=ALL[:2], target=ALL[:2])


def test_a_member_reconciling_past_the_threshold_is_stuck_and_named_first(
    spark: SparkSession, tmp_path: Path
) -> None:
    now = snapshot(groups=[grp(blocked(), waiting())])
    record(tmp_path, [snapshot(groups=[grp(blocked(), waiting())], taken_at=at(m)) for m in (-6, -3)] + [now])
    (f,) = check_findings(spark, reconciliation.reconciliation_stuck, now, tmp_path)
    assert (f.check, f.severity.value, f.subject.group) == ("reconciliation_stuck", "warning", "g")
    assert f.evidence["blocking_member_ids"] == "A"  # B only waits for what A holds
    assert f.evidence["member_ids"] == "A,B"
    assert f.evidence["to_revoke"] == "t-2,t-3" and f.evidence["to_gain"] == "t-2,t-3"
    assert f.evidence["since"] == at(-6).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f.message.index(
        "A (client app-a, host /10.0.0.1): to revoke t-2,t-3; to gain none"
    ) < f.message.index("B (client app-b")
    assert "kafka-consumer-groups" in (f.remediation or "")


def test_reconciling_for_less_than_the_threshold_is_not_judged(spark: SparkSession, tmp_path: Path) -> None:
    now = snapshot(groups=[grp(blocked())])
    record(tmp_path, [snapshot(groups=[grp(blocked())], taken_at=at(-3)), now])
    assert check_findings(spark, reconciliation.reconciliation_stuck, now, tmp_path) == []
    assert check_findings(
        spark, reconciliation.reconciliation_stuck, now, tmp_path, reconciliation_stuck_minutes=2
    )


def test_a_member_that_reconciled_in_between_starts_again(spark: SparkSession, tmp_path: Path) -> None:
    now = snapshot(groups=[grp(blocked())])
    past = [snapshot(groups=[grp(g)], taken_at=at(m)) for m, g in ((-10, blocked()), (-5, settled()))]
    record(tmp_path, [*past, now])
    assert now.groups[0].member_details[0].mismatch_since == now.taken_at
    assert check_findings(spark, reconciliation.reconciliation_stuck, now, tmp_path) == []


def test_without_a_history_nothing_is_judged(spark: SparkSession) -> None:
    now = snapshot(groups=[grp(blocked())])
    assert now.groups[0].member_details[0].mismatch_since is None
    assert check_findings(spark, reconciliation.reconciliation_stuck, now) == []


def test_a_classic_group_has_no_target_and_is_not_judged(spark: SparkSession, tmp_path: Path) -> None:
    def classic() -> GroupMember:
        return GroupMember(member_id="A", assignment=ALL, target=None)

    now = snapshot(groups=[grp(classic())])
    record(tmp_path, [snapshot(groups=[grp(classic())], taken_at=at(-30)), now])
    assert check_findings(spark, reconciliation.reconciliation_stuck, now, tmp_path) == []


def test_reused_plans_find_it_as_fresh_plans_do(spark: SparkSession, tmp_path: Path) -> None:
    """The operator's reused plans read the members from their own slot: the same finding."""
    store = HistoryStore(tmp_path)
    windows = SlotWindows(spark, str(tmp_path), CLUSTER)
    plans = reuse.ReusedPlans(spark, one_partition=True)
    try:
        for minutes in (-6, 0):
            snap = snapshot(
                partitions=balanced_topic("t", 4), groups=[grp(blocked(), waiting())], taken_at=at(minutes)
            )
            windows.record(store.append(snap).tables, snap.taken_at)
            fresh = run_diagnosis(snap, tmp_path, Thresholds(), spark)
            reused = run_diagnosis(snap, tmp_path, Thresholds(), spark, windows=windows, plans=plans)
            assert reused.findings == fresh.findings, minutes
    finally:
        plans.close()
        windows.close()
    (f,) = [f for f in fresh.findings if f.check == "reconciliation_stuck"]
    assert f.evidence["blocking_member_ids"] == "A"
