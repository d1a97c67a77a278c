"""The client host: one supervised child process that runs every Kafka client library call.

Why a process. librdkafka can kill the process that links it: a SIGSEGV in
`rd_kafka_cgrp_op(rkcg=NULL)` when an OffsetFetch sent by `list_consumer_group_offsets` is
answered NOT_COORDINATOR (the group's coordinator broker restarting; confluentinc/librdkafka
#5040, open, not fixed in confluent-kafka 2.16.1), and a use-after-free in
`rd_kafka_admin_coord_request()` that aborts (`eonce->refcnt > 0`) any coordinator-routed admin
call (DescribeConsumerGroups, ListConsumerGroupOffsets, ...) whose connection drops
(librdkafka PR #5397, open). Moving only OffsetFetch to kafka-python would dodge the first and
not the second, nor the next one; a process boundary covers every native fault of either
client, present and future. So no librdkafka or kafka-python code runs in the operator's own
process: `KafkaAdmin` forwards each call here, and a crash costs the calls in flight (a read is
retried once on a fresh process; a write reports that its outcome is unknown), never the
operator.

How. The child is a fresh interpreter running `client_host_child.main`, started with `subprocess`
(a fresh interpreter, never a fork: the operator has threads and a JVM gateway). It serves a
`multiprocessing.managers.BaseManager` on a Unix socket in a private directory, authenticated
with a random key handed over on its stdin: the stdlib's server runs a thread per connection
and the proxies keep one connection per calling thread, so the collector's concurrent calls
run concurrently in the child. (The "spawn" start method would do the same but re-imports the
parent's `__main__`, here the whole CLI, in the child; this entry point imports only what the
host needs.) One host serves every `KafkaAdmin` of the operator process, each as a remote
`AdminCalls` object: a fleet of policies costs one process, and one crash interrupts the calls
of every policy in flight at that moment (each is retried once).

The child ignores SIGINT and runs in its own session (a terminal's Ctrl-C is for the
operator), and exits when the operator does: its stdin (a pipe from the operator) reaches EOF,
or its parent pid changes. Its log records (librdkafka's and kafka-python's) are scrubbed of
the secrets of the admins it hosts (`logs.SECRETS`, filled in the child by each `AdminCalls`)
and sent over a pipe to the operator, which hands each to the logger of the same name: they
reach the operator's handlers and format (text, JSON, pytest's caplog) as before. Each call's
answer carries the number of records sent so far, and the caller waits (briefly) until they
have been handled, so a call's log lines are logged before it returns, as they were in-process.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.managers import BaseManager, BaseProxy
from pathlib import Path
from typing import Any

from kafka_health.collect import logs
from kafka_health.collect.connection import ConnectionConfig
from kafka_health.collect.results import AdminCallError, Timeouts

log = logging.getLogger(__name__)

# Loggers whose level the parent decides, per call (caplog and --verbose change them at runtime).
FORWARDED_LOGGERS = ("kafka", logs.LIBRDKAFKA_LOGGER, "kafka_health")
START_TIMEOUT = 60.0  # seconds for the child to import and listen (a loaded 2-CPU CI box: ~1 s)
LOG_WAIT = 1.0  # seconds a call waits for the log records the child sent before answering

# Errors of a proxy call whose other end is gone (the host died or its connection broke).
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError)


_restart_listeners: list[Callable[[str], None]] = []


def add_restart_listener(listener: Callable[[str], None]) -> None:
    """Call `listener(how)` each time the client process is restarted after it ended (`how`:
    `exit_reason`'s, or `hung`). The operator's metrics register here (report/metrics.py):
    collect sits below report and must not know its metrics registry."""
    if listener not in _restart_listeners:
        _restart_listeners.append(listener)


def _tell_restart(how: str) -> None:
    for listener in list(_restart_listeners):
        try:
            listener(how)
        except Exception:  # a listener's fault must not stop the restart
            log.exception("a client process restart listener failed")


class HostError(RuntimeError):
    """The client host could not be started."""


def exit_reason(returncode: int | None) -> str:
    """How a host ended, as the metric's `reason` label and in messages: the signal's name
    (`SIGSEGV`), `exit_1`, or `lost` (its connection broke while the process still ran). The
    supervisor says `hung` for a host its watchdog killed."""
    if returncode is None:
        return "lost"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal_{-returncode}"
    return f"exit_{returncode}"


# --------------------------------------------------------------------------------- in the parent
class _Remote(BaseProxy):
    """A `HostedAdmin` in the host. Created without reference counting (see `ClientHost.create`)."""

    _exposed_ = ("run",)


class ClientHost:
    """One running host process, seen from the operator: its manager, its log pump."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="kafka-health-client-")
        if len(self._dir) > 90:  # a Unix socket path has at most 107 bytes
            os.rmdir(self._dir)
            self._dir = tempfile.mkdtemp(prefix="kafka-health-client-", dir="/tmp")
        read_fd, write_fd = os.pipe()
        authkey = os.urandom(32)
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        started = time.monotonic()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "import sys; from kafka_health.collect.client_host_child import main; main(sys.argv[1:])",
                    str(write_fd),
                    self._dir,
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(write_fd,),
                start_new_session=True,
                env=env,
            )
        except BaseException:
            os.close(read_fd)
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        finally:
            os.close(write_fd)
        self._logs = Connection(read_fd, writable=False)
        self._received = 0
        self._pump_done = False
        self._cond = threading.Condition()
        try:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(authkey.hex().encode() + b"\n")
            self.process.stdin.flush()
            self._await_ready(self.process.stdout.fileno(), started + START_TIMEOUT)
            self.manager = BaseManager(address=os.path.join(self._dir, "host.sock"), authkey=authkey)
            self.manager.connect()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        self.pid = self.process.pid
        threading.Thread(target=self._pump, name=f"kafka-client-logs-{self.pid}", daemon=True).start()

    def _await_ready(self, fd: int, deadline: float) -> None:
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise HostError(f"the Kafka client process did not start within {START_TIMEOUT:.0f}s")
            chunk = os.read(fd, 64)
            if not chunk:
                code = self.process.wait(5)
                raise HostError(f"the Kafka client process exited at start ({exit_reason(code)})")
            line += chunk

    def create(self, connection: ConnectionConfig, timeouts: Timeouts) -> _Remote:
        """A new `HostedAdmin` in the host, and its proxy.

        The stdlib's proxies count references: each one's finalizer (`BaseProxy._decref`)
        connects to the server to decrement, in whatever thread the garbage collector happens to
        run it. To a host that hangs, that connection waits forever, in any thread of the
        operator (its event loop, or one holding the supervisor's lock). So the proxy is made
        without counting: the object lives as long as its host, `close` releases its clients
        early, and what stays is a few hundred bytes per `KafkaAdmin` ever created in that host."""
        manager: Any = self.manager
        token, exposed = manager._create("HostedAdmin", connection, timeouts)
        return _Remote(
            token,
            manager._serializer,
            manager=manager,
            authkey=manager._authkey,
            exposed=exposed,
            incref=False,
        )

    # ---------------------------------------------------------------- logs
    def _pump(self) -> None:
        """Hand the child's log records to the loggers of the same name in this process."""
        while True:
            try:
                seq, data = self._logs.recv()
            except (EOFError, OSError):
                break
            except Exception:  # a record cut short by the child dying mid-write
                break
            record = logging.makeLogRecord(data)
            logger = logging.getLogger(record.name)
            if logger.isEnabledFor(record.levelno):
                logger.handle(record)
            with self._cond:
                self._received = seq
                self._cond.notify_all()
        with self._cond:
            self._pump_done = True
            self._cond.notify_all()
        with contextlib.suppress(OSError):
            self._logs.close()

    def wait_logs(self, sent: int, timeout: float = LOG_WAIT) -> None:
        """Wait until the records the child had sent (`sent`) are logged here."""
        with self._cond:
            self._cond.wait_for(lambda: self._received >= sent or self._pump_done, timeout)

    # ---------------------------------------------------------------- process
    def poll(self) -> int | None:
        return self.process.poll()

    def wait_exit(self, timeout: float) -> int | None:
        """The exit status, waiting up to `timeout` (the socket closes a moment before the
        kernel reports the exit)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)
        return self.process.poll()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the child's stdin (it exits), kill it if it does not, and clean up."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(OSError):
            if self.process.stdout is not None:
                self.process.stdout.close()
        if self.wait_exit(timeout) is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.wait_exit(5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def rss_bytes(self) -> int | None:
        """Resident memory of the host process (Linux), for measurements."""
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None


class Supervisor:
    """The one host of this process: started on first use, restarted once per death however
    many threads see it die (a generation number under a lock).

    A watchdog kills a host that has not answered a call within its budget (a wedged or
    stopped process would otherwise hold the calls waiting on it forever); that counts as a
    death with the reason `hung`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._host: ClientHost | None = None
        self.generation = 0
        self._deaths: dict[int, str] = {}  # generation → how its host ended
        self._hung: set[int] = set()  # generations the watchdog killed
        self.restarts = 0
        self._atexit = False
        self._calls: dict[int, tuple[float, int, str]] = {}  # token → (deadline, generation, call)
        self._tokens = itertools.count()
        self._watchdog: threading.Thread | None = None

    def watch(self, generation: int, call: str, budget: float) -> int:
        """Register a call in flight on `generation`'s host; `unwatch` the token when it answers."""
        with self._lock:
            token = next(self._tokens)
            self._calls[token] = (time.monotonic() + budget, generation, call)
            if self._watchdog is None:
                self._watchdog = threading.Thread(
                    target=self._watch, name="kafka-client-watchdog", daemon=True
                )
                self._watchdog.start()
            return token

    def unwatch(self, token: int) -> None:
        with self._lock:
            self._calls.pop(token, None)

    def _watch(self) -> None:
        """Never waits on a host: under the lock only bookkeeping and a signal, logs after."""
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            killed = []
            with self._lock:
                late = [(t, g, c) for t, (d, g, c) in self._calls.items() if d < now]
                for token, generation, call in late:
                    del self._calls[token]
                    host = self._host
                    if generation == self.generation and host is not None and generation not in self._hung:
                        self._hung.add(generation)
                        with contextlib.suppress(ProcessLookupError):
                            host.process.kill()  # the waiting calls see it die and go on from there
                        killed.append(call)
            for call in killed:
                log.warning("Kafka client process did not answer %s in time; killed it", call)

    def current(self, call: str) -> tuple[ClientHost, int]:
        """The live host and its generation; starts one if there is none (raises `HostError`)."""
        with self._lock:
            host = self._host
            if host is not None and host.poll() is not None:  # died since the last call
                self._replace(self.generation, call, "before")
                host = self._host
            if host is None:
                host = self._start()
            return host, self.generation

    def died(self, generation: int, call: str) -> str:
        """A call on `generation`'s host lost its connection: record how the host ended, log
        it and start the next one (once per generation). Returns how it ended."""
        with self._lock:
            if generation not in self._deaths:
                self._replace(generation, call)
            return self._deaths[generation]

    def _replace(self, generation: int, call: str, when: str = "during") -> None:
        """Under the lock: end `generation`'s host and start the next."""
        host = self._host
        if generation != self.generation or host is None:  # already replaced
            self._deaths.setdefault(generation, "an earlier restart")
            return
        how = "hung" if generation in self._hung else exit_reason(host.wait_exit(2.0))
        host.stop(timeout=0)  # kills it if it still runs (a connection broke without a death)
        self._deaths[generation] = how
        self.generation += 1
        self._host = None
        self.restarts += 1
        _tell_restart(how)
        ended = {"lost": "lost its connection", "hung": "stopped answering"}.get(how, f"died with {how}")
        try:
            self._start()
        except HostError as exc:
            log.warning("Kafka client process %s %s %s; restarting failed: %s", ended, when, call, exc)
        else:
            log.warning("Kafka client process %s %s %s; restarted", ended, when, call)

    def _start(self) -> ClientHost:
        self._host = ClientHost()
        if not self._atexit:
            atexit.register(self.shutdown)
            self._atexit = True
        return self._host

    def host(self) -> ClientHost | None:
        """The running host, if any (tests and measurements)."""
        return self._host

    def shutdown(self) -> None:
        with self._lock:
            host, self._host = self._host, None
            self.generation += 1
            self._deaths[self.generation - 1] = "shut down"
        if host is not None:
            host.stop()


SUPERVISOR = Supervisor()


def check_result(result: tuple[str, Any, int], host: ClientHost) -> Any:
    """The value of a host answer (waiting for its log records); raises what the call raised."""
    status, payload, sent = result
    host.wait_logs(sent)
    if status == "ok":
        return payload
    if status == "admin_error":
        raise AdminCallError(*payload)
    kind, message = payload
    raise RuntimeError(f"{kind} in the Kafka client process: {message}")
