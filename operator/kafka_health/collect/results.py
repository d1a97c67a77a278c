"""What `KafkaAdmin` calls return: typed values, and `Partial` results that keep per-item errors."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kafka_health.models.snapshot import Broker, GroupMember, Partition

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

TopicPartitionKey = tuple[str, int]


ZOOKEEPER_MODE = (
    "the brokers do not serve DescribeQuorum (the KRaft metadata quorum API): a ZooKeeper-mode "
    "cluster (or a KRaft one older than Kafka 3.3); kafka-health supports KRaft clusters only "
    "(tested: Kafka 3.9 and 4.1)"
)
"""The reason of the `quorum` part when no broker knows the quorum API: the one sign of a
ZooKeeper-mode cluster that the operator and the CLI refuse (`collect.snapshot.zookeeper_mode`)."""


class AdminCallError(RuntimeError):
    """A whole admin call failed or timed out. The message never contains secrets."""

    def __init__(self, call: str, reason: str) -> None:
        super().__init__(f"{call}: {reason}")
        self.call = call
        self.reason = reason


@dataclass(frozen=True)
class Timeouts:
    """Seconds. `metadata` bounds the first call of a cycle (so an unreachable cluster is
    reported within it); `request` bounds every other call."""

    metadata: float = 6.0
    request: float = 10.0


@dataclass
class Partial(Generic[K, V]):
    """Results of a call over many items: the values read and, per item, why one was not."""

    values: dict[K, V] = field(default_factory=dict)
    errors: dict[K, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterMetadata:
    """One Metadata answer. `controller_id` is NOT the active controller in KRaft (a random
    broker); the active controller is `describe_quorum().leader_id`."""

    cluster_id: str | None
    controller_id: int | None
    brokers: list[Broker]  # registered and unfenced now (alive)
    partitions: list[Partition]
    topic_errors: dict[str, str]  # topics listed with a topic-level error (partitions unknown)


@dataclass(frozen=True)
class BrokerRegistration:
    """A broker registered with the KRaft controller, fenced or not (DescribeCluster)."""

    id: int
    host: str
    port: int
    rack: str | None
    fenced: bool


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    type: str  # Classic | Consumer | Unknown


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    member_ids: list[str]
    assigned: list[TopicPartitionKey]  # partitions assigned to the members right now
    members: list[GroupMember] = field(default_factory=list)  # each, with its target (KIP-848)


@dataclass(frozen=True)
class AbortTarget:
    """The transaction an administrative abort ends on one partition (WriteTxnMarkers): the
    producer id and epoch the partition's leader holds it under, and the coordinator epoch the
    marker carries (the leader refuses one older than it has seen)."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
