"""Blocking work with a deadline: run it in a thread, cancel it when the deadline passes.

A thread cannot be killed, so the work must be cancellable from outside (a diagnosis: its Spark
jobs are interrupted by tag). If the work does not end within a grace period after the cancel,
it is left running and reported as stuck, so the caller can make the process restart (its
liveness probe fails) rather than wait for ever.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

log = logging.getLogger(__name__)


class DeadlineExceeded(TimeoutError):
    """The work ran past its deadline and was cancelled.

    `stuck`: it had still not ended `grace_s` seconds after the cancel (its thread runs on)."""

    def __init__(self, deadline_s: float, *, stuck: bool) -> None:
        super().__init__(
            f"ran past its deadline of {deadline_s:g}s" + ("; still running after cancel" if stuck else "")
        )
        self.deadline_s = deadline_s
        self.stuck = stuck


@dataclass
class _Outcome(Generic[T]):
    done: threading.Event = field(default_factory=threading.Event)
    value: T | None = None
    error: BaseException | None = None


def run_with_deadline(
    work: Callable[[], T],
    *,
    deadline_s: float,
    cancel: Callable[[], object],
    grace_s: float,
    name: str = "deadline",
) -> T:
    """`work()`'s result, or its exception, if it ends within `deadline_s` seconds.

    Otherwise `cancel()` is called (its errors logged), and DeadlineExceeded raised once `work` has failed (with
    whatever the cancel made it raise, chained) or `grace_s` more seconds have passed
    (`stuck=True`). Work that still finishes after the cancel returns its result: it is
    complete, only late. The work runs in a daemon thread of its own."""
    outcome: _Outcome[T] = _Outcome()

    def run() -> None:
        try:
            outcome.value = work()
        except BaseException as exc:  # handed to the caller's thread
            outcome.error = exc
        finally:
            outcome.done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not outcome.done.wait(deadline_s):
        # The cancel runs in a thread too: a wedged process may not answer it either.
        threading.Thread(target=_quietly(cancel), name=f"{name}-cancel", daemon=True).start()
        if not outcome.done.wait(grace_s):
            raise DeadlineExceeded(deadline_s, stuck=True)
        if outcome.error is not None:
            raise DeadlineExceeded(deadline_s, stuck=False) from outcome.error
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]


def _quietly(fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:
            log.exception("cancelling work past its deadline failed")

    return run
