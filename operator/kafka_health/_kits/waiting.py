"""Polling with a deadline: the one way this project waits for something to become true."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """The condition did not hold before the deadline; the message says what was awaited."""


def wait_for(
    condition: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.5,
    what: str = "condition",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call `condition` until it returns a truthy value (returned) or `timeout` seconds pass.

    Exceptions raised by `condition` count as "not yet"; the last one is chained on timeout.
    Every falsy value counts as "not yet" too (an empty set, but also broker id 0): return a bool
    or a container when the awaited value may itself be falsy.
    """
    deadline = clock() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # the awaited thing is not there yet
            last_error = exc
        if clock() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}") from last_error
        sleep(interval)
