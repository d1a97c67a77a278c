"""`collect.replica_lag`: which replicas are behind and by how much, from the log dirs' sizes;
`parse.broker_throttle`: a broker's rates, Kafka's default read as none."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from kafka_health.collect import parse
from kafka_health.collect.replica_lag import replica_lags
from kafka_health.models.snapshot import LogDir, Partition, Reassignment


def _dirs(sizes: dict[int, dict[tuple[str, int], int]]) -> list[LogDir]:
    out = []
    for broker, by_tp in sizes.items():
        topics: dict[str, dict[int, int]] = {}
        for (t, p), size in by_tp.items():
            topics.setdefault(t, {})[p] = size
        out.append(LogDir(broker_id=broker, path="/d", sizes=topics))
    return out


def test_out_of_sync_and_adding_replicas_get_their_lag_behind_the_leader() -> None:
    parts = [
        Partition(topic="a", partition=0, leader=0, replicas=[0, 1, 2], isr=[0, 1]),  # 2 out
        Partition(topic="a", partition=1, leader=1, replicas=[1, 0, 2], isr=[1, 0, 2]),  # in sync
        Partition(topic="b", partition=0, leader=0, replicas=[0, 1, 2], isr=[0, 1, 2]),  # 2 being added
        Partition(topic="b", partition=1, leader=None, replicas=[0, 1], isr=[]),  # offline: no leader
        Partition(topic="c", partition=0, leader=1, replicas=[1, 2], isr=[1]),  # 2 answered nothing
    ]
    dirs = _dirs(
        {
            0: {("a", 0): 1000, ("a", 1): 500, ("b", 0): 700, ("b", 1): 5},
            1: {("a", 0): 1000, ("a", 1): 500, ("b", 0): 700, ("c", 0): 10},
            2: {("a", 0): 400, ("a", 1): 500, ("b", 0): 900},  # ahead of its leader: lag 0
        }
    )
    moves = [Reassignment(topic="b", partition=0, replicas=[0, 1, 2], adding=[2])]
    got = {
        (r.topic, r.partition, r.broker): (r.size_bytes, r.leader_size_bytes, r.lag_bytes)
        for r in replica_lags(parts, moves, dirs)
    }
    assert got == {("a", 0, 2): (400, 1000, 600), ("b", 0, 2): (900, 700, 0)}


def test_a_future_replica_is_not_the_replicas_size() -> None:
    raw = [
        {
            "error_code": 0,
            "log_dir": "/d",
            "topics": [
                {
                    "name": "a",
                    "partitions": [
                        {"partition_index": 0, "partition_size": 100, "is_future_key": False},
                        {"partition_index": 0, "partition_size": 7, "is_future_key": True},
                    ],
                }
            ],
        }
    ]
    (d,) = parse.log_dirs(3, raw)
    assert d.sizes == {"a": {0: 100}} and d.used_bytes == 107


def test_a_brokers_rates_with_kafkas_default_read_as_none() -> None:
    entry = SimpleNamespace
    t = parse.broker_throttle(
        2,
        {
            "leader.replication.throttled.rate": entry(value="50000"),
            "follower.replication.throttled.rate": entry(value=str(2**63 - 1)),
        },
    )
    assert (t.broker, t.leader_rate, t.follower_rate) == (2, 50000, None)
    assert parse.broker_throttle(0, {}).leader_rate is None


def test_unread_rates_are_a_gap_only_while_a_throttle_is_in_play() -> None:
    from kafka_health.collect.snapshot import throttle_in_play
    from kafka_health.models.snapshot import ClusterSnapshot, TopicConfig

    snap = ClusterSnapshot(cluster="c", taken_at=datetime(2026, 11, 28, tzinfo=UTC))
    assert not throttle_in_play(snap)
    snap.topic_configs = [TopicConfig(topic="t", follower_replication_throttled_replicas="0:2")]
    assert throttle_in_play(snap)
    snap.topic_configs = [TopicConfig(topic="t")]
    snap.reassignments = [Reassignment(topic="t", partition=0, replicas=[0, 1, 2], adding=[2])]
    assert throttle_in_play(snap)


def test_a_refused_rate_read_names_describe_configs_on_cluster() -> None:
    from kafka_health.collect.security_errors import authorization_denied

    said = authorization_denied(
        "broker_throttles:2", "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed"
    )
    assert said is not None
    assert (
        "lacks DESCRIBE_CONFIGS on CLUSTER kafka-cluster" in said
        and "--operation DescribeConfigs --cluster" in said
    )
