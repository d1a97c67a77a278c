"""The kafka-python admin client behind `KafkaAdmin` (log dirs, metadata quorum, registrations),
and the requests it makes that kafka-python's public API does not make as needed here.

kafka-python's calls block without an overall deadline and its client bootstraps eagerly, so
it is created on first use, every call runs in a small pool bounded by a timeout, and a client
that stopped answering (stuck on a frozen broker) is replaced: the old one is closed only once
the calls other threads still run on it have timed out by themselves.

kafka-python bootstraps from one bootstrap server picked at random and waits on it until its
timeout; a frozen broker accepts the connection and never answers, so that one pick would use
the whole budget. A client is therefore bootstrapped from one server at a time, each with an
equal share of the budget (at least `MIN_BOOTSTRAP_SHARE`), starting one server further along at
each new client. A request that names no broker (DescribeQuorum) is asked of the brokers in
turn the same way (`ask_answering_node`).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from kafka_health.collect import parse
from kafka_health.collect.results import AdminCallError, Timeouts
from kafka_health.models.snapshot import LogDir

T = TypeVar("T")

# The least time one bootstrap server gets (a loaded broker with TLS can take a second or so to
# answer); with many servers, the later ones may not get a turn within the metadata timeout.
MIN_BOOTSTRAP_SHARE = 2.0
# The least time one broker gets to answer a request asked of the brokers in turn.
MIN_PER_NODE = 1.0


class KafkaPython:
    def __init__(
        self, kwargs: dict[str, Any], timeouts: Timeouts, reason: Callable[[BaseException], str]
    ) -> None:
        self._kwargs = kwargs
        self._timeouts = timeouts
        self._reason = reason
        self._client: Any = None
        self._lock = threading.Lock()
        self._servers: list[str] = list(kwargs.get("bootstrap_servers") or [])
        self._start = 0  # the bootstrap server the next client tries first
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kafka-python")

    def client(self) -> Any:
        """The current client, bootstrapping one if needed (blocks up to the metadata timeout)."""
        with self._lock:
            if self._client is None:
                self._client = self._bootstrap()
            return self._client

    def _bootstrap(self) -> Any:
        """A new client, from the first bootstrap server (in rotation) that answers in its share."""
        from kafka import KafkaAdminClient

        servers: list[str | None] = list(self._servers) or [None]
        order = servers[self._start :] + servers[: self._start]
        self._start = (self._start + 1) % len(servers)
        budget = self._timeouts.metadata
        share = max(budget / len(order), min(budget, MIN_BOOTSTRAP_SHARE))
        deadline = time.monotonic() + budget
        error: BaseException = AdminCallError("bootstrap", "no time left")
        for turn, server in enumerate(order):
            wait = min(share, deadline - time.monotonic())
            if turn and wait < MIN_BOOTSTRAP_SHARE / 4:
                break  # the first server always gets its try
            kwargs = dict(self._kwargs) if server is None else {**self._kwargs, "bootstrap_servers": [server]}
            client = KafkaAdminClient.__new__(KafkaAdminClient)
            try:
                client.__init__(
                    **kwargs,
                    request_timeout_ms=int(self._timeouts.request * 1000),
                    bootstrap_timeout_ms=int(wait * 1000),
                    metadata_max_age_ms=30_000,
                )
                return client
            except Exception as exc:  # the next server may answer; the last error is raised
                error = exc
                inner = getattr(client, "_client", None)  # a failed bootstrap leaves its IO thread running
                if inner is not None:
                    with contextlib.suppress(Exception):
                        inner.close()
        raise error

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run `fn` in the pool (callers bound the returned future)."""
        return self._pool.submit(fn, *args)

    def call(self, name: str, fn: Callable[[Any], T], budget: float, *, write: bool = False) -> T:
        """`fn(client)` bounded by `budget` seconds; half of it goes to a retry on a fresh client.
        A `write` is sent once, with the whole budget: its outcome is unknown when it fails."""
        deadline = time.monotonic() + budget
        error = AdminCallError(name, "no time left")
        for attempt in (1,) if write else (1, 2):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            wait = remaining / 2 if attempt == 1 and not write else remaining
            used: list[Any] = []

            def run(used: list[Any] = used) -> T:
                used.append(self.client())
                return fn(used[0])

            try:
                return self._pool.submit(run).result(timeout=wait)
            except FutureTimeout:
                error = AdminCallError(name, f"timed out after {wait:.1f}s")
            except Exception as exc:
                error = AdminCallError(name, self._reason(exc))
            if used:
                self._replace(used[0])
        raise error

    def _replace(self, client: Any) -> None:
        with self._lock:
            if self._client is not client:
                return  # another thread replaced it already
            self._client = None
        closer = threading.Timer(self._timeouts.request, client.close)
        closer.daemon = True
        closer.start()

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def ask_answering_node(kp: Any, request: Any, per_node: float) -> Any:
    """`request`'s response from the first broker that answers within `per_node` seconds.

    kafka-python sends a request that names no broker to a random one when it holds no
    connection that answers yet, and waits on it for the whole request timeout: with one broker
    frozen, 2 of 27 fresh-client quorum reads failed that way, even with `KafkaPython.call`'s retry.
    Here brokers whose connection answers come first and brokers stuck connecting last, and each
    gets `per_node` seconds before the next is asked. An error that is not retriable (an API the
    broker lacks) ends the search at once."""
    from kafka.errors import KafkaTimeoutError, RetriableError
    from kafka.future import Future as KafkaFuture

    manager = kp._manager

    def rank(node: int) -> int:
        conn = manager._conns.get(node)
        if conn is None:
            return 1
        return 0 if conn.connected and not conn.paused else 2  # answering, not tried, stuck

    async def ask() -> Any:
        nodes = [broker.node_id for broker in manager.cluster.brokers()]
        random.shuffle(nodes)  # spreads the load; the stable sort keeps it within each rank
        error: BaseException = KafkaTimeoutError("no broker known")
        for node in sorted(nodes, key=rank):
            answer = KafkaFuture()

            def expire(answer: Any = answer, node: int = node) -> None:
                if not answer.is_done:
                    answer.failure(KafkaTimeoutError(f"broker {node} did not answer in {per_node:.1f}s"))

            manager.send(request, node_id=node, request_timeout_ms=int(per_node * 1000)).chain(answer)
            manager._net.call_later(per_node, expire)
            try:
                return await answer
            except RetriableError as exc:
                error = exc
        raise error

    return manager.run(ask)


