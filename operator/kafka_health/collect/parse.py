"""Pure conversions of the clients' answers into the snapshot models (no I/O, unit-tested)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import kafka.errors as kafka_errors

from kafka_health.models.snapshot import (
    GROUP_KINDS,
    BrokerThrottle,
    EligibleLeaders,
    GroupKind,
    GroupMember,
    LogDir,
    Quorum,
    QuorumVoter,
    Reassignment,
    TopicConfig,
)

# Kafka reports "unknown" as -1 in many int fields.
_UNKNOWN = -1

# confluent_kafka.ConsumerGroupState names → Kafka's own group state names.
GROUP_STATES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
    # KIP-848 (consumer protocol) states, should the client report them.
    "ASSIGNING": "Assigning",
    "RECONCILING": "Reconciling",
}

TOPIC_CONFIG_KEYS = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "retention.ms",
    "retention.bytes",
    "cleanup.policy",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


def known(value: int | None) -> int | None:
    return None if value is None or value < 0 else int(value)


def group_state(name: str) -> str:
    return GROUP_STATES.get(name, name.title())


def group_kind(listed_type: str) -> GroupKind:
    """ListGroups' group type (confluent-kafka's ConsumerGroupType name, title-cased by the
    listing) as a `GroupKind`; anything else, or none (Kafka before 3.8), is unknown."""
    kind = listed_type.lower()
    return next((k for k in GROUP_KINDS if k == kind), "unknown")


def _partitions(assignment: Any) -> list[tuple[str, int]]:
    """A MemberAssignment's partitions as sorted (topic, partition) pairs (none: empty)."""
    if assignment is None:
        return []
    return sorted((tp.topic, tp.partition) for tp in assignment.topic_partitions)


def group_member(member: Any) -> GroupMember:
    """A confluent-kafka MemberDescription as a `GroupMember`. Its target assignment is set only
    for a consumer-protocol member (ConsumerGroupDescribe, KIP-848); a classic member's is None,
    and stays None here: a classic group has no target to compare with, not an empty one."""
    target = getattr(member, "target_assignment", None)
    return GroupMember(
        member_id=member.member_id,
        client_id=member.client_id or "",
        host=member.host or "",
        assignment=_partitions(member.assignment),
        target=_partitions(target) if target is not None else None,
    )


def topic_config(topic: str, values: Mapping[str, str | None]) -> TopicConfig:
    """The effective values (broker defaults already applied by DescribeConfigs)."""

    def as_int(key: str) -> int | None:
        raw = values.get(key)
        return int(raw) if raw not in (None, "") else None

    unclean = values.get("unclean.leader.election.enable")
    return TopicConfig(
        topic=topic,
        min_insync_replicas=as_int("min.insync.replicas"),
        unclean_leader_election_enable=None if unclean is None else unclean.lower() == "true",
        retention_ms=as_int("retention.ms"),
        retention_bytes=as_int("retention.bytes"),
        cleanup_policy=values.get("cleanup.policy"),
        leader_replication_throttled_replicas=values.get("leader.replication.throttled.replicas") or None,
        follower_replication_throttled_replicas=values.get("follower.replication.throttled.replicas") or None,
    )


THROTTLE_RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
UNTHROTTLED = 2**63 - 1  # Kafka's default rate (Long.MAX_VALUE): no throttle


def broker_throttle(broker: int, entries: Mapping[str, Any]) -> BrokerThrottle:
    """A broker's DescribeConfigs entries → its throttle rates; a rate not set (absent, empty,
    or Kafka's default Long.MAX_VALUE) is None."""

    def rate(key: str) -> int | None:
        entry = entries.get(key)
        value = getattr(entry, "value", entry)
        try:
            n = int(value) if value not in (None, "") else None
        except (TypeError, ValueError):
            return None
        return None if n is None or n >= UNTHROTTLED else n

    return BrokerThrottle(
        broker=broker, leader_rate=rate(THROTTLE_RATE_KEYS[0]), follower_rate=rate(THROTTLE_RATE_KEYS[1])
    )


def error_name(code: int) -> str | None:
    """None for NoError, else Kafka's error class name (e.g. KafkaStorageError)."""
    if code == 0:
        return None
    return str(kafka_errors.for_code(code).__name__)


