"""ListPartitionReassignments as kafka-python answers it (`collect.parse.reassignments`): the
answer below has the shape a 4.4 testbed gave during `kafka-reassign-partitions --execute`
adding broker 2 to three partitions of a topic on brokers 0 and 1."""

from __future__ import annotations

from kafka import TopicPartition

from kafka_health.collect import parse
from kafka_health.diagnose.missing import judged
from kafka_health.models.findings import Finding, Severity, Subject, SubjectKind
from kafka_health.models.snapshot import Missing, Reassignment


def test_reassignments_are_read_by_topic_and_partition() -> None:
    answer = {
        TopicPartition("mv2", 1): {"replicas": [1, 0, 2], "adding_replicas": [2], "removing_replicas": []},
        TopicPartition("mv2", 0): {"replicas": [0, 1, 2], "adding_replicas": [2], "removing_replicas": []},
        TopicPartition("a", 3): {
            "replicas": [3, 2, 1, 0],
            "adding_replicas": [3, 2],
            "removing_replicas": [0, 1],
        },
    }
    assert parse.reassignments(answer) == [
        Reassignment(topic="a", partition=3, replicas=[3, 2, 1, 0], adding=[2, 3], removing=[0, 1]),
        Reassignment(topic="mv2", partition=0, replicas=[0, 1, 2], adding=[2], removing=[]),
        Reassignment(topic="mv2", partition=1, replicas=[1, 0, 2], adding=[2], removing=[]),
    ]
    assert parse.reassignments({}) == []


def test_the_throttle_configs_are_read_and_an_empty_one_is_none() -> None:
    cfg = parse.topic_config(
        "mv2",
        {
            "leader.replication.throttled.replicas": "0:0,0:1",
            "follower.replication.throttled.replicas": "",
        },
    )
    assert cfg.leader_replication_throttled_replicas == "0:0,0:1"
    assert cfg.follower_replication_throttled_replicas is None


def _throttle_left() -> Finding:
    return Finding(
        check="replication_throttle_left",
        severity=Severity.WARNING,
        subject=Subject(kind=SubjectKind.TOPIC, topic="mv2"),
        message="m",
    )


def test_a_throttle_is_not_judged_left_behind_when_the_reassignments_were_not_read() -> None:
    other = Finding(
        check="under_replicated",
        severity=Severity.WARNING,
        subject=Subject(kind=SubjectKind.CLUSTER),
        message="m",
    )
    findings = [_throttle_left(), other]
    assert judged(findings, []) == findings
    assert judged(findings, [Missing(part="quorum", reason="r")]) == findings
    assert judged(findings, [Missing(part="reassignments", reason="r")]) == [other]
