"""The election executor when the cluster cannot be read: an outcome, never an exception."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import pytest

from kafka_health.collect.kafka_admin import KafkaAdmin, Timeouts
from kafka_health.models.policy import ActionOutcome, ActionType
from kafka_health.plan.leader_election_plan import ElectionPlan, TopicPartition
from kafka_health.remediate.leader_election import (
    ElectionStatus,
    execute_election,
    execute_visible_election,
    refused_election,
)

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


def test_an_election_refused_for_authorization_names_the_missing_acl() -> None:
    """ElectLeaders needs ALTER on CLUSTER: a refusal, per partition or of the whole call, is named
    with the grant (history message); other failures are not called authorization failures."""
    from kafka_health.remediate.leader_election import ElectionOutcome, PartitionElection

    refused = "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."
    per_partition = ElectionOutcome(
        partitions=[
            PartitionElection(topic="orders", partition=0, status=ElectionStatus.FAILED, message=refused),
            PartitionElection(topic="orders", partition=1, status=ElectionStatus.ELECTED),
        ]
    )
    whole_call = ElectionOutcome(failed_reason=f"batch 1: elect_leaders: {refused}")
    for outcome in (per_partition, whole_call):
        denied = outcome.denied()
        assert denied is not None and denied.startswith(
            "authorization denied: the principal lacks ALTER on CLUSTER kafka-cluster"
        )
        assert "--operation Alter --cluster" in denied
        record = outcome.record(
            plan_id="p", started_at=NOW, finished_at=NOW, generation=1, breaker_reset=None
        )
        assert record.message is not None and record.message.endswith(denied)
    other = ElectionOutcome(
        partitions=[
            PartitionElection(
                topic="orders", partition=0, status=ElectionStatus.FAILED, message="REQUEST_TIMED_OUT"
            )
        ]
    )
    assert other.denied() is None
    # An authorization text on a partition that did not fail is not a refusal of the election.
    fine = ElectionOutcome(
        partitions=[
            PartitionElection(topic="o", partition=0, status=ElectionStatus.NOT_NEEDED, message=refused)
        ]
    )
    assert fine.denied() is None


def test_a_refused_post_roll_election_names_the_missing_acl(monkeypatch: pytest.MonkeyPatch) -> None:
    """The roll succeeded; its post-roll election was refused: the result says what to grant, not
    only Kafka's CLUSTER_AUTHORIZATION_FAILED."""
    from kafka_health.models.policy import CurrentRemediation, RemediationStep, RequestState
    from kafka_health.remediate import roll_end, rolling_restart
    from kafka_health.remediate.leader_election import ElectionOutcome

    refused = ElectionOutcome(failed_reason="batch 1: elect_leaders: CLUSTER_AUTHORIZATION_FAILED")
    monkeypatch.setattr(roll_end, "elect_preferred_for", lambda *a, **kw: refused)
    current = CurrentRemediation(
        action=ActionType.ROLLING_RESTART,
        id="r1",
        plan_id="roll-1",
        step=RemediationStep.ELECTING,
        started_at=NOW,
        brokers_done=[0, 1, 2],
    )
    result, election = rolling_restart.finish_roll(current, admin=cast(KafkaAdmin, None), clock=lambda: NOW)
    assert election is refused and result.state is RequestState.SUCCEEDED
    assert result.message is not None
    assert "restarted brokers 0, 1, 2" in result.message
    assert "lacks ALTER on CLUSTER kafka-cluster" in result.message
    assert "--operation Alter --cluster" in result.message

    other = ElectionOutcome(failed_reason="batch 1: elect_leaders: REQUEST_TIMED_OUT")
    monkeypatch.setattr(roll_end, "elect_preferred_for", lambda *a, **kw: other)
    result, _ = rolling_restart.finish_roll(current, admin=cast(KafkaAdmin, None), clock=lambda: NOW)
    assert result.message is not None and "lacks" not in result.message


def test_an_election_refused_for_hidden_partitions_names_them_and_sends_nothing() -> None:
    """Refused before its first batch: every planned partition failed, nothing sent, the
    visibility message (authorization denied: … DESCRIBE on TOPIC) is what `denied` names; an
    unreachable cluster refuses it too, for the metadata, without an ACL named."""
    tps = [TopicPartition(topic="orders", partition=p) for p in range(2)]
    plan = ElectionPlan(partitions=tps, batches=[tps])
    why = (
        "authorization denied: 5 partitions in 1 topic on the brokers are hidden from this principal (orders)"
    )
    outcome = refused_election(plan, why)
    assert not outcome.succeeded and outcome.batches_done == 0
    assert [(p.status, p.sent) for p in outcome.partitions] == [(ElectionStatus.FAILED, False)] * 2
    assert outcome.denied() == why
    assert "refused before any batch: authorization denied: 5 partitions" in outcome.summary()
    conf = {"bootstrap.servers": "127.0.0.1:1"}
    with KafkaAdmin(conf, timeouts=Timeouts(metadata=1.0, request=1.0)) as admin:
        unread = execute_visible_election(admin, plan)
    assert unread.refused is not None and unread.refused.startswith("the cluster metadata could not be read")
    assert unread.denied() is None and unread.count(ElectionStatus.FAILED) == 2


def test_elect_preferred_types_the_answer_and_still_unpacks_as_the_pair() -> None:
    """`leader_election.elect_preferred` types `KafkaAdmin.elect_preferred`'s (status, message)
    pairs (ElectResult): a caller that unpacks the pair, or compares the status with its text,
    reads the same as before."""
    from kafka_health.remediate.leader_election import ElectResult, elect_preferred

    class Answers:
        def elect_preferred(
            self, partitions: list[tuple[str, int]]
        ) -> dict[tuple[str, int], tuple[str, str | None]]:
            return {
                ("t", 0): ("elected", None),
                ("t", 1): ("not_needed", "ELECTION_NOT_NEEDED: leads already"),
            }

    typed = elect_preferred(cast(KafkaAdmin, Answers()), [("t", 0), ("t", 1)])
    assert typed[("t", 0)] == ElectResult(ElectionStatus.ELECTED, None)
    status, message = typed[("t", 1)]
    assert status is ElectionStatus.NOT_NEEDED and status == "not_needed"
    assert message == "ELECTION_NOT_NEEDED: leads already" and typed[("t", 1)] == ("not_needed", message)