def log_dirs(broker_id: int, results: Sequence[Mapping[str, Any]]) -> list[LogDir]:
    """kafka-python DescribeLogDirs results of one broker → one LogDir per directory.

    `used_bytes` sums the partition sizes in the directory (future replicas included: they
    occupy the disk too); total/usable come from KIP-827 and are None when not reported;
    `sizes` gives the current replicas' sizes (for the visibility check, `collect.visibility`,
    and the replicas' lag, `collect.replica_lag`).
    """
    dirs = []
    for result in results:
        error = error_name(int(result.get("error_code", 0)))
        used = None
        if error is None:
            used = sum(
                max(0, int(p.get("partition_size", 0)))
                for t in result.get("topics") or []
                for p in t.get("partitions") or []
            )
        dirs.append(
            LogDir(
                broker_id=broker_id,
                path=str(result.get("log_dir", "")),
                used_bytes=used,
                total_bytes=known(result.get("total_bytes")),
                usable_bytes=known(result.get("usable_bytes")),
                error=error,
                sizes=_current_sizes(result) if error is None else {},
            )
        )
    return dirs


def _current_sizes(result: Mapping[str, Any]) -> dict[str, dict[int, int]]:
    """Topic -> partition -> size of one log directory's current replicas. A replica Kafka marks
    `is_future_key` is the copy an intra-broker move (`-future` dir) is writing beside the
    current one, which is listed too: counting it would count a partition twice."""
    out: dict[str, dict[int, int]] = {}
    for t in result.get("topics") or []:
        sizes = {
            int(p["partition_index"]): max(0, int(p.get("partition_size", 0)))
            for p in t.get("partitions") or []
            if not p.get("is_future_key", False)
        }
        if sizes:
            out[str(t.get("name", ""))] = sizes
    return out


def quorum(response: Mapping[str, Any]) -> Quorum:
    """kafka-python DescribeQuorum (`__cluster_metadata`-0) → Quorum with per-voter lag.

    Lag is the leader's log end offset minus the voter's, as `kafka-metadata-quorum
    describe --replication` shows it.
    """
    partition = response["topics"][0]["partitions"][0]
    if partition.get("error"):
        raise ValueError(f"DescribeQuorum: {partition['error']}")
    leader_id = known(partition.get("leader_id"))

    def voter(raw: Mapping[str, Any]) -> QuorumVoter:
        return QuorumVoter(
            id=int(raw["replica_id"]),
            log_end_offset=known(raw.get("log_end_offset")),
            last_caught_up_ms=known(raw.get("last_caught_up_timestamp")),
        )

    voters = [voter(v) for v in partition.get("current_voters") or []]
    observers = [voter(v) for v in partition.get("observers") or []]
    leader_leo = next((v.log_end_offset for v in voters if v.id == leader_id), None)
    for v in (*voters, *observers):
        if leader_leo is not None and v.log_end_offset is not None:
            v.lag = max(0, leader_leo - v.log_end_offset)
    return Quorum(
        leader_id=leader_id,
        leader_epoch=known(partition.get("leader_epoch")),
        high_watermark=known(partition.get("high_watermark")),
        voters=voters,
        observers=observers,
    )


def eligible_leaders(
    topics: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, list[EligibleLeaders]], dict[str, str]]:
    """DescribeTopicPartitions' topics as kafka-python returns them → each topic's partitions'
    ELR and last-known ELR, and the topics answered with an error ("CODE: text" by Kafka's
    error name, e.g. TOPIC_AUTHORIZATION_FAILED)."""
    found: dict[str, list[EligibleLeaders]] = {}
    errors: dict[str, str] = {}
    for topic in topics:
        name = str(topic["name"])
        if topic["error_code"]:
            error = kafka_errors.for_code(int(topic["error_code"]))
            errors[name] = f"{error.message}: {error.description}"
            continue
        found.setdefault(name, []).extend(
            EligibleLeaders(
                topic=name,
                partition=int(p["partition_index"]),
                elr=sorted(p.get("eligible_leader_replicas") or []),
                last_known_elr=sorted(p.get("last_known_elr") or []),
            )
            for p in topic["partitions"]
        )
    return found, errors


def reassignments(raw: Mapping[Any, Mapping[str, Sequence[int]]]) -> list[Reassignment]:
    """kafka-python's ListPartitionReassignments answer ({TopicPartition: {replicas,
    adding_replicas, removing_replicas}}) → the reassignments in flight, by topic and partition."""
    return sorted(
        (
            Reassignment(
                topic=str(tp.topic),
                partition=int(tp.partition),
                replicas=[int(b) for b in r.get("replicas", [])],
                adding=sorted(int(b) for b in r.get("adding_replicas", [])),
                removing=sorted(int(b) for b in r.get("removing_replicas", [])),
            )
            for tp, r in raw.items()
        ),
        key=lambda r: (r.topic, r.partition),
    )
