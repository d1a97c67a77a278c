"""The messages `kafka_health/collect/kafka_schemas/` describes for kafka-python encode as Kafka's
own definitions say, in the jars of the testbed's Kafka version (`hack/kafka_schemas.py` writes
them from there): a field Kafka adds, moves or gates differently fails here, not as a garbled
answer from a broker. Each also builds into a request kafka-python can encode and a response
class it can decode."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from kafka_health.collect import kafka_schemas
from kafka_health.testbed import distribution

HERE = Path(kafka_schemas.__file__).parent
ROOT = Path(__file__).resolve().parents[2]


def _hack() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kafka_schemas_hack", ROOT / "hack" / "kafka_schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HACK = _hack()


def test_every_described_message_is_written_by_the_script() -> None:
    assert sorted(p.stem for p in HERE.glob("*.json")) == sorted(HACK.MESSAGES)


@pytest.mark.parametrize("name", HACK.MESSAGES)
def test_the_wire_shape_is_kafkas_own(name: str) -> None:
    version = distribution.KAFKA_VERSION
    jar = distribution.ensure_kafka(version) / f"kafka-clients-{version}.jar"
    ours = json.loads((HERE / f"{name}.json").read_text())
    assert ours == HACK.wire_shape(HACK.kafka_definition(jar, name)), f"{name}: rerun hack/kafka_schemas.py"


def test_share_group_offsets_round_trip_with_kafkas_lag_from_v1_only() -> None:
    """DescribeShareGroupOffsets v1 (Kafka 4.2+, KIP-1226) carries Kafka's lag; v0 (Kafka 4.1)
    does not, and the group then has no reported lag rather than a made-up one."""
    from kafka_health.collect.kafka_schemas.messages import DescribeShareGroupOffsetsResponse as R
    from kafka_health.collect.share_groups import share_group

    G = R.DescribeShareGroupOffsetsResponseGroup
    T = G.DescribeShareGroupOffsetsResponseTopic
    P = T.DescribeShareGroupOffsetsResponsePartition
    partitions = [
        P(partition_index=0, start_offset=5, leader_epoch=0, lag=7, error_code=0, error_message=None),
        P(partition_index=1, start_offset=-1, leader_epoch=0, lag=-1, error_code=0, error_message=None),
    ]
    topic = T(topic_name="t", topic_id="222285f3-5770-49db-b254-2dde288e2197", partitions=partitions)
    answer = R(throttle_time_ms=0, groups=[G(group_id="q", topics=[topic], error_code=0, error_message=None)])
    describe = {"group_id": "q", "group_state": "Empty", "members": []}
    read = {}
    for version in (0, 1):
        (group,) = R.decode(answer.encode(version=version), version=version).to_dict()["groups"]
        offsets = share_group(describe, group).offsets
        read[version] = [(o.partition, o.committed_offset, o.reported_lag) for o in offsets]
    assert read == {0: [(0, 5, None), (1, None, None)], 1: [(0, 5, 7), (1, None, None)]}


def test_the_describe_requests_encode() -> None:
    from kafka_health.collect.kafka_schemas.messages import (
        DescribeShareGroupOffsetsRequest,
        ShareGroupDescribeRequest,
    )

    request = ShareGroupDescribeRequest(group_ids=["q"], include_authorized_operations=False)
    assert request.API_KEY == 77
    assert ShareGroupDescribeRequest.decode(request.encode(version=1), version=1).group_ids == ["q"]
    group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    offsets = DescribeShareGroupOffsetsRequest(groups=[group(group_id="q", topics=None)])
    decoded = DescribeShareGroupOffsetsRequest.decode(offsets.encode(version=1), version=1)
    assert offsets.API_KEY == 90 and decoded.to_dict() == {"groups": [{"group_id": "q", "topics": None}]}
