"""Local TCP ports for clusters that cannot be reached: one nobody listens on, and one that
accepts connections and never answers (what a frozen broker looks like to a client)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from tests import parallel


@contextmanager
def closed_port() -> Iterator[int]:
    """A port that refuses connections, held for the `with` block: bound and not listening, so
    the kernel gives it to nobody else meanwhile. (A port merely found free could be handed to a
    process of another test worker, which would then read this client's Kafka requests.) From the
    worker's service ports, not the kernel's ephemeral range: a client that still retries it
    after the block must not reach a driver's one-time socket there (tests/parallel.py)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", parallel.service_port()))
        yield int(s.getsockname()[1])


@contextmanager
def silent_listener() -> Iterator[int]:
    """A port whose connections the kernel accepts (backlog) and nobody ever reads or answers
    (a service port, as `closed_port`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", parallel.service_port()))
        s.listen(16)
        yield int(s.getsockname()[1])
