"""/healthz and /readyz over real HTTP: liveness fails once the Spark driver is marked wedged."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request

from kafka_health.controller.health import serve


def _get(port: int, path: str) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_liveness_fails_while_the_process_reports_itself_unresponsive() -> None:
    ready = threading.Event()
    wedged: list[str] = []

    async def probe() -> list[tuple[int, dict[str, str]]]:
        runner = await serve(0, ready, host="127.0.0.1", unresponsive=lambda: wedged[0] if wedged else None)
        port = runner.addresses[0][1]
        seen = [
            await asyncio.to_thread(_get, port, "/healthz"),
            await asyncio.to_thread(_get, port, "/readyz"),
        ]
        ready.set()
        seen.append(await asyncio.to_thread(_get, port, "/readyz"))
        wedged.append("the diagnosis of ns/p did not stop within 60s of its cancel")
        seen.append(await asyncio.to_thread(_get, port, "/healthz"))
        await runner.cleanup()
        return seen

    alive, starting, is_ready, dead = asyncio.run(probe())
    assert alive == (200, {"status": "ok"})
    assert starting[0] == 503 and is_ready[0] == 200
    assert dead == (
        503,
        {"status": "unresponsive", "reason": "the diagnosis of ns/p did not stop within 60s of its cancel"},
    )
