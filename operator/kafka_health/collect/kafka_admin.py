"""The one place each Kafka admin call is made; every call is bounded by a timeout.

`KafkaAdmin` is what the rest of the operator uses. The calls themselves (confluent-kafka for
almost everything, kafka-python for log dirs, the metadata quorum and broker registrations)
are in `admin_calls.AdminCalls`, and they run in the client host, a supervised child process
(`client_host`): no librdkafka or kafka-python code runs in the operator's process, so a native
crash in a client library (librdkafka #5040: SIGSEGV on NOT_COORDINATOR for an OffsetFetch
while the group's coordinator restarts; PR #5397: an abort in any coordinator-routed admin call
whose connection drops) never takes the operator down. Calls return typed values; a call that
fails as a whole raises `AdminCallError`; calls over many items (topics, partitions, groups,
brokers) return a `Partial` that keeps the per-item errors, so callers can say exactly what is
missing.

When the client process dies during a call it is restarted once, however many calls saw it die,
with a WARNING log ("Kafka client process died with SIGSEGV during group_offsets; restarted")
and `kafka_health_client_process_restarts_total{reason}`; then:
- a read is retried once on the fresh process; if that dies too, the call fails like any other
  failed read: `AdminCallError` for a whole call, or every item in the `Partial`'s errors (so a
  snapshot reports e.g. `group:<id>` missing: a partial read, never a crash);
- a write (`elect_preferred`, `alter_group_offsets`) is never retried once sent: it raises
  `AdminCallError` saying the outcome is unknown (callers re-read, as for a timed-out write).
A retried read may take up to twice its timeout plus the process start (about a second). A
process that stops answering is killed by the supervisor's watchdog once a call has waited
`2 * (metadata + request) + HANG_MARGIN` seconds, and counts as a death (`hung`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, TypeVar

from kafka_health.collect import client_host, logs
from kafka_health.collect.client_host import SUPERVISOR, TRANSPORT_ERRORS, HostError
from kafka_health.collect.connection import ConnectionConfig, redact
from kafka_health.collect.results import (
    AdminCallError,
    BrokerRegistration,
    ClusterMetadata,
    GroupDescription,
    GroupListing,
    K,
    Partial,
    Timeouts,
    TopicPartitionKey,
)
from kafka_health.models.snapshot import GroupOffset, LogDir, PartitionOffsets, Quorum

__all__ = [
    "AdminCallError",
    "BrokerRegistration",
    "ClusterMetadata",
    "GroupDescription",
    "GroupListing",
    "KafkaAdmin",
    "Partial",
    "Timeouts",
    "TopicPartitionKey",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

# The name a whole-call `AdminCallError` carries, per method (as the client code names it).
_CALL_NAMES = {
    "list_groups": "list_consumer_groups",
    "describe_quorum": "describe_metadata_quorum",
    "elect_preferred": "elect_leaders",
    "alter_group_offsets": "alter_consumer_group_offsets",
}


class _Crashed(Exception):
    """A read's process died on the first attempt and on its retry."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class KafkaAdmin:
    """Admin access to one cluster. Thread-safe; create once per cluster and reuse; `close()` it."""

    OFFSETS_BATCH = 10_000
    CONFIGS_BATCH = 500
    GROUPS_BATCH = 100
    HANG_MARGIN = 30.0  # seconds beyond a call's own bounds before its client process is killed as hung

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
        logs.install()  # the child's records are handed to this process's loggers: scrub here too
        logs.SECRETS.add(self._secrets)
        self._lock = threading.Lock()
        self._remote: Any = None  # the `AdminCalls` in the client host, created on first call
        self._generation = -1  # the host generation `_remote` lives in
        self._seen_deaths: set[int] = set()
        self._closed = False
        self._local: Any = None
        self.restarts = 0  # client process deaths this admin recovered from (its calls or its remote object)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            remote, generation, self._remote = self._remote, self._generation, None
            self._local = None
        host = SUPERVISOR.host()
        if remote is not None and host is not None and generation == SUPERVISOR.generation:
            token = SUPERVISOR.watch(generation, "close", self._budget())
            try:
                client_host.check_result(remote._callmethod("run", ("close", (), self._levels())), host)
            except Exception as exc:  # the process died: nothing of this client is left to close
                log.debug("closing the Kafka client failed: %s", redact(str(exc), self._secrets))
            finally:
                SUPERVISOR.unwatch(token)
        logs.SECRETS.remove(self._secrets)

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ helpers
    @property
    def client(self) -> Any:
        """An in-process confluent-kafka `AdminClient` on this cluster, for tests and tools that
        need a call `KafkaAdmin` does not offer. It is NOT isolated (a librdkafka crash in it
        takes this process down); the operator never uses it."""
        with self._lock:
            if self._closed:
                raise AdminCallError("admin", "client is closed")
            if self._local is None:
                from confluent_kafka.admin import AdminClient

                conf: dict[str, Any] = {**self.connection.confluent(), "logger": logs.install()}
                self._local = AdminClient(conf)
            return self._local

    def reason(self, exc: object) -> str:
        """A short, secret-free description of a client error (exception or KafkaError)."""
        # confluent_kafka is never imported here: its types are recognised by name.
        args: tuple[Any, ...] = getattr(exc, "args", ())
        err: Any = args[0] if type(exc).__name__ == "KafkaException" and args else exc
        if type(err).__name__ == "KafkaError":
            text = f"{err.name()}: {err.str()}"
        else:
            text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        return redact(text, self._secrets)

    def _budget(self) -> float:
        """How long a call may go unanswered before the client process is deemed hung: every
        call is bounded inside it by `timeouts` (the longest by metadata + request), so twice
        that plus a margin only runs out when the process itself is stuck."""
        return 2 * (self.timeouts.metadata + self.timeouts.request) + self.HANG_MARGIN

    @staticmethod
    def _levels() -> dict[str, int]:
        return {name: logging.getLogger(name).getEffectiveLevel() for name in client_host.FORWARDED_LOGGERS}

    def _attach(self, host: client_host.ClientHost, generation: int) -> Any:
        """This admin's remote object on `generation`'s host (created there when needed)."""
        with self._lock:
            if self._closed:
                raise AdminCallError("admin", "client is closed")
            if self._remote is None or self._generation != generation:
                if self._remote is not None:  # its host died (seen by another call or admin)
                    self._count_death(self._generation)
                self._remote = None
                self._remote = host.create(self.connection, self.timeouts)
                self._generation = generation
            return self._remote

    def _count_death(self, generation: int) -> None:
        """Under the lock: count `generation`'s host death once for this admin."""
        if generation not in self._seen_deaths:
            self._seen_deaths.add(generation)
            self.restarts += 1

    def _died(self, generation: int, method: str) -> str:
        how = SUPERVISOR.died(generation, method)
        with self._lock:
            self._count_death(generation)
        return how

    def _call(self, method: str, *args: Any, write: bool = False) -> Any:
        """Run `method` in the client host. A read whose process dies is retried once on a fresh
        one (`_Crashed` if that dies too); a write raises `AdminCallError` (outcome unknown)."""
        call = _CALL_NAMES.get(method, method)
        how = ""
        for _attempt in (1, 2):
            if self._closed:
                raise AdminCallError("admin", "client is closed")
            try:
                host, generation = SUPERVISOR.current(method)
            except HostError as exc:
                raise AdminCallError(call, str(exc)) from None
            # Watched from here: a hung process is killed (creating the remote object included).
            token = SUPERVISOR.watch(generation, method, self._budget())
            try:
                try:
                    remote = self._attach(host, generation)
                except TRANSPORT_ERRORS:  # nothing was sent yet: safe to try again, even a write
                    how = self._died(generation, method)
                    continue
                try:
                    answer = remote._callmethod("run", (method, args, self._levels()))
                except TRANSPORT_ERRORS:
                    how = self._died(generation, method)
                    if write:
                        raise AdminCallError(
                            call,
                            f"the Kafka client process crashed ({how}) during the call: the outcome is "
                            "unknown (it may have been applied; re-read before retrying)",
                        ) from None
                    continue
            finally:
                SUPERVISOR.unwatch(token)
            return client_host.check_result(answer, host)
        if write:
            raise AdminCallError(
                call, f"the Kafka client process crashed ({how}) twice before the request was sent"
            )
        raise _Crashed(how)

    def _whole(self, method: str, exc: _Crashed) -> NoReturn:
        raise AdminCallError(
            _CALL_NAMES.get(method, method),
            f"the Kafka client process crashed ({exc.how}) twice; the call was retried once on a fresh process",
        ) from None

    @staticmethod
    def _each(keys: Iterable[K], exc: _Crashed) -> Partial[K, Any]:
        reason = f"the Kafka client process crashed ({exc.how}) twice; the call was retried once"
        return Partial(errors=dict.fromkeys(keys, reason))

    # ------------------------------------------------------------------ confluent-kafka
    def metadata(self) -> ClusterMetadata:
        """Brokers, topics and partitions (leader, replicas, ISR) in one Metadata request
        (a frozen broker's connection gets half the budget; a fresh client the other half)."""
        try:
            result: ClusterMetadata = self._call("metadata")
        except _Crashed as exc:
            self._whole("metadata", exc)
        return result

    def topic_configs(self, topics: Iterable[str]) -> Partial[str, dict[str, str | None]]:
        """Effective values of `parse.TOPIC_CONFIG_KEYS` per topic (broker defaults included)."""
        keys = sorted(set(topics))
        try:
            result: Partial[str, dict[str, str | None]] = self._call("topic_configs", keys)
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

    def describe_topics(self, topics: Iterable[str]) -> Partial[str, int]:
        """Named topics: partition count, or per topic the error ("TOPIC_AUTHORIZATION_FAILED: …"
        when the principal may not DESCRIBE it, "UNKNOWN_TOPIC_OR_PART: …" when it does not exist)."""
        keys = sorted(set(topics))
        try:
            result: Partial[str, int] = self._call("describe_topics", keys)
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

    def list_offsets(
        self, partitions: Iterable[TopicPartitionKey]
    ) -> Partial[TopicPartitionKey, PartitionOffsets]:
        """Earliest (log start) and latest (log end) offsets, in batches sent together."""
        keys = sorted(set(partitions))
        try:
            result: Partial[TopicPartitionKey, PartitionOffsets] = self._call("list_offsets", keys)
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

    def list_groups(self) -> tuple[list[GroupListing], list[str]]:
        """Every consumer group, and the errors of coordinators that did not answer (their
        groups are then absent from the list: callers must report it)."""
        try:
            result: tuple[list[GroupListing], list[str]] = self._call("list_groups")
        except _Crashed as exc:
            self._whole("list_groups", exc)
        return result

    def describe_groups(self, group_ids: Iterable[str]) -> Partial[str, GroupDescription]:
        keys = sorted(set(group_ids))
        try:
            result: Partial[str, GroupDescription] = self._call("describe_groups", keys)
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

    def group_offsets(self, group_ids: Iterable[str]) -> Partial[str, list[GroupOffset]]:
        """Committed offsets per group (librdkafka takes one group per request; all sent together)."""
        keys = sorted(set(group_ids))
        try:
            result: Partial[str, list[GroupOffset]] = self._call("group_offsets", keys)
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

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
        """
        keys = sorted(set(partitions))
        if not keys:
            return {}
        result: dict[TopicPartitionKey, tuple[str, str | None]] = self._call(
            "elect_preferred", keys, write=True
        )
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
        result: Partial[TopicPartitionKey, int] = self._call(
            "alter_group_offsets", group, {k: int(v) for k, v in offsets.items()}, write=True
        )
        return result

    def offsets_for_times(
        self, partitions: Iterable[TopicPartitionKey], timestamp_ms: int
    ) -> Partial[TopicPartitionKey, int | None]:
        """ListOffsets by time: per partition the first offset whose timestamp is at or after
        `timestamp_ms` (epoch milliseconds), None when no message is (the caller uses log end)."""
        keys = sorted(set(partitions))
        try:
            result: Partial[TopicPartitionKey, int | None] = self._call(
                "offsets_for_times", keys, timestamp_ms
            )
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

    # ------------------------------------------------------------------ kafka-python
    def describe_cluster(self) -> list[BrokerRegistration]:
        """Every registered broker, fenced ones included (confluent-kafka lists only unfenced)."""
        try:
            result: list[BrokerRegistration] = self._call("describe_cluster")
        except _Crashed as exc:
            self._whole("describe_cluster", exc)
        return result

    def describe_quorum(self) -> Quorum:
        """The KRaft metadata quorum: leader (the active controller), epoch, HW, voters' lag."""
        try:
            result: Quorum = self._call("describe_quorum")
        except _Crashed as exc:
            self._whole("describe_quorum", exc)
        return result

    def describe_log_dirs(self, broker_ids: Iterable[int]) -> Partial[int, list[LogDir]]:
        """Log directories per broker, one request per broker sent in parallel."""
        ids = sorted(set(broker_ids))
        if not ids:
            return Partial()
        try:
            result: Partial[int, list[LogDir]] = self._call("describe_log_dirs", ids)
        except _Crashed as exc:
            return self._each(ids, exc)
        return result
