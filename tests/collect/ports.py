"""A local TCP port nobody listens on: a cluster that cannot be reached."""

from __future__ import annotations

import socket


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
