"""Keep the terminal for the command's own output: librdkafka, the Spark JVM and library loggers
write to a log file instead (unless `--verbose`), and slow phases show a progress line on stderr
when stderr is a terminal.

librdkafka (in the Kafka client process) and the Spark JVM write straight to file descriptor 2,
which they inherit when they start; so fd 2 itself points at the log while the command runs, and
Python's `sys.stderr` keeps the terminal for the command's messages.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, TextIO

import click
import typer

from kafka_health._kits.paths import state_root

Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="Show the Kafka client's and Spark's own logs on the terminal (default: written to "
        "the log file named by --log-file).",
    ),
]
LogFile = Annotated[
    Path | None,
    typer.Option(
        "--log-file",
        help="Where the Kafka client's and Spark's logs go (default: "
        "$XDG_STATE_HOME/kafka-health/logs/cli.log).",
    ),
]


def default_log_file() -> Path:
    return state_root() / "logs" / "cli.log"


def _real_stderr() -> bool:
    try:
        return sys.stderr.fileno() == 2
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return False  # replaced (a test runner's capture): only fd 2 itself moves


def start(verbose: bool, log_file: Path | None = None) -> Path | None:
    """Send fd 2 and library logs to the log until the command ends; returns the log's path
    (None with `verbose`). Restored when the click context closes."""
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return None
    path = log_file or default_log_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stderr.flush()
    saved_fd = os.dup(2)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    old_stderr = sys.stderr
    if _real_stderr():
        sys.stderr = os.fdopen(os.dup(saved_fd), "w", buffering=1, encoding="utf-8", errors="replace")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    os.write(2, f"--- kafka-health {' '.join(sys.argv[1:])} at {time.strftime('%FT%T%z')}\n".encode())

    def restore() -> None:
        root.removeHandler(handler)
        handler.close()
        if sys.stderr is not old_stderr:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
                sys.stderr.close()
            sys.stderr = old_stderr
        os.dup2(saved_fd, 2)
        os.close(saved_fd)

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(restore)
    return path


@contextlib.contextmanager
def progress(what: str, stream: TextIO | None = None) -> Iterator[None]:
    """`what…` with a spinner and the seconds so far on stderr while the block runs; nothing
    unless stderr is a terminal. The line is erased when the block ends."""
    out = stream or sys.stderr
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def spin() -> None:
        for frame in itertools.cycle("|/-\\"):
            if done.wait(0.2):
                break
            out.write(f"\r{frame} {what} ({time.monotonic() - started:.0f}s)\033[K")
            out.flush()

    thread = threading.Thread(target=spin, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        out.write("\r\033[K")
        out.flush()
