"""kafka-python internals that `collect/admin_calls.py` relies on, checked so an upgrade that moves
them fails here, loudly, instead of silently costing an extra Metadata request per cycle.

`describe_log_dirs` asks for every partition with `topics=None` in DescribeLogDirs; kafka-python's
public `describe_log_dirs(topic_partitions=None)` instead lists every partition with a Metadata
request first and names each one in the request (at 1M partitions, a large request per broker).
So the collector calls the private coroutine through the client's private network manager.
pyproject pins kafka-python to the minor release these assertions were written against.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version

from kafka import KafkaAdminClient


def test_kafka_python_is_the_pinned_minor_release() -> None:
    major, minor = (int(x) for x in version("kafka-python").split(".")[:2])
    assert (major, minor) == (3, 0), "re-check tests/collect/test_kafka_python_private_api.py, then the pin"


def test_private_describe_log_dirs_coroutine_keeps_its_signature() -> None:
    coro = getattr(KafkaAdminClient, "_async_describe_log_dirs", None)
    assert coro is not None, "kafka-python dropped KafkaAdminClient._async_describe_log_dirs"
    assert inspect.iscoroutinefunction(coro)
    params = list(inspect.signature(coro).parameters)
    assert params == ["self", "topic_partitions", "brokers"], params
    # topics=None (not a list) is what asks the broker for every partition.
    source = inspect.getsource(coro)
    assert "DescribeLogDirsRequest(topics=topic_partitions)" in source


def test_admin_client_runs_coroutines_through_its_manager() -> None:
    init = inspect.getsource(KafkaAdminClient.__init__)
    assert "self._manager =" in init, "KafkaAdminClient no longer keeps its network manager in _manager"
    from kafka.net.manager import KafkaConnectionManager

    run = KafkaConnectionManager.run
    assert list(inspect.signature(run).parameters) == ["self", "coro", "args"]


def test_what_the_share_and_streams_group_reads_use_is_there() -> None:
    """`collect/share_groups.py` and `collect/streams_groups.py` send requests of their own through
    the manager, find coordinators with the client's cached lookup, drop a cached coordinator
    that moved, and bound a whole read on the manager's loop."""
    from kafka.cluster import ClusterMetadata
    from kafka.net.manager import KafkaConnectionManager

    coro = getattr(KafkaAdminClient, "_find_coordinator_ids", None)
    assert coro is not None and inspect.iscoroutinefunction(coro)
    assert list(inspect.signature(coro).parameters)[:2] == ["self", "keys"]
    for name in ("send", "call_soon", "wait_for"):
        assert callable(getattr(KafkaConnectionManager, name, None)), f"KafkaConnectionManager.{name}"
    assert "request_timeout_ms" in inspect.signature(KafkaConnectionManager.send).parameters
    assert "self._coordinators" in inspect.getsource(ClusterMetadata.__init__)
    assert "broker_version_data" in inspect.getsource(KafkaConnectionManager)
    from kafka.protocol import api_data

    # `load_json=<package>` makes a message class read `<class name>.json` from that package.
    assert "load_json(name, package=kw.get('load_json'))" in inspect.getsource(api_data)
