"""run_diagnosis: every check plus findings for what the snapshot could not read."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kafka_health.diagnose import run_diagnosis
from kafka_health.models.findings import Diagnosis, Severity, SubjectKind
from kafka_health.models.snapshot import ClusterSnapshot, LogDir, Missing
from kafka_health_spark.thresholds import Thresholds
from tests.spark.builders import (
    T0,
    at,
    balanced_topic,
    brokers,
    end_offsets,
    group,
    part,
    record,
    snapshot,
)

pytestmark = pytest.mark.spark


def test_unreachable_cluster_is_one_critical_finding(spark: SparkSession) -> None:
    snap = ClusterSnapshot(
        cluster="c",
        taken_at=T0,
        missing=[Missing(part="metadata", reason="timed out; nothing else was read")],
    )
    d = run_diagnosis(snap, None, None, spark)
    assert [(f.check, f.severity) for f in d.findings] == [("cluster_unreachable", Severity.CRITICAL)]
    assert d.missing == ["metadata"]
    assert d.summary is None
    assert d.exit_code() == 4


def test_each_unread_part_is_reported_on_its_subject(spark: SparkSession) -> None:
    snap = snapshot(partitions=balanced_topic("orders"))
    snap.missing = [
        Missing(part="quorum", reason="timeout"),
        Missing(part="configs:orders", reason="authorization failed"),
        Missing(part="group:billing", reason="coordinator not available"),
        Missing(part="log_dirs:2", reason="timeout"),
    ]
    d = run_diagnosis(snap, None, None, spark)
    incomplete = {f.subject.key(): f for f in d.findings if f.check == "snapshot_incomplete"}
    assert set(incomplete) == {"topic/topic=orders", "group/group=billing", "broker/broker=2"}
    assert "disk checks" in incomplete["broker/broker=2"].message
    # A quorum unanswered while every broker is alive and answered the rest: it has no leader.
    (lost,) = [f for f in d.findings if f.check == "quorum_no_leader"]
    assert (lost.subject.key(), lost.severity.value) == ("cluster", "critical")
    assert d.missing == ["quorum", "configs:orders", "group:billing", "log_dirs:2"]
    assert d.exit_code() == 4  # critical

    # The same quorum timeout beside a fenced broker: the request may have gone to it.
    fenced = snapshot(partitions=balanced_topic("orders"), broker_list=brokers(0, 1, dead=(2,)))
    fenced.missing = [Missing(part="quorum", reason="timeout")]
    d = run_diagnosis(fenced, None, None, spark)
    assert not [f for f in d.findings if f.check == "quorum_no_leader"]
    assert [f.subject.key() for f in d.findings if f.check == "snapshot_incomplete"] == ["cluster"]


def test_empty_cluster_is_healthy(spark: SparkSession) -> None:
    d = run_diagnosis(snapshot(), None, None, spark)
    assert d.findings == []
    assert d.exit_code() == 0
    assert d.summary is not None
    assert (d.summary.topics, d.summary.partitions, d.summary.groups) == (0, 0, 0)
    assert [b.broker for b in d.summary.brokers] == [0, 1, 2]


def test_findings_are_worst_first_and_survive_json(spark: SparkSession) -> None:
    snap = snapshot(
        partitions=[*balanced_topic("orders"), part("rf1", 0, 1, [1])],
        broker_list=brokers(0, 2, dead=(1,)),
    )
    d = run_diagnosis(snap, None, None, spark)
    ranks = [f.severity.rank for f in d.findings]
    assert ranks == sorted(ranks, reverse=True)
    assert {"broker_missing", "offline_partition", "low_replication_factor"} <= {f.check for f in d.findings}
    assert Diagnosis.model_validate_json(d.model_dump_json()) == d


def test_summary_counts_and_series(spark: SparkSession, tmp_path: Path) -> None:
    def snap(m: float, committed: int, end: int) -> ClusterSnapshot:
        return snapshot(
            partitions=balanced_topic("t", 3),
            offsets=end_offsets({("t", p): end for p in range(3)}),
            groups=[group("g", {("t", p): committed for p in range(3)})],
            log_dirs=[
                LogDir(broker_id=b, path="/d", used_bytes=1000 * (b + 1), total_bytes=10_000)
                for b in range(3)
            ],
            taken_at=at(m),
        )

    record(tmp_path, [snap(-10, 10, 20), snap(-5, 20, 40)])
    d = run_diagnosis(snap(0, 30, 60), tmp_path, Thresholds(), spark)
    assert d.summary is not None
    s = d.summary
    assert (s.topics, s.partitions, s.groups) == (1, 3, 1)
    assert [(b.broker, b.partitions, b.leaders, b.preferred_leaders) for b in s.brokers] == [
        (0, 3, 1, 1),
        (1, 3, 1, 1),
        (2, 3, 1, 1),
    ]
    assert [b.used_bytes for b in s.brokers] == [1000, 2000, 3000]
    assert [(p.key, p.value) for p in s.lag] == [("g", 30.0), ("g", 60.0), ("g", 90.0)]
    assert len([p for p in s.disk_used_bytes if p.key == "0"]) == 3
    # The lag never shrank while the offsets moved: Burrow's WARN for the group.
    groups = [f for f in d.findings if f.check == "consumer_lag" and f.subject.kind is SubjectKind.GROUP]
    assert [(f.subject.group, f.evidence["status"], f.evidence["total_lag"]) for f in groups] == [
        ("g", "WARN", 90)
    ]
