"""The one place each Kafka admin call is made; every call is bounded by a timeout.

`KafkaAdmin` is what the rest of the operator uses: the calls and what they return are
`admin_api.AdminApi`'s, written once. They are made by `admin_calls.AdminCalls`
(confluent-kafka for almost everything, kafka-python for log dirs, the metadata quorum, broker
registrations and eligible leader replicas), which runs in the client host, a supervised child process
(`client_host`): no librdkafka or kafka-python code runs in the operator's process, so a native
crash in a client library (librdkafka #5040: SIGSEGV on NOT_COORDINATOR for an OffsetFetch
while the group's coordinator restarts; PR #5397: an abort in any coordinator-routed admin call
whose connection drops) never takes the operator down. Calls return typed values; a call that
fails as a whole raises `AdminCallError`; calls over many items (topics, partitions, groups,
brokers) return a `Partial` that keeps the per-item errors, so callers can say exactly what is
missing. `KafkaAdmin` only says how a call reaches that process and what a crash there means.

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
from kafka_health.collect.admin_api import AdminApi, call_name
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


class _Crashed(Exception):
    """A read's process died on the first attempt and on its retry."""

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class KafkaAdmin(AdminApi):
    """Admin access to one cluster. Thread-safe; create once per cluster and reuse; `close()` it."""

    HANG_MARGIN = 30.0  # seconds beyond a call's own bounds before its client process is killed as hung

    def __init__(
        self,
        connection: ConnectionConfig | Mapping[str, Any],
        *,
        timeouts: Timeouts | None = None,
    ) -> None:
        super().__init__(connection, timeouts=timeouts)
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
        call = call_name(method)
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
            call_name(method),
            f"the Kafka client process crashed ({exc.how}) twice; the call was retried once on a fresh process",
        ) from None

    @staticmethod
    def _each(keys: Iterable[K], exc: _Crashed) -> Partial[K, Any]:
        reason = f"the Kafka client process crashed ({exc.how}) twice; the call was retried once"
        return Partial(errors=dict.fromkeys(keys, reason))

    # ------------------------------------------------------------------ how a call is run
    def _read_whole(self, method: str, *args: Any) -> Any:
        try:
            return self._call(method, *args)
        except _Crashed as exc:
            self._whole(method, exc)

    def _read_each(self, method: str, keys: list[K], *args: Any) -> Partial[K, Any]:
        try:
            result: Partial[K, Any] = self._call(method, keys, *args)
        except _Crashed as exc:
            return self._each(keys, exc)
        return result

    def _write(self, method: str, *args: Any) -> Any:
        return self._call(method, *args, write=True)
