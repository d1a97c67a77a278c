"""The Kafka admin calls themselves (`admin_api.AdminApi`), run inside the client host process.

This is the code that links librdkafka (confluent-kafka) and kafka-python. The operator never
runs it in its own process: `kafka_admin.KafkaAdmin` forwards each call to an `AdminCalls`
object living in the supervised child process (`client_host`), so a native crash in a client
library costs one retried call instead of the operator (see docs/kafka-client.md). What each
call returns is documented once, in `admin_api`; here is how it is made (`_do_<call>`).

confluent-kafka (librdkafka) does almost everything; kafka-python is used only for what
confluent-kafka lacks in Python: log-dir sizes (here), and the calls of `kafka_python_calls`
(broker registrations including fenced brokers, the KRaft metadata quorum, eligible leader
replicas, partition reassignments).

Timeouts: librdkafka gets `request_timeout` *and* every future is bounded with `wait()` (in
confluent-kafka 2.16.1 `elect_leaders` rejects `request_timeout`/`operation_timeout`, so
calls like it must rely on the bounded future alone). kafka-python's blocking calls run in a
small thread pool and are bounded the same way (`kafka_python.KafkaPython`). Remediation adds
its calls here too (`elect_leaders`, `alter_consumer_group_offsets`), using `_gather` /
`_bounded`, so there stays one place per Kafka call.

A frozen broker (GC pause, SIGSTOP) that still holds an open connection can make librdkafka
wait on it for one cycle: the affected parts time out and are reported, and the connection
is dropped after `request` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, wait
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    ElectionType,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from kafka_health.collect import logs, parse, record_times, security_errors
from kafka_health.collect.admin_api import AdminApi
from kafka_health.collect.connection import ConnectionConfig, redact
from kafka_health.collect.futures import request_timed_out, retriable
from kafka_health.collect.kafka_python import KafkaPython, log_dirs
from kafka_health.collect.kafka_python_calls import KafkaPythonCalls
from kafka_health.collect.results import (
    AdminCallError,
    ClusterMetadata,
    GroupDescription,
    GroupListing,
    K,
    Partial,
    Timeouts,
    TopicPartitionKey,
)
from kafka_health.collect.tls_probe import checker, served_certificates
from kafka_health.models.snapshot import (
    Broker,
    BrokerThrottle,
    GroupOffset,
    ListenerCertificate,
    LogDir,
    Partition,
    PartitionOffsets,
)

__all__ = ["AdminCalls"]

T = TypeVar("T")
log = logging.getLogger(__name__)


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class AdminCalls(KafkaPythonCalls, AdminApi):
    """Admin access to one cluster, in the process that runs the client libraries. Thread-safe;
    `KafkaAdmin` (in the operator's process) is its only user."""

    def __init__(
        self,
        connection: ConnectionConfig | Mapping[str, Any],
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        super().__init__(connection, timeouts=timeouts)
        logs.SECRETS.add(self._secrets)
        # Connection errors from librdkafka's error callback (served by poll): (when, code, text),
        # read when a metadata call fails to say why (authentication, TLS, protocol).
        self._conn_errors: deque[tuple[float, str, str]] = deque(maxlen=64)
        self._conf: dict[str, Any] = {
            **self.connection.confluent(),
            "logger": logs.install(),
            "error_cb": self._on_error,
            "socket.timeout.ms": int(self.timeouts.request * 1000),
            "reconnect.backoff.max.ms": 2000,
            "log.connection.close": False,
        }
        self._admin: AdminClient | None = AdminClient(self._conf)
        self._kp = KafkaPython(self.connection.kafka_python(), self.timeouts, self.reason)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._admin is None:
            return
        self._kp.close()
        self._drain_logs()
        self._admin = None
        logs.SECRETS.remove(self._secrets)

    # ------------------------------------------------------------------ helpers
    @property
    def client(self) -> AdminClient:
        if self._admin is None:
            raise AdminCallError("admin", "client is closed")
        return self._admin

    def _retire(self, client: object) -> None:
        """Let go of a replaced client later: destroying it waits for its in-flight requests,
        and futures other threads still wait on must be able to resolve."""
        keeper = threading.Timer(2 * self.timeouts.request, lambda c: None, args=(client,))
        keeper.daemon = True
        keeper.start()

    def _on_error(self, err: KafkaError) -> None:
        self._conn_errors.append((time.monotonic(), err.name(), redact(err.str(), self._secrets)))

    def _why(self, since: float, fallback: str) -> str:
        """The security failure behind a failed metadata call, if the error callback saw one."""
        found = security_errors.classify_connection_errors(
            ((code, text) for at, code, text in list(self._conn_errors) if at >= since),
            checker(self.connection, self.timeouts.request),  # tells the TLS causes apart
        )
        return redact(found.message, self._secrets) if found is not None else fallback

    def _drain_logs(self) -> None:
        """librdkafka hands log lines to the Python logger only when the client is polled."""
        if self._admin is not None:
            self._admin.poll(0)

    def _gather(
        self, futures: Mapping[K, Future[Any]], timeout: float, *, librdkafka: bool = True
    ) -> Partial[K, Any]:
        """Wait for all futures together, at most `timeout` seconds; sort results from errors.
        When a librdkafka request timed out, the next call starts on a fresh client (`_renew`)."""
        done, _ = wait(set(futures.values()), timeout=timeout)
        out: Partial[K, Any] = Partial()
        timed_out = False
        for key, fut in futures.items():
            if fut not in done:  # not cancelled: librdkafka still completes it later
                out.errors[key], timed_out = f"timed out after {timeout:.1f}s", True
            elif (exc := fut.exception()) is not None and request_timed_out(exc):  # librdkafka's
                out.errors[key], timed_out = f"timed out after {timeout:.1f}s ({self.reason(exc)})", True
            elif exc is not None:
                out.errors[key] = self.reason(exc)
            else:
                out.values[key] = fut.result()
        self._drain_logs()
        if librdkafka and timed_out:
            self._renew()
        return out

    def _renew(self, fresh: AdminClient | None = None) -> None:
        """Replace the client after one of its requests timed out. A librdkafka client can stay
        stuck on a connection or a coordinator it chose before a broker bounced (seen in CI: a
        client kept from before a bounce timed out reading a group's offsets for over a minute
        after the coordinator moved back, while the operator's client reset those offsets); a
        fresh client bootstraps, finds the coordinator anew and costs one connection per broker."""
        if self._admin is None:
            return
        log.debug("a Kafka request timed out: the next call uses a fresh client")
        old, self._admin = self._admin, fresh or AdminClient(self._conf)
        self._retire(old)

    def _bounded(self, call: str, fut: Future[T], timeout: float) -> T:
        result = self._gather({call: fut}, timeout)
        if call in result.errors:
            raise AdminCallError(call, result.errors[call])
        value: T = result.values[call]
        return value

    # ------------------------------------------------------------------ how a call is run
    def _read_whole(self, method: str, *args: Any) -> Any:
        return self._run(method, *args)

    def _read_each(self, method: str, keys: list[K], *args: Any) -> Partial[K, Any]:
        result: Partial[K, Any] = self._run(method, keys, *args)
        return result

    def _write(self, method: str, *args: Any) -> Any:
        return self._run(method, *args)

    def _run(self, method: str, *args: Any) -> Any:
        """In this process every call is made at once, by its `_do_<call>` method."""
        return getattr(self, f"_do_{method}")(*args)

    # ------------------------------------------------------------------ confluent-kafka
    def _do_metadata(self) -> ClusterMetadata:
        """librdkafka keeps sending to a broker whose connection is up, even when its process is
        frozen (GC pause, SIGSTOP); a new client only uses brokers that complete the handshake.
        So the second half of the budget goes to a fresh client, which then replaces this one.
        """
        half = self.timeouts.metadata / 2
        started = time.monotonic()
        try:
            md = self.client.list_topics(timeout=half)
        except Exception:
            fresh = AdminClient(self._conf)
            try:
                md = fresh.list_topics(timeout=half)
            except Exception as exc:
                fresh.poll(0)  # serves the error callback
                self.client.poll(0)
                raise AdminCallError("metadata", self._why(started, self.reason(exc))) from None
            finally:
                fresh.poll(0)
            self._renew(fresh)
        finally:
            self._drain_logs()
        brokers = [Broker(id=b.id, host=b.host, port=b.port, alive=True) for b in md.brokers.values()]
        partitions: list[Partition] = []
        topic_errors: dict[str, str] = {}
        for name, topic in md.topics.items():
            if topic.error is not None and not topic.partitions:
                topic_errors[name] = f"{topic.error.name()}: {topic.error.str()}"
                continue
            for p in topic.partitions.values():
                partitions.append(
                    Partition(
                        topic=name,
                        partition=p.id,
                        leader=p.leader if p.leader >= 0 else None,
                        replicas=list(p.replicas),
                        isr=list(p.isrs),
                    )
                )
        partitions.sort(key=lambda p: (p.topic, p.partition))
        controller = md.controller_id if md.controller_id >= 0 else None
        return ClusterMetadata(
            md.cluster_id, controller, sorted(brokers, key=lambda b: b.id), partitions, topic_errors
        )

    def _do_topic_configs(self, topics: list[str]) -> Partial[str, dict[str, str | None]]:
        futures: dict[str, Future[Any]] = {}
        for chunk in _chunks(topics, self.CONFIGS_BATCH):
            resources = [ConfigResource(ResourceType.TOPIC, t) for t in chunk]
            for res, fut in self.client.describe_configs(
                resources, request_timeout=self.timeouts.request
            ).items():
                futures[res.name] = fut
        raw = self._gather(futures, self.timeouts.request)
        out: Partial[str, dict[str, str | None]] = Partial(errors=raw.errors)
        for topic, entries in raw.values.items():
            out.values[topic] = {
                k: entries[k].value if k in entries else None for k in parse.TOPIC_CONFIG_KEYS
            }
        return out

    def _do_broker_throttles(self, brokers: list[int]) -> Partial[int, BrokerThrottle]:
        # librdkafka takes one BROKER resource per call (each answered by its broker): one call
        # per broker, all in flight together.
        futures: dict[int, Future[Any]] = {}
        for b in brokers:
            resource = ConfigResource(ResourceType.BROKER, str(b))
            (fut,) = self.client.describe_configs([resource], request_timeout=self.timeouts.request).values()
            futures[b] = fut
        raw = self._gather(futures, self.timeouts.request)
        return Partial(
            values={b: parse.broker_throttle(b, entries) for b, entries in raw.values.items()},
            errors=raw.errors,
        )

    def _do_describe_topics(self, names: list[str]) -> Partial[str, int]:
        futures = self.client.describe_topics(TopicCollection(names), request_timeout=self.timeouts.request)
        raw = self._gather(futures, self.timeouts.request)
        return Partial(values={t: len(d.partitions) for t, d in raw.values.items()}, errors=raw.errors)

    def _do_list_offsets(self, keys: list[TopicPartitionKey]) -> Partial[TopicPartitionKey, PartitionOffsets]:
        both = self._offset_futures(keys)
        raw = self._gather(both, self.timeouts.request)
        again = sorted({k for k, fut in both.items() if k in raw.errors and retriable(fut)})
        if again:
            retried = self._gather(self._offset_futures(sorted({k for _, k in again})), self.timeouts.request)
            for ask in again:
                if ask in retried.values:
                    raw.values[ask] = retried.values[ask]
                    del raw.errors[ask]
        out: Partial[TopicPartitionKey, PartitionOffsets] = Partial()
        for (which, key), err in sorted(raw.errors.items()):
            out.errors[key] = f"{out.errors[key]}; " if key in out.errors else ""
            out.errors[key] += f"{which} offset: {err}"
        for key in keys:
            start, end = raw.values.get(("earliest", key)), raw.values.get(("latest", key))
            stable = raw.values.get(("stable", key))
            if start is None and end is None:
                continue
            out.values[key] = PartitionOffsets(
                topic=key[0],
                partition=key[1],
                log_start_offset=parse.known(start.offset) if start is not None else None,
                log_end_offset=parse.known(end.offset) if end is not None else None,
                last_stable_offset=parse.known(stable.offset) if stable is not None else None,
            )
        return out

    def _offset_futures(
        self, keys: Sequence[TopicPartitionKey]
    ) -> dict[tuple[str, TopicPartitionKey], Future[Any]]:
        """ListOffsets for the log start, the end (high watermark) and the last stable offset of
        `keys`, keyed ("earliest"|"latest"|"stable", key). The last stable offset is the end a
        read_committed consumer sees: an open transaction holds it at its first offset."""
        out: dict[tuple[str, TopicPartitionKey], Future[Any]] = {}
        asks = (
            ("earliest", OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED),
            ("latest", OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
            ("stable", OffsetSpec.latest(), IsolationLevel.READ_COMMITTED),
        )
        for chunk in _chunks(keys, self.OFFSETS_BATCH):
            for which, spec, isolation in asks:
                request = {TopicPartition(t, p): spec for t, p in chunk}
                for tp, fut in self.client.list_offsets(
                    request, isolation_level=isolation, request_timeout=self.timeouts.request
                ).items():
                    out[(which, (tp.topic, tp.partition))] = fut
        return out

    def _do_list_groups(self) -> tuple[list[GroupListing], list[str]]:
        fut = self.client.list_consumer_groups(request_timeout=self.timeouts.request)
        result = self._bounded("list_consumer_groups", fut, self.timeouts.request)
        listings = sorted(
            (
                GroupListing(
                    group_id=g.group_id,
                    state=parse.group_state(g.state.name) if g.state is not None else "Unknown",
                    type=g.type.name.title() if getattr(g, "type", None) is not None else "Unknown",
                )
                for g in result.valid or []
            ),
            key=lambda g: g.group_id,
        )
        return listings, sorted({self.reason(e) for e in result.errors or []})

    def _do_describe_groups(self, group_ids: list[str]) -> Partial[str, GroupDescription]:
        futures: dict[str, Future[Any]] = {}
        for chunk in _chunks(group_ids, self.GROUPS_BATCH):
            futures.update(
                self.client.describe_consumer_groups(list(chunk), request_timeout=self.timeouts.request)
            )
        raw = self._gather(futures, self.timeouts.request)
        out: Partial[str, GroupDescription] = Partial(errors=raw.errors)
        for gid, desc in raw.values.items():
            assigned = sorted(
                {
                    (tp.topic, tp.partition)
                    for m in desc.members
                    if m.assignment is not None
                    for tp in m.assignment.topic_partitions
                }
            )
            out.values[gid] = GroupDescription(
                group_id=gid,
                state=parse.group_state(desc.state.name),
                member_ids=sorted(m.member_id for m in desc.members),
                assigned=assigned,
                members=sorted((parse.group_member(m) for m in desc.members), key=lambda m: m.member_id),
            )
        return out

    def _do_group_offsets(self, group_ids: list[str]) -> Partial[str, list[GroupOffset]]:
        futures: dict[str, Future[Any]] = {}
        for gid in group_ids:
            request = [ConsumerGroupTopicPartitions(gid)]
            futures.update(
                self.client.list_consumer_group_offsets(request, request_timeout=self.timeouts.request)
            )
        raw = self._gather(futures, self.timeouts.request)
        out: Partial[str, list[GroupOffset]] = Partial(errors=raw.errors)
        for gid, result in raw.values.items():
            offsets, failed = [], []
            for tp in result.topic_partitions:
                if tp.error is not None:
                    failed.append(f"{tp.topic}-{tp.partition}: {tp.error.str()}")
                    continue
                offsets.append(
                    GroupOffset(
                        topic=tp.topic, partition=tp.partition, committed_offset=parse.known(tp.offset)
                    )
                )
            out.values[gid] = sorted(offsets, key=lambda o: (o.topic, o.partition))
            if failed:
                out.errors[gid] = "; ".join(failed)
        return out

    # ------------------------------------------------------------------ remediation
    def _do_elect_preferred(
        self, keys: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, tuple[str, str | None]]:
        fut = self.client.elect_leaders(ElectionType.PREFERRED, [TopicPartition(t, p) for t, p in keys])
        raw = self._bounded("elect_leaders", fut, self.timeouts.request + 5)
        results = {(tp.topic, tp.partition): err for tp, err in (raw or {}).items()}
        out: dict[TopicPartitionKey, tuple[str, str | None]] = {}
        for key in keys:
            if key not in results:
                out[key] = ("failed", "no result for this partition in the answer")
                continue
            err = results[key]
            if err is None:
                out[key] = ("elected", None)
                continue
            kerr = err.args[0] if isinstance(err, KafkaException) and err.args else err
            code = kerr.code() if isinstance(kerr, KafkaError) else None
            if code == KafkaError.ELECTION_NOT_NEEDED:
                out[key] = ("not_needed", self.reason(err))
            elif code == KafkaError.PREFERRED_LEADER_NOT_AVAILABLE:
                out[key] = ("preferred_not_available", self.reason(err))
            else:
                out[key] = ("failed", self.reason(err))
        return out

    def _do_alter_group_offsets(
        self, group: str, offsets: Mapping[TopicPartitionKey, int]
    ) -> Partial[TopicPartitionKey, int]:
        out: Partial[TopicPartitionKey, int] = Partial()
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, int(o)) for (t, p), o in sorted(offsets.items())]
        )
        futures = self.client.alter_consumer_group_offsets([request], request_timeout=self.timeouts.request)
        result = self._bounded("alter_consumer_group_offsets", futures[group], self.timeouts.request)
        seen = set()
        for tp in result.topic_partitions:
            key = (tp.topic, tp.partition)
            seen.add(key)
            if tp.error is not None:
                out.errors[key] = self.reason(tp.error)
            else:
                out.values[key] = tp.offset
        for key in offsets:
            if key not in seen:
                out.errors[key] = "no result for this partition in the answer"
        return out

    def _do_offsets_for_times(
        self, keys: list[TopicPartitionKey], timestamp_ms: int
    ) -> Partial[TopicPartitionKey, int | None]:
        futures: dict[TopicPartitionKey, Future[Any]] = {}
        for chunk in _chunks(keys, self.OFFSETS_BATCH):
            request = {TopicPartition(t, p): OffsetSpec.for_timestamp(timestamp_ms) for t, p in chunk}
            for tp, fut in self.client.list_offsets(request, request_timeout=self.timeouts.request).items():
                futures[(tp.topic, tp.partition)] = fut
        raw = self._gather(futures, self.timeouts.request)
        out: Partial[TopicPartitionKey, int | None] = Partial(errors=raw.errors)
        for key, info in raw.values.items():
            out.values[key] = info.offset if info.offset >= 0 else None
        return out

    def _do_record_timestamps(self, wanted: list[record_times.Wanted]) -> Partial[record_times.Wanted, int]:
        chosen = wanted[: record_times.MAX_PARTITIONS]
        out = record_times.read_record_timestamps(self._conf, chosen, self.timeouts.request, self.reason)
        out.errors.update(dict.fromkeys(wanted[len(chosen) :], "not read: over the offsets read a cycle"))
        return out

    # ------------------------------------------------------------------ kafka-python
    def _do_listener_certificates(
        self, brokers: list[tuple[int, str, int]]
    ) -> Partial[int, ListenerCertificate]:
        return served_certificates(self.connection, {b: (h, p) for b, h, p in brokers}, self.timeouts.request)

    def _do_describe_log_dirs(self, ids: list[int]) -> Partial[int, list[LogDir]]:
        out: Partial[int, list[LogDir]] = Partial()
        try:
            self._kp.call("bootstrap", lambda kp: None, self.timeouts.metadata + 1)
        except AdminCallError as exc:
            out.errors = dict.fromkeys(ids, exc.reason)
            return out

        def one(broker: int) -> list[LogDir]:
            return log_dirs(self._kp.client(), broker)

        raw = self._gather(
            {b: self._kp.submit(one, b) for b in ids}, self.timeouts.request + 1, librdkafka=False
        )
        out.values, out.errors = raw.values, raw.errors
        return out
