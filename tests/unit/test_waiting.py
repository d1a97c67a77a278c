from __future__ import annotations

import pytest

from kafka_health._kits.waiting import WaitTimeout, wait_for


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def test_returns_first_truthy_value() -> None:
    clock = FakeClock()
    values = iter([None, 0, "ready"])
    assert wait_for(lambda: next(values), timeout=10, clock=clock, sleep=clock.sleep) == "ready"
    assert clock.now == 1.0


def test_times_out_with_what_and_last_error() -> None:
    clock = FakeClock()

    def boom() -> None:
        raise ValueError("not yet")

    with pytest.raises(WaitTimeout, match="waiting for the thing") as info:
        wait_for(boom, timeout=3, what="the thing", clock=clock, sleep=clock.sleep)
    assert isinstance(info.value.__cause__, ValueError)


def test_testbed_cluster_ids_never_read_as_cli_options() -> None:
    from kafka_health.testbed.cluster import _kafka_uuid

    ids = [_kafka_uuid() for _ in range(2000)]
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
