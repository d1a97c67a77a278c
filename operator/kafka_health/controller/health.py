"""Liveness (/healthz) and readiness (/readyz) endpoints, served on the operator's event loop.

Liveness answers while the event loop runs (a frozen loop fails the probe and the pod is
restarted) and the Spark driver is not wedged (a diagnosis that did not stop when cancelled:
only a restart frees it); readiness turns on once start-up is done and the operator watches its resources.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from aiohttp import web


async def serve(
    port: int,
    ready: threading.Event,
    host: str = "0.0.0.0",  # noqa: S104
    unresponsive: Callable[[], str | None] = lambda: None,
) -> web.AppRunner:
    """`unresponsive()`: why the process must be restarted, or None while it works."""

    async def healthz(_: web.Request) -> web.Response:
        why = unresponsive()
        if why is not None:
            return web.json_response({"status": "unresponsive", "reason": why}, status=503)
        return web.json_response({"status": "ok"})

    async def readyz(_: web.Request) -> web.Response:
        if ready.is_set():
            return web.json_response({"status": "ready"})
        return web.json_response({"status": "starting"}, status=503)

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
