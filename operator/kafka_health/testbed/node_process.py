"""One JVM per testbed node, whoever starts it: the test, the pod stand-in or the CLI.

Several processes act on one testbed at once: a test heals its cluster while the pod stand-in
(a separate process) replaces a deleted pod's broker. Each read `testbed.json`, saw the node
down and started it, so two JVMs shared one data directory: the second one's KRaft log
recovery truncated the metadata log under the first (Kafka: "Found record size 0 smaller than
minimum record overhead"), then could not bind the node's port, and both exited. Kafka's own
data-dir lock did not stop the second JVM before it had touched the metadata log (a combined
node, as CI saw it), so the testbed must never start one.

Three rules keep it from happening:
1. Starting, stopping and killing a node holds that node's lock (`node_lock`), an `flock` on
   `<state dir>/locks/node-<id>.lock`, so "is it running? then start it" is one step across
   processes.
2. Whether a node runs is asked of the kernel, not of the recorded pid alone: when the recorded
   pid is gone, `/proc` is searched for a JVM whose arguments name the node's config file
   (`find_node_process`), so a pid lost by a stale write is found again.
3. A pid is written with `record_pid`: under the state file's lock, the file is read again and
   only that node's pid changes, so one actor's write never undoes another's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
from pathlib import Path

from kafka_health._kits import file_lock


def node_lock(state_dir: Path, node_id: int) -> contextlib.AbstractContextManager[None]:
    """Held while one actor checks, starts, stops or kills node `node_id` (rule 1)."""
    return file_lock.exclusive(state_dir / "locks" / f"node-{node_id}.lock")


def state_lock(state_file: Path) -> contextlib.AbstractContextManager[None]:
    """Held while `testbed.json` is read and rewritten (rule 3)."""
    return file_lock.exclusive(state_file.with_name(state_file.name + ".lock"))


def write_state(state_file: Path, raw: dict[str, object]) -> None:
    """Replace the state file atomically (a reader never sees half of it)."""
    state_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = state_file.with_name(f"{state_file.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(raw, indent=2))
    tmp.replace(state_file)


def record_pid(state_file: Path, node_id: int, pid: int | None) -> None:
    """Set one node's pid in the state file, leaving every other field as the file has it now."""
    with state_lock(state_file):
        raw = json.loads(state_file.read_text())
        for group in ("brokers", "controllers"):
            for node in raw.get(group, []):
                if node["id"] == node_id:
                    node["pid"] = pid
        write_state(state_file, raw)


def _cmdline(pid: int) -> list[bytes] | None:
    """The process's arguments, or None when it is gone or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        for _ in range(10):  # just after exec the kernel may show an empty cmdline for a moment
            if raw:
                break
            time.sleep(0.05)
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    if stat.split(") ", 1)[1].startswith("Z"):
        return None
    return raw.split(b"\0")


def is_node_process(pid: int | None, config: Path) -> bool:
    """`pid` runs and is the JVM of the node whose config file is `config` (pids get reused)."""
    if pid is None:
        return False
    args = _cmdline(pid)
    return args is not None and str(config).encode() in args


def find_node_process(config: Path) -> int | None:
    """The pid of a running JVM started with `config`, searched in /proc (rule 2)."""
    wanted = str(config).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if wanted in raw.split(b"\0") and is_node_process(int(entry.name), config):
            return int(entry.name)
    return None


def running_pid(recorded: int | None, config: Path) -> int | None:
    """The node's JVM: the recorded pid when it still is that JVM, else whatever /proc finds."""
    if is_node_process(recorded, config):
        return recorded
    return find_node_process(config)


def wait_exit(pid: int, timeout: float) -> bool:
    """Wait for a process to go away (reaping it if it is our child)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.split(") ", 1)[1].startswith("Z"):
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def process_start_time(pid: int) -> str | None:
    """When the process started, from /proc (so startedAt survives a stand-in restart)."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime")
        )
    except (OSError, ValueError, StopIteration, IndexError):
        return None
    started = boot + ticks / os.sysconf("SC_CLK_TCK")
    return dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def reap_children() -> None:
    """Brokers we started and someone else stopped are our zombies until reaped."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
