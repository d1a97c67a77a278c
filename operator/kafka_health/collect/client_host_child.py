"""The client host's own side: the child process that runs the Kafka client libraries.

`client_host.ClientHost` starts a fresh interpreter on `main` here. It serves one `HostedAdmin`
per `KafkaAdmin` of the operator (each an `admin_calls.AdminCalls`) through a
`multiprocessing.managers` server on a Unix socket, and sends its log records, scrubbed of the
secrets of the admins it hosts, to the operator over a pipe (see `client_host` for why).
"""

from __future__ import annotations

import logging
import os
import resource
import select
import signal
import sys
import threading
from multiprocessing.connection import Connection
from multiprocessing.managers import BaseManager
from typing import Any

from kafka_health.collect import logs, security_errors
from kafka_health.collect.admin_api import CALLS
from kafka_health.collect.connection import ConnectionConfig, redact
from kafka_health.collect.results import AdminCallError, Timeouts

log = logging.getLogger("kafka_health.collect.client_host")  # the name its records always had

_RECORD_FIELDS = (
    "name",
    "levelno",
    "levelname",
    "pathname",
    "filename",
    "module",
    "lineno",
    "funcName",
    "created",
    "msecs",
    "relativeCreated",
    "thread",
    "threadName",
    "process",
    "processName",
    "taskName",
)


class _PipeHandler(logging.Handler):
    """Sends each record, message formatted and scrubbed of secrets, to the parent."""

    def __init__(self, conn: Connection) -> None:
        super().__init__(logging.DEBUG)
        self._conn = conn
        self._exc = logging.Formatter()
        self.sent = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text = f"{text}\n{self._exc.formatException(record.exc_info)}"
            data: dict[str, Any] = {k: getattr(record, k, None) for k in _RECORD_FIELDS}
            data.update(msg=text, args=None, exc_info=None, exc_text=None, stack_info=None)
            scrubbed = logging.makeLogRecord(data)
            logs.SECRETS.filter(scrubbed)
            data["msg"] = scrubbed.msg
            self._conn.send((self.sent + 1, data))  # the handler's lock serializes emit()
            self.sent += 1
        except OSError:  # the parent is gone; the watcher ends this process
            pass
        except Exception:
            self.handleError(record)


_handler: _PipeHandler | None = None
_levels: dict[str, int] = {}
_levels_lock = threading.Lock()


def _apply_levels(levels: dict[str, int]) -> None:
    with _levels_lock:
        for name, level in levels.items():
            if _levels.get(name) != level:
                logging.getLogger(name).setLevel(level)
                _levels[name] = level


class HostedAdmin:
    """One `AdminCalls` in the host, behind a single `run` entry point that never raises:
    answers are `(status, payload, records_sent)` so that nothing but plain values crosses."""

    def __init__(self, connection: ConnectionConfig, timeouts: Timeouts) -> None:
        from kafka_health.collect.admin_calls import AdminCalls

        self._secrets = connection.secrets
        self._calls: AdminCalls | None = None
        self._broken = ""
        try:
            self._calls = AdminCalls(connection, timeouts=timeouts)
        except Exception as exc:  # e.g. librdkafka refusing the configuration
            why = f"the client could not be created: {type(exc).__name__}: {exc}"
            self._broken = redact(security_errors.kafka_key_names(why), self._secrets)  # Kafka's key names

    def run(self, method: str, args: tuple[Any, ...], levels: dict[str, int]) -> tuple[str, Any, int]:
        _apply_levels(levels)
        try:
            if self._calls is None:
                raise AdminCallError(method, self._broken)
            value: Any = None
            if method == "close":
                calls, self._calls, self._broken = self._calls, None, "the client is closed"
                calls.close()
            elif method in CALLS:
                value = getattr(self._calls, method)(*args)
            else:
                raise ValueError(f"unknown call {method!r}")
            status, payload = "ok", value
        except AdminCallError as exc:
            status, payload = "admin_error", (exc.call, exc.reason)
        except Exception as exc:
            log.exception("%s failed in the Kafka client process", method)
            status, payload = "error", (type(exc).__name__, redact(str(exc), self._secrets))
        return status, payload, _handler.sent if _handler is not None else 0


class _ServerManager(BaseManager):
    pass


_ServerManager.register("HostedAdmin", HostedAdmin, exposed=("run",))


def _watch_parent(parent: int) -> None:
    """End this process when the operator is gone: stdin at EOF (the operator's end of the pipe
    closed, even on SIGKILL) or a new parent pid (re-parented)."""
    stdin = sys.stdin.buffer
    while True:
        ready, _, _ = select.select([stdin], [], [], 1.0)
        if ready and not os.read(stdin.fileno(), 4096):
            break
        if os.getppid() != parent:
            break
    os._exit(0)


def main(argv: list[str]) -> None:
    """The child's entry point (`main([LOG_FD, SOCKET_DIR, PARENT_PID])`), the authkey (hex) on
    the first line of stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # No core file: the root filesystem may be read-only, and the WARNING log and the metric
    # already say what happened.
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    log_fd, sock_dir, parent = int(argv[0]), argv[1], int(argv[2])
    authkey = bytes.fromhex(os.read(0, 65).decode().strip())  # written in one write, before anything else

    global _handler
    _handler = _PipeHandler(Connection(log_fd, readable=False))
    root = logging.getLogger()
    root.handlers[:] = [_handler]
    root.setLevel(logging.WARNING)
    logs.install()
    # Import the clients now: the first call must not pay for it.
    import kafka_health.collect.admin_calls  # noqa: F401

    manager = _ServerManager(address=os.path.join(sock_dir, "host.sock"), authkey=authkey)
    server = manager.get_server()
    threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()
    os.write(1, b"ready\n")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing else may write to the handshake pipe
    sys.stdout = sys.stderr
    server.serve_forever()
