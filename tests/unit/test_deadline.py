"""`run_with_deadline`: work in time, work cancelled, work that ignores its cancel."""

from __future__ import annotations

import threading
import time

import pytest

from kafka_health._kits.deadline import DeadlineExceeded, run_with_deadline


def test_work_in_time_returns_its_result_and_never_cancels() -> None:
    cancelled = threading.Event()
    assert run_with_deadline(lambda: 42, deadline_s=5, cancel=cancelled.set, grace_s=1) == 42
    assert not cancelled.is_set()


def test_work_failing_in_time_raises_its_own_error() -> None:
    def work() -> None:
        raise ValueError("bad snapshot")

    with pytest.raises(ValueError, match="bad snapshot"):
        run_with_deadline(work, deadline_s=5, cancel=lambda: None, grace_s=1)


def test_work_past_the_deadline_is_cancelled_and_its_error_chained() -> None:
    cancelled = threading.Event()

    def work() -> None:
        if cancelled.wait(10):
            raise InterruptedError("job cancelled")

    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        run_with_deadline(work, deadline_s=0.2, cancel=cancelled.set, grace_s=5)
    assert time.monotonic() - started < 3
    assert not caught.value.stuck
    assert isinstance(caught.value.__cause__, InterruptedError)
    assert "0.2s" in str(caught.value)


def test_work_that_ignores_its_cancel_is_reported_stuck_after_the_grace() -> None:
    release = threading.Event()
    cancels = []
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        run_with_deadline(
            lambda: release.wait(30), deadline_s=0.2, cancel=lambda: cancels.append(1), grace_s=0.3
        )
    elapsed = time.monotonic() - started
    release.set()
    assert caught.value.stuck
    assert cancels == [1]
    assert 0.45 <= elapsed < 3


def test_work_that_completes_after_its_cancel_returns_its_result() -> None:
    def work() -> str:
        time.sleep(0.3)
        return "late but whole"

    assert run_with_deadline(work, deadline_s=0.1, cancel=lambda: None, grace_s=5) == "late but whole"


def test_a_cancel_that_hangs_does_not_hang_the_caller() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        run_with_deadline(
            lambda: release.wait(30), deadline_s=0.1, cancel=lambda: release.wait(30), grace_s=0.2
        )
    release.set()
    assert caught.value.stuck
    assert time.monotonic() - started < 3


def test_a_failing_cancel_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def cancel() -> None:
        raise RuntimeError("gateway gone")

    with pytest.raises(DeadlineExceeded) as caught:
        run_with_deadline(lambda: time.sleep(0.5), deadline_s=0.1, cancel=cancel, grace_s=0.05)
    time.sleep(0.1)
    assert caught.value.stuck
    assert "cancelling work past its deadline failed" in caplog.text
