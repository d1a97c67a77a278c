"""A policy deleted mid-cycle: its worker is released when the abandoned cycle's thread ends,
in a worker thread, never on the event loop (closing a client waits on the client process, and
a stalled loop stalls every policy's daemon and Kopf's deletion handling: seen as a deletion
that took over a minute in a full suite run)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kafka_health.controller import handlers


class SlowToClose:
    def __init__(self, work_dir: Path) -> None:
        self.namespace, self.name = "ns", "p"
        self.runtime = SimpleNamespace(settings=SimpleNamespace(work_dir=work_dir))
        self.closed_on: str | None = None

    def close(self) -> None:
        time.sleep(0.5)  # a client process slow to answer "close"
        self.closed_on = threading.current_thread().name


def test_an_abandoned_cycle_releases_its_worker_off_the_event_loop(tmp_path: Path) -> None:
    async def scenario() -> tuple[SlowToClose, float]:
        worker = SlowToClose(tmp_path)
        cycle: asyncio.Future[Any] = asyncio.ensure_future(asyncio.to_thread(time.sleep, 0.1))
        releasing = asyncio.ensure_future(handlers.release_when_done(cycle, worker))  # type: ignore[arg-type]
        # The loop keeps turning while the worker closes: ticks of 50 ms are never late by the
        # close's 0.5 s.
        worst, last = 0.0, time.monotonic()
        while not releasing.done():
            await asyncio.sleep(0.05)
            now = time.monotonic()
            worst, last = max(worst, now - last), now
        await releasing
        return worker, worst

    worker, worst = asyncio.run(scenario())
    assert worker.closed_on is not None and worker.closed_on != threading.main_thread().name
    assert worst < 0.4, f"the event loop stalled {worst:.2f}s while the worker closed"
