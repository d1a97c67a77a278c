"""Pure parts of collect: connection mapping, secret scrubbing, response parsing, broker merging."""

from __future__ import annotations

import logging

import pytest

from kafka_health.collect import logs, parse
from kafka_health.collect.connection import ConnectionConfig, ConnectionConfigError, redact
from kafka_health.collect.kafka_admin import BrokerRegistration, GroupDescription
from kafka_health.collect.snapshot import group, merge_brokers
from kafka_health.models.snapshot import Broker, GroupOffset, Partition

SECURE = {
    "bootstrap.servers": "k1:9093,k2:9093",
    "security.protocol": "sasl_ssl",
    "sasl.mechanism": "scram-sha-512",
    "sasl.username": "ops",
    "sasl.password": "pa55-w0rd",
    "ssl.ca.location": "/etc/ca.pem",
    "ssl.certificate.location": "/etc/client.pem",
    "ssl.key.location": "/etc/client.key",
    "ssl.key.password": "key-secret",
}


def test_connection_maps_to_both_clients() -> None:
    conn = ConnectionConfig.from_dict(SECURE)
    assert conn.confluent()["security.protocol"] == "SASL_SSL"
    assert conn.confluent()["sasl.mechanism"] == "SCRAM-SHA-512"
    assert conn.kafka_python() == {
        "bootstrap_servers": ["k1:9093", "k2:9093"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "ops",
        "sasl_plain_password": "pa55-w0rd",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_certfile": "/etc/client.pem",
        "ssl_keyfile": "/etc/client.key",
        "ssl_password": "key-secret",
    }


def test_connection_repr_and_errors_never_show_secrets() -> None:
    conn = ConnectionConfig.from_dict(SECURE)
    assert "pa55-w0rd" not in repr(conn) and "key-secret" not in repr(conn)
    assert "***" in repr(conn)
    with pytest.raises(ConnectionConfigError) as err:
        ConnectionConfig.from_dict({**SECURE, "sasl.jaas.config": "hunter2"})
    assert "sasl.jaas.config" in str(err.value) and "hunter2" not in str(err.value)
    with pytest.raises(ConnectionConfigError, match=r"bootstrap\.servers"):
        ConnectionConfig.from_dict({"security.protocol": "SSL"})
    with pytest.raises(ConnectionConfigError, match=r"sasl\.mechanism"):
        ConnectionConfig.from_dict({"bootstrap.servers": "k:9092", "sasl.mechanism": "GSSAPI"})
    assert redact("login pa55-w0rd failed", conn.secrets) == "login *** failed"


def test_kafka_python_config_dump_is_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python logs its whole configuration at DEBUG; the password must not reach a handler."""
    from kafka import KafkaAdminClient

    logs.install()
    logs.SECRETS.add(["pa55-w0rd"])
    try:
        with caplog.at_level(logging.DEBUG, logger="kafka.admin.client"), pytest.raises(Exception):  # noqa: B017
            KafkaAdminClient(
                bootstrap_servers="127.0.0.1:1",
                sasl_plain_password="pa55-w0rd",
                bootstrap_timeout_ms=200,
            )
    finally:
        logs.SECRETS.remove(["pa55-w0rd"])
    dumps = [r.getMessage() for r in caplog.records if r.name == "kafka.admin.client"]
    assert any("configuration" in m for m in dumps)
    assert not any("pa55-w0rd" in m for m in dumps)


def test_repeat_filter_thins_identical_messages() -> None:
    now = [0.0]
    flt = logs.RepeatFilter(window=30, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("x", logging.ERROR, __file__, 1, msg, None, None)

    assert flt.filter(record("connect failed"))
    assert not flt.filter(record("connect failed"))
    assert flt.filter(record("other"))
    now[0] = 31
    assert flt.filter(record("connect failed"))


def test_repeat_filter_ignores_client_instance_and_timing() -> None:
    flt = logs.RepeatFilter(window=30, clock=lambda: 0.0)

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("x", logging.ERROR, __file__, 1, msg, None, None)

    first = (
        "FAIL [rdkafka#producer-97] [thrd:127.0.0.1:1/bootstrap]: Connect failed (after 0ms in state CONNECT)"
    )
    again = (
        "FAIL [rdkafka#producer-4] [thrd:127.0.0.1:1/bootstrap]: Connect failed "
        "(after 2ms in state CONNECT, 67 identical error(s) suppressed)"
    )
    other_broker = (
        "FAIL [rdkafka#producer-4] [thrd:127.0.0.1:2/bootstrap]: Connect failed (after 2ms in state CONNECT)"
    )
    assert flt.filter(record(first))
    assert not flt.filter(record(again))
    assert flt.filter(record(other_broker))


def test_quorum_lag_is_leader_leo_minus_voter_leo() -> None:
    raw = {
        "topics": [
            {
                "partitions": [
                    {
                        "error": None,
                        "leader_id": 1,
                        "leader_epoch": 7,
                        "high_watermark": 500,
                        "current_voters": [
                            {"replica_id": 0, "log_end_offset": 480, "last_caught_up_timestamp": 10},
                            {"replica_id": 1, "log_end_offset": 510, "last_caught_up_timestamp": 20},
                            {"replica_id": 2, "log_end_offset": -1, "last_caught_up_timestamp": -1},
                        ],
                        "observers": [{"replica_id": 5, "log_end_offset": 505}],
                    }
                ]
            }
        ]
    }
    q = parse.quorum(raw)
    assert (q.leader_id, q.leader_epoch, q.high_watermark) == (1, 7, 500)
    assert [(v.id, v.lag) for v in q.voters] == [(0, 30), (1, 0), (2, None)]
    assert q.voters[2].log_end_offset is None and q.voters[2].last_caught_up_ms is None
    assert q.observers[0].lag == 5
    raw["topics"][0]["partitions"][0]["leader_id"] = -1
    leaderless = parse.quorum(raw)
    assert leaderless.leader_id is None and all(v.lag is None for v in leaderless.voters)


def test_log_dirs_sum_partitions_and_keep_errors() -> None:
    results = [
        {
            "error_code": 0,
            "log_dir": "/data/a",
            "total_bytes": 1000,
            "usable_bytes": 400,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 1, "partition_size": 10, "is_future_key": False},
                        {"partition_index": 0, "partition_size": 32, "is_future_key": False},
                        {"partition_index": 0, "partition_size": 5, "is_future_key": True},
                    ],
                }
            ],
        },
        {"error_code": 57, "log_dir": "/data/b", "total_bytes": -1, "usable_bytes": -1, "topics": []},
    ]
    a, b = parse.log_dirs(3, results)
    assert (a.broker_id, a.used_bytes, a.total_bytes, a.usable_bytes, a.error) == (3, 47, 1000, 400, None)
    assert a.sizes == {"t": {0: 32, 1: 10}}  # the future copy of t-0 (an intra-broker move) counts once
    assert (b.used_bytes, b.total_bytes, b.error, b.sizes) == (None, None, "LogDirNotFoundError", {})


def test_topic_config_values_are_typed() -> None:
    cfg = parse.topic_config(
        "t",
        {
            "min.insync.replicas": "2",
            "unclean.leader.election.enable": "true",
            "retention.ms": "-1",
            "retention.bytes": "1073741824",
            "cleanup.policy": "compact,delete",
        },
    )
    assert cfg.min_insync_replicas == 2 and cfg.unclean_leader_election_enable is True
    assert cfg.retention_ms == -1 and cfg.retention_bytes == 1 << 30
    assert cfg.cleanup_policy == "compact,delete"
    assert parse.topic_config("t", {}).min_insync_replicas is None
    assert parse.group_state("PREPARING_REBALANCING") == "PreparingRebalance"


def test_merge_brokers_keeps_fenced_and_replica_only_brokers() -> None:
    alive = [Broker(id=0, host="h0", port=1, alive=True)]
    regs = [
        BrokerRegistration(id=0, host="h0", port=1, rack="r0", fenced=False),
        BrokerRegistration(id=1, host="h1", port=2, rack="r1", fenced=True),
    ]
    parts = [Partition(topic="t", partition=0, leader=0, replicas=[0, 1, 4], isr=[0])]
    merged = merge_brokers(alive, regs, parts)
    assert [(b.id, b.alive, b.fenced, b.rack) for b in merged] == [
        (0, True, False, "r0"),
        (1, False, True, "r1"),
        (4, False, None, None),
    ]
    assert merge_brokers(alive, None, parts)[1].fenced is None  # registrations unknown


def test_group_adds_assigned_but_uncommitted_partitions() -> None:
    desc = GroupDescription(
        group_id="g", state="Stable", member_ids=["a", "b"], assigned=[("t", 0), ("t", 1)]
    )
    g = group(desc, [GroupOffset(topic="t", partition=0, committed_offset=5)])
    assert g.members == 2
    assert [(o.partition, o.committed_offset) for o in g.offsets] == [(0, 5), (1, None)]