_DESCRIBE_QUORUM_API_KEY = 55


def describe_metadata_quorum(kp: Any, per_node: float) -> Any:
    """kafka-python's DescribeQuorum, asked of the brokers in turn (`ask_answering_node`) and
    shaped as its `describe_metadata_quorum` returns it; None when the broker's ApiVersions does
    not list that API at all (a ZooKeeper-mode broker; kafka-python checks ApiVersions before
    sending)."""
    from kafka.errors import IncompatibleBrokerVersion, for_code
    from kafka.protocol.admin import DescribeQuorumRequest

    if not hasattr(kp, "_manager"):  # a stand-in client in unit tests
        ask = kp.describe_metadata_quorum
    else:

        def ask() -> Any:
            topic = DescribeQuorumRequest.TopicData
            request = DescribeQuorumRequest(
                topics=[
                    topic(
                        topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)]
                    )
                ]
            )
            response = ask_answering_node(kp, request, per_node)
            error = for_code(response.error_code)
            if error.errno != 0:
                raise error(response.error_message or "")
            result = response.to_dict()
            for t in result["topics"]:
                for p in t["partitions"]:
                    code, message = p.pop("error_code"), p.pop("error_message", None)
                    p["error"] = str(for_code(code)(message)) if code else None
            return result

    try:
        return ask()
    except IncompatibleBrokerVersion:
        if _DESCRIBE_QUORUM_API_KEY in {int(key) for key in kp.api_versions()}:
            raise  # listed, only no version in common: not the ZooKeeper case
        return None


def log_dirs(kp: Any, broker: int) -> list[LogDir]:
    """DescribeLogDirs of every partition on `broker`, asked with the client `kp` (blocking)."""
    from kafka.errors import UnknownBrokerIdError

    coro = getattr(kp, "_async_describe_log_dirs", None)
    if coro is not None:
        # topics=None asks for every partition; the public method first lists all
        # partitions with an extra Metadata request and then names each in the request.
        try:
            answer = kp._manager.run(coro, None, [broker])
        except UnknownBrokerIdError:
            # A broker that registered again (restarted) after kafka-python's metadata was
            # read (refreshed every 30 s): measured on the testbed, its log dirs stayed
            # unreadable for 10 s after it was back. Refresh the metadata and ask again.
            kp._manager.run(kp._manager.cluster.refresh_metadata)
            answer = kp._manager.run(coro, None, [broker])
    else:
        answer = kp.describe_log_dirs(brokers=[broker])
    results = answer[0]["log_dirs"] if answer else []
    if not results:
        # A broker always has a log directory; Kafka answers with none (kafka-python drops
        # the response's error code) when the principal lacks DESCRIBE on CLUSTER.
        raise AdminCallError(
            "describe_log_dirs",
            "CLUSTER_AUTHORIZATION_FAILED: the broker listed no log directory "
            "(Kafka answers so when the principal may not DESCRIBE the cluster)",
        )
    return parse.log_dirs(broker, results)


def describe_topic_partitions(kp: Any, topics: list[str], per_node: float) -> list[Any]:
    """DescribeTopicPartitions (Kafka 3.7+) of `topics` as dicts, every page of it (a broker
    answers at most 2,000 partitions a request and a cursor where the next page starts), each
    page asked of the brokers in turn as the quorum read is (`ask_answering_node`): it is read
    when partitions are out of sync, which is when a broker may be frozen."""
    from kafka.protocol.admin import DescribeTopicPartitionsRequest as Request

    answered: list[Any] = []
    cursor = None
    while True:
        request = Request(
            topics=[Request.TopicRequest(name=t) for t in topics],
            response_partition_limit=2000,
            cursor=cursor,
        )
        response = ask_answering_node(kp, request, per_node)
        answered.extend(response.to_dict()["topics"])
        if response.next_cursor is None:
            return answered
        cursor = Request.Cursor(
            topic_name=response.next_cursor.topic_name, partition_index=response.next_cursor.partition_index
        )


LIST_GROUPS = 16
LIST_GROUPS_TYPES_VERSION = 5  # ListGroups v5 (KIP-848) filters by group type


def group_type_served(kp: Any, describe_api: int) -> bool:
    """Whether the brokers list groups by type (ListGroups v5) and serve `describe_api` (the
    describe call of a group type: ShareGroupDescribe, StreamsGroupDescribe): a cluster without
    them has no such group to miss."""
    versions = kp._manager.broker_version_data.api_versions
    return versions.get(LIST_GROUPS, (0, -1))[1] >= LIST_GROUPS_TYPES_VERSION and describe_api in versions


def forget_group_coordinator(kp: Any, group: str) -> None:
    """Drop kafka-python's cached coordinator of `group` (it never drops one itself), so the next
    FindCoordinator names where the group lives now."""
    from kafka.protocol.metadata import CoordinatorType

    kp._manager.cluster._coordinators.pop((CoordinatorType.GROUP, group), None)
