"""The admin calls are written once (`collect.admin_api.AdminApi`): `AdminCalls` makes them,
`KafkaAdmin` forwards them, and how a crash of the client process ends each call is decided by
its kind (whole read, per-item read, write). The client process's restarts reach the metric
through `client_host.add_restart_listener` (collect does not import report)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_health.collect import client_host, kafka_admin
from kafka_health.collect.admin_api import CALLS, AdminApi
from kafka_health.collect.admin_calls import AdminCalls
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin, Partial
from kafka_health.report import metrics

EXPECTED_CALLS = {
    "metadata",
    "topic_configs",
    "describe_topics",
    "list_offsets",
    "list_groups",
    "describe_groups",
    "group_offsets",
    "elect_preferred",
    "alter_group_offsets",
    "offsets_for_times",
    "describe_cluster",
    "describe_quorum",
    "describe_log_dirs",
    "eligible_leaders",
    "reassignments",
    "share_groups",
    "alter_share_group_offsets",
    "streams_groups",
    "record_timestamps",
    "listener_certificates",
    "open_transactions",
    "abort_transaction",
    "broker_throttles",
    "reorder_replicas",
}


def test_the_calls_are_the_admin_api_methods() -> None:
    assert CALLS == EXPECTED_CALLS


@pytest.mark.parametrize("cls", [AdminCalls, KafkaAdmin])
def test_each_call_is_written_once_in_the_interface(cls: type[AdminApi]) -> None:
    assert issubclass(cls, AdminApi)
    assert not CALLS & set(vars(cls)), "a call is written again in the subclass"


def test_every_call_has_its_implementation_in_the_client_process() -> None:
    assert all(callable(getattr(AdminCalls, f"_do_{name}", None)) for name in CALLS)


class _Forwarded(KafkaAdmin):
    """A `KafkaAdmin` whose client process crashes on every read (or answers `answer`)."""

    def __init__(self, answer: Any = None) -> None:
        super().__init__({"bootstrap.servers": "127.0.0.1:1"})
        self.sent: list[tuple[str, tuple[Any, ...], bool]] = []
        self.answer = answer

    def _call(self, method: str, *args: Any, write: bool = False) -> Any:
        self.sent.append((method, args, write))
        if self.answer is None:
            raise kafka_admin._Crashed("SIGSEGV")
        return self.answer


def test_a_crashed_per_item_read_is_an_error_on_each_item() -> None:
    admin = _Forwarded()
    read = admin.describe_topics(["b", "a", "b"])
    assert admin.sent == [("describe_topics", (["a", "b"],), False)]
    assert read.values == {} and set(read.errors) == {"a", "b"}
    assert "crashed (SIGSEGV) twice" in read.errors["a"]
    assert admin.describe_log_dirs([]) == Partial() and len(admin.sent) == 1  # nothing to ask


def test_a_crashed_whole_read_raises_with_the_clients_call_name() -> None:
    with pytest.raises(AdminCallError) as err:
        _Forwarded().list_groups()
    assert err.value.call == "list_consumer_groups"


def test_a_write_is_forwarded_as_a_write_with_normalised_arguments() -> None:
    admin = _Forwarded(answer=Partial(values={("t", 0): 5}))
    assert admin.alter_group_offsets("g", {("t", 0): 5}).values == {("t", 0): 5}
    assert admin.sent == [("alter_group_offsets", ("g", {("t", 0): 5}), True)]
    assert admin.elect_preferred([]) == {} and len(admin.sent) == 1


def _restarts(reason: str) -> float:
    return sum(
        s.value
        for m in metrics.CLIENT_PROCESS_RESTARTS.collect()
        for s in m.samples
        if s.name.endswith("_total") and s.labels.get("reason") == reason
    )


def test_a_restart_reaches_the_metric_through_the_listener() -> None:
    before = _restarts("SIGSEGV")
    client_host._tell_restart("SIGSEGV")
    assert _restarts("SIGSEGV") == before + 1


def test_a_failing_listener_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[str] = []
    monkeypatch.setattr(client_host, "_restart_listeners", [])

    def broken(how: str) -> None:
        raise RuntimeError(how)

    client_host.add_restart_listener(broken)
    client_host.add_restart_listener(heard.append)
    client_host.add_restart_listener(heard.append)  # once only
    client_host._tell_restart("hung")
    assert heard == ["hung"]
