"""The election executor when the cluster cannot be read: an outcome, never an exception."""

from __future__ import annotations

from datetime import UTC, datetime

from kafka_health.collect.kafka_admin import KafkaAdmin, Timeouts
from kafka_health.models.policy import ActionOutcome, ActionType
from kafka_health.plan.leader_election_plan import ElectionPlan, TopicPartition
from kafka_health.remediate.leader_election import ElectionStatus, execute_election

NOW = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)


def test_unreachable_cluster_fails_the_run_with_a_reason() -> None:
    tps = [TopicPartition(topic="orders", partition=p) for p in range(3)]
    plan = ElectionPlan(partitions=tps, batches=[tps[:2], tps[2:]])
    conf = {"bootstrap.servers": "127.0.0.1:1", "sasl.password": "s3cret-value"}
    with KafkaAdmin(conf, timeouts=Timeouts(metadata=1.0, request=1.0)) as admin:
        outcome = execute_election(admin, plan)
    assert outcome.failed_reason is not None and outcome.failed_reason.startswith("batch 1: metadata")
    assert "s3cret-value" not in outcome.model_dump_json()
    assert [p.status for p in outcome.partitions] == [ElectionStatus.FAILED] * 3
    assert outcome.batches_done == 0 and not outcome.succeeded
    assert "stopped: batch 1" in outcome.summary()
    record = outcome.record(
        plan_id="ple-1", started_at=NOW, finished_at=NOW, generation=3, breaker_reset=None, request_id="r1"
    )
    assert (record.action, record.outcome, record.id, record.generation) == (
        ActionType.PREFERRED_LEADER_ELECTION,
        ActionOutcome.FAILED,
        "r1",
        3,
    )


def test_empty_plan_is_a_success() -> None:
    with KafkaAdmin(
        {"bootstrap.servers": "127.0.0.1:1"}, timeouts=Timeouts(metadata=1.0, request=1.0)
    ) as admin:
        outcome = execute_election(admin, ElectionPlan(partitions=[], batches=[]))
    assert outcome.succeeded and outcome.partitions == []
    assert outcome.summary().startswith("preferred leader election: 0 elected")
