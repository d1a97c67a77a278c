"""The admin calls of one cluster, each written and documented once, and how each is run.

Two classes serve them: `admin_calls.AdminCalls` runs them with the client libraries, inside
the client host process (`client_host`); `kafka_admin.KafkaAdmin`, what the rest of the operator
uses, forwards each one there. Both are an `AdminApi`: the public methods below normalise their
arguments (sorted, without duplicates; an empty request answered at once) and hand the call to
one of three hooks, by how a failure of the client process must end it (see `KafkaAdmin`):

- `_read_whole`: a read whose failure is one `AdminCallError`;
- `_read_each`: a read over many items that returns a `Partial` (per-item errors), so a failure
  of the whole call becomes an error on every item;
- `_write`: a call that changes the cluster, never retried once sent.

Calls return typed values; a call that fails as a whole raises `AdminCallError`; calls over many
items (topics, partitions, groups, brokers) return a `Partial` that keeps the per-item errors,
so callers can say exactly what is missing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, cast

from kafka_health.collect import security_errors
from kafka_health.collect.connection import ConnectionConfig, redact
from kafka_health.collect.results import (
    AbortTarget,
    BrokerRegistration,
    ClusterMetadata,
    GroupDescription,
    GroupListing,
    K,
    Partial,
    Timeouts,
    TopicPartitionKey,
)
from kafka_health.collect.share_groups import ShareGroups
from kafka_health.collect.streams_groups import StreamsGroupInfo
from kafka_health.models.snapshot import (
    BrokerThrottle,
    EligibleLeaders,
    GroupOffset,
    ListenerCertificate,
    LogDir,
    OpenTransaction,
    PartitionOffsets,
    Quorum,
    Reassignment,
)

__all__ = ["CALLS", "AdminApi", "call_name", "describe_error"]

# The name a whole-call `AdminCallError` carries, per method (as the client libraries name it).
_CALL_NAMES = {
    "list_groups": "list_consumer_groups",
    "describe_quorum": "describe_metadata_quorum",
    "elect_preferred": "elect_leaders",
    "alter_group_offsets": "alter_consumer_group_offsets",
    "reorder_replicas": "alter_partition_reassignments",
}


def call_name(method: str) -> str:
    """The call name an `AdminCallError` of `method` carries."""
    return _CALL_NAMES.get(method, method)


def describe_error(exc: object, secrets: Iterable[str]) -> str:
    """A short, secret-free description of a client error (exception or KafkaError), with
    librdkafka's setting names given as Kafka's. confluent-kafka's types are recognised by
    name: this module is imported where the client libraries must not be."""
    args: tuple[Any, ...] = getattr(exc, "args", ())
    err: Any = args[0] if type(exc).__name__ == "KafkaException" and args else exc
    if type(err).__name__ == "KafkaError":
        text = f"{err.name()}: {err.str()}"
    else:
        text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return redact(security_errors.kafka_key_names(text), secrets)


class AdminApi(ABC):
    """Admin access to one cluster. Thread-safe; create once per cluster and reuse; `close()` it."""

    OFFSETS_BATCH = 10_000
    CONFIGS_BATCH = 500
    GROUPS_BATCH = 100

    def __init__(
        self,
        connection: ConnectionConfig | Mapping[str, Any],
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.connection = (
            connection if isinstance(connection, ConnectionConfig) else ConnectionConfig.from_dict(connection)
        )
        self.timeouts = timeouts or Timeouts()
        self._secrets = self.connection.secrets

    def reason(self, exc: object) -> str:
        """A short, secret-free description of a client error (exception or KafkaError)."""
        return describe_error(exc, self._secrets)

    @abstractmethod
    def close(self) -> None: ...

    # ------------------------------------------------------------------ how a call is run
    @abstractmethod
    def _read_whole(self, method: str, *args: Any) -> Any:
        """Run the read `method`; a failure of the whole call raises `AdminCallError`."""

    @abstractmethod
    def _read_each(self, method: str, keys: list[K], *args: Any) -> Partial[K, Any]:
        """Run the read `method` over `keys`; a failure of the whole call is each key's error."""

    @abstractmethod
    def _write(self, method: str, *args: Any) -> Any:
        """Run the write `method`, never sent twice; a failure raises `AdminCallError`."""

    # ------------------------------------------------------------------ confluent-kafka
    def metadata(self) -> ClusterMetadata:
        """Brokers, topics and partitions (leader, replicas, ISR) in one Metadata request
        (a frozen broker's connection gets half the budget; a fresh client the other half)."""
        result: ClusterMetadata = self._read_whole("metadata")
        return result

    def topic_configs(self, topics: Iterable[str]) -> Partial[str, dict[str, str | None]]:
        """Effective values of `parse.TOPIC_CONFIG_KEYS` per topic (broker defaults included)."""
        return self._read_each("topic_configs", sorted(set(topics)))

    def broker_throttles(self, broker_ids: Iterable[int]) -> Partial[int, BrokerThrottle]:
        """Each broker's replication throttle rates (DescribeConfigs BROKER, answered by that
        broker; needs DESCRIBE_CONFIGS on CLUSTER)."""
        result: Partial[int, BrokerThrottle] = self._read_each("broker_throttles", sorted(set(broker_ids)))
        return result

    def describe_topics(self, topics: Iterable[str]) -> Partial[str, int]:
        """Named topics as Kafka describes them (DescribeTopics; a Metadata request for these names
        that never creates a topic): values the partition count, errors per topic ("CODE: text").
        Unlike the Metadata of all topics, which leaves out what the principal may not DESCRIBE,
        a named topic is answered: TOPIC_AUTHORIZATION_FAILED when not authorized,
        UNKNOWN_TOPIC_OR_PART when it does not exist."""
        names = sorted(set(topics))
        return self._read_each("describe_topics", names) if names else Partial()

    def list_offsets(
        self, partitions: Iterable[TopicPartitionKey]
    ) -> Partial[TopicPartitionKey, PartitionOffsets]:
        """Earliest (log start) and latest (log end) offsets, in batches sent together.

        Partitions whose answer was a retriable error (NOT_LEADER_OR_FOLLOWER,
        UNKNOWN_LEADER_EPOCH: their leader moved while the request was on its way, as it does on
        every broker a roll restarts) are asked once more, so a leader change is not reported as
        an unreadable part; a second failure is."""
        return self._read_each("list_offsets", sorted(set(partitions)))

    def list_groups(self) -> tuple[list[GroupListing], list[str]]:
        """Every consumer group, and the errors of coordinators that did not answer (their
        groups are then absent from the list: callers must report it)."""
        result: tuple[list[GroupListing], list[str]] = self._read_whole("list_groups")
        return result

    def describe_groups(self, group_ids: Iterable[str]) -> Partial[str, GroupDescription]:
        """Each group's state, members and the partitions assigned to them right now."""
        return self._read_each("describe_groups", sorted(set(group_ids)))

    def group_offsets(self, group_ids: Iterable[str]) -> Partial[str, list[GroupOffset]]:
        """Committed offsets per group (librdkafka takes one group per request; all sent together)."""
        return self._read_each("group_offsets", sorted(set(group_ids)))

    # ------------------------------------------------------------------ remediation
    def elect_preferred(
        self, partitions: Iterable[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, tuple[str, str | None]]:
        """Preferred leader election (ElectLeaders, PREFERRED) for these partitions, in one request.

        Per partition: ("elected", None), ("not_needed", reason) (ELECTION_NOT_NEEDED, 84: the
        preferred replica already leads), ("preferred_not_available", reason)
        (PREFERRED_LEADER_NOT_AVAILABLE, 80: not alive or not in the ISR) or ("failed", reason).
        The whole request failing or timing out raises `AdminCallError` (it may still have
        been applied: re-read the leaders); so does the client process dying during it.
        confluent-kafka 2.16.1 raises SystemError when `request_timeout`/`operation_timeout`
        are passed, so only the future is bounded.
        """
        keys = sorted(set(partitions))
        if not keys:
            return {}
        result: dict[TopicPartitionKey, tuple[str, str | None]] = self._write("elect_preferred", keys)
        return result

    def alter_group_offsets(
        self, group: str, offsets: Mapping[TopicPartitionKey, int]
    ) -> Partial[TopicPartitionKey, int]:
        """Commit `offsets` for `group` (AlterConsumerGroupOffsets). Values: the offsets the
        broker accepted; errors: per partition (a group with members answers UNKNOWN_MEMBER_ID
        (25): "UNKNOWN_MEMBER_ID ..." means the group is not Empty). A failure of the whole
        request raises `AdminCallError` (its reason starts with UNKNOWN_MEMBER_ID likewise), and
        so does the client process dying during it (the outcome is then unknown: re-read)."""
        if not offsets:
            return Partial()
        result: Partial[TopicPartitionKey, int] = self._write(
            "alter_group_offsets", group, {k: int(v) for k, v in offsets.items()}
        )
        return result

    def offsets_for_times(
        self, partitions: Iterable[TopicPartitionKey], timestamp_ms: int
    ) -> Partial[TopicPartitionKey, int | None]:
        """ListOffsets by time: per partition the first offset whose timestamp is at or after
        `timestamp_ms` (epoch milliseconds), None when no message is (the caller uses log end)."""
        return self._read_each("offsets_for_times", sorted(set(partitions)), timestamp_ms)

    def record_timestamps(self, wanted: Iterable[tuple[str, int, int]]) -> Partial[tuple[str, int, int], int]:
        """Epoch milliseconds of the record at each (topic, partition, offset), fetched
        (`collect.record_times`: READ on the topic; at most `record_times.MAX_PARTITIONS`, in
        the order given: the most lagging first); per partition why not."""
        chosen = list(dict.fromkeys(wanted))
        if not chosen:
            return Partial()
        result: Partial[tuple[str, int, int], int] = self._read_whole("record_timestamps", chosen)
        return result

    # ------------------------------------------------------------------ kafka-python
    def describe_cluster(self) -> list[BrokerRegistration]:
        """Every registered broker, fenced ones included (confluent-kafka lists only unfenced)."""
        result: list[BrokerRegistration] = self._read_whole("describe_cluster")
        return result

    def describe_quorum(self) -> Quorum:
        """The KRaft metadata quorum: leader (the active controller), epoch, HW, voters' lag.
        A cluster whose brokers do not serve the quorum API raises `AdminCallError` with the
        reason `results.ZOOKEEPER_MODE`."""
        result: Quorum = self._read_whole("describe_quorum")
        return result

    def eligible_leaders(self, topics: Iterable[str]) -> Partial[str, list[EligibleLeaders]]:
        """Each partition's eligible leader replicas and last-known ELR (KIP-966), per topic
        (DescribeTopicPartitions, paged). A topic Kafka answers with an error is that topic's
        error ("CODE: text"); a cluster without ELR answers empty lists."""
        names = sorted(set(topics))
        return self._read_each("eligible_leaders", names) if names else Partial()

    def share_groups(self) -> ShareGroups:
        """Every share group (KIP-932) the principal may DESCRIBE, with its members and start
        offsets (`collect.share_groups`); per group why it could not be described; none on a
        cluster without share groups (before Kafka 4.0)."""
        result: ShareGroups = self._read_whole("share_groups")
        return result

    def alter_share_group_offsets(
        self, group: str, offsets: Mapping[TopicPartitionKey, int]
    ) -> Partial[TopicPartitionKey, int]:
        """Set share group `group`'s start offsets (AlterShareGroupOffsets, API 91, to its
        coordinator; `collect.share_groups`). Values: the offsets the broker accepted; errors:
        per partition, "[Error N] Name: message" (a group with members answers NON_EMPTY_GROUP,
        68, on every partition). Needs READ on the GROUP and on each TOPIC. Sent once: a failure
        of the whole request raises `AdminCallError` (the outcome is then unknown: re-read)."""
        if not offsets:
            return Partial()
        result: Partial[TopicPartitionKey, int] = self._write(
            "alter_share_group_offsets", group, {k: int(v) for k, v in sorted(offsets.items())}
        )
        return result

    def streams_groups(self) -> list[StreamsGroupInfo]:
        """Every streams group (KIP-1071) the principal may DESCRIBE, as its coordinator
        describes it (`collect.streams_groups`; a group that could not be has its `error`);
        none on a cluster without streams groups (before Kafka 4.1)."""
        result: list[StreamsGroupInfo] = self._read_whole("streams_groups")
        return result

    def reassignments(self) -> list[Reassignment]:
        """The partition reassignments in flight (ListPartitionReassignments, answered by the
        active controller): replicas, adding and removing brokers of each."""
        result: list[Reassignment] = self._read_whole("reassignments")
        return result

    def reorder_replicas(
        self, orders: Mapping[TopicPartitionKey, Iterable[int]]
    ) -> Partial[TopicPartitionKey, bool]:
        """Give partitions a new replica order (AlterPartitionReassignments, answered by the active
        controller). Each order must be the partition's own replica set: then no data moves and
        Kafka applies it at once (the leadership drain of a roll, `plan.leadership_drain`). Needs
        ALTER on CLUSTER. Values: True per partition accepted; errors: per partition ("CODE: text").
        Sent once: a failure of the whole request raises `AdminCallError` (outcome unknown: re-read)."""
        wanted = {key: [int(b) for b in order] for key, order in sorted(orders.items())}
        if not wanted:
            return Partial()
        result: Partial[TopicPartitionKey, bool] = self._write("reorder_replicas", wanted)
        return result

    def open_transactions(
        self, leaders: Iterable[tuple[str, int, int]], older_than: timedelta
    ) -> Partial[str, list[OpenTransaction]]:
        """Per topic, the transactions its partitions' leaders (`leaders`: topic, partition,
        leader id) hold open for longer than `older_than`, with what their coordinators say of
        them (`collect.transactions`); a topic whose producers could not be read is that topic's
        error (READ on the topic is needed)."""
        wanted = sorted(set(leaders))
        if not wanted:
            return Partial()
        result: Partial[str, list[OpenTransaction]] = self._read_whole(
            "open_transactions", wanted, older_than
        )
        return result

    def abort_transaction(self, target: AbortTarget) -> None:
        """Write an abort marker for `target`'s open transaction on its partition (WriteTxnMarkers
        to the partition's leader, as `kafka-transactions abort` does; needs ALTER on CLUSTER).
        Sent once: a failure raises `AdminCallError` and the outcome is then unknown."""
        self._write("abort_transaction", target)

    def listener_certificates(
        self, brokers: Iterable[tuple[int, str, int]]
    ) -> Partial[int, ListenerCertificate]:
        """Per broker id, the certificate chain it serves at (host, port) of `brokers` (id, host,
        port), read by a TLS handshake of our own with the client's CA and certificate
        (`tls_probe.served_certificates`)."""
        wanted = sorted(set(brokers))
        if not wanted:
            return Partial()
        # Sent as (id, host, port); answered per id (the address is not the key a caller knows).
        result: Any = self._read_each("listener_certificates", wanted)
        return cast(Partial[int, ListenerCertificate], result)

    def describe_log_dirs(self, broker_ids: Iterable[int]) -> Partial[int, list[LogDir]]:
        """Log directories per broker, one request per broker sent in parallel."""
        ids = sorted(set(broker_ids))
        return self._read_each("describe_log_dirs", ids) if ids else Partial()


CALLS = frozenset(
    name
    for name, member in vars(AdminApi).items()
    if callable(member) and not name.startswith("_") and name not in {"close", "reason"}
)
"""The admin calls by name: what the client host runs (anything else is refused)."""
