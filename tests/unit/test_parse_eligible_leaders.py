"""DescribeTopicPartitions' answer, as kafka-python returns it, into each partition's ELR
(`collect.parse.eligible_leaders`): the answer below is the one a 4.4 testbed gave for an offline
partition whose replicas 0 and 1 left the ISR after it shrank below min.insync.replicas."""

from __future__ import annotations

from kafka_health.collect import parse
from kafka_health.models.snapshot import EligibleLeaders


def _partition(index: int, elr: list[int] | None, last_known: list[int] | None) -> dict[str, object]:
    return {
        "error_code": 0,
        "partition_index": index,
        "leader_id": -1,
        "leader_epoch": 1,
        "replica_nodes": [0, 1, 2],
        "isr_nodes": [],
        "eligible_leader_replicas": elr,
        "last_known_elr": last_known,
        "offline_replicas": [0, 1, 2],
    }


def test_each_partition_its_elr_and_a_refused_topic_its_error() -> None:
    answer = [
        {
            "error_code": 0,
            "name": "elr",
            "partitions": [_partition(0, [1, 0], [0]), _partition(1, None, None)],
        },
        {"error_code": 29, "name": "secret", "partitions": []},
        {"error_code": 3, "name": "gone", "partitions": []},
    ]
    found, errors = parse.eligible_leaders(answer)
    assert found == {
        "elr": [
            EligibleLeaders(topic="elr", partition=0, elr=[0, 1], last_known_elr=[0]),
            EligibleLeaders(topic="elr", partition=1, elr=[], last_known_elr=[]),
        ]
    }
    assert sorted(errors) == ["gone", "secret"]  # named as Kafka names its errors
    assert errors["secret"].startswith("TOPIC_AUTHORIZATION_FAILED: ")
    assert errors["gone"].startswith("UNKNOWN_TOPIC_OR_PARTITION: ")
