"""The suite side by side (pytest-xdist): each worker its own ports and state, the longest files first.

`hack/test.sh` runs `pytest -n N --dist loadfile --no-loadscope-reorder`: a whole file goes to one
worker, so a module's cluster (tests/secured, tests/compat, the operator of a tests/k8s module) is
started once, as in a serial run. What else the workers could share is kept apart here:

- Ports. Every fixed port of the suite is an offset from KAFKA_HEALTH_TEST_PORT (the session
  cluster at +0, tests/secured/helpers.py's clusters up to +2975, tests/compat at +2600..+2802,
  tests/k8s/test_controller_roll.py at +3000..+3102). Worker gwN runs with its own
  KAFKA_HEALTH_TEST_PORT, N * WORKER_PORT_STRIDE away from the base, set in os.environ before any
  test, so the fixtures, the `kafka-health` subprocesses and the operator processes tests start
  all see it. The stride is larger than the widest offset: no two workers' clusters share a port.
  Servers a test starts on the side (control planes, operators' metrics and health endpoints, a
  Spark Connect server) and the ports tests hold closed take ports from the block's rest
  (SERVICE_PORTS): nothing the suite starts listens in the kernel's ephemeral range, where the
  drivers' own one-time sockets (PySpark's result server) are.
  A base below the kernel's ephemeral port range (the default 29092) keeps every worker below
  it: the workers step down (29092, 25892, 22692, …), since in that range an outgoing connection
  can take a stopped broker's port and the broker cannot start again (the testbed CLI warns of
  it). Any other base steps up (50092, 53292, …).
- State. KAFKA_HEALTH_TEST_TESTBED_DIR, when set, becomes <dir>/gwN (each worker its own
  cluster, control plane and pod stand-in there). Temporary dirs are per worker already
  (pytest's basetemp gets a popen-gwN child).
- Order. Files run longest first (FILE_SECONDS, measured): the longest file must not be the
  last one a worker picks up. Files not in the table keep their collection order, after them.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

DEFAULT_PORT = 29092
# The widest offset any test adds to KAFKA_HEALTH_TEST_PORT is +3102 (test_controller_roll.py:
# brokers +3000..+3002, controllers +3100..+3102); the next worker starts clear of it.
WORKER_PORT_STRIDE = 3200
WIDEST_PORT_OFFSET = 3102
MIN_PORT = 1024  # stepping down stops above the privileged ports (then the workers step up)
# Servers a test starts beside its clusters (an operator's metrics and health endpoints, a Spark
# Connect server) take their ports from the rest of the worker's block, not from the kernel: a
# port found free in the ephemeral range can be handed to another worker's process before the
# server binds it, and a test polling it then talks to a stranger (the likely cause of a failed
# collect() whose Spark socket saw a foreign handshake in a 3-worker run; not proven).
SERVICE_PORTS = range(3110, WORKER_PORT_STRIDE)
_next_service = 0

# Seconds each file took in a measured run (build/test-reports/file-seconds.json of `make test`;
# copy it here when files grow or move). Only the order of the files depends on it.
FILE_SECONDS_PATH = Path(__file__).with_name("file_seconds.json")
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def worker_index(environ: MutableMapping[str, str]) -> int | None:
    """gwN -> N under pytest-xdist; None in a serial run or in xdist's controller process."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not worker[2:].isdigit():
        return None
    return int(worker[2:])


def service_port(environ: MutableMapping[str, str] = os.environ) -> int:
    """A port no process binds now, from this worker's SERVICE_PORTS (in turn, so a server that
    just stopped is not given its port again at once)."""
    global _next_service
    base = int(environ.get("KAFKA_HEALTH_TEST_PORT", str(DEFAULT_PORT)))
    for _ in SERVICE_PORTS:
        port = base + SERVICE_PORTS[_next_service % len(SERVICE_PORTS)]
        _next_service += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {base}+{SERVICE_PORTS.start}..{SERVICE_PORTS.stop - 1}")


def control_plane_ports(environ: MutableMapping[str, str] = os.environ) -> list[int]:
    """Three service ports for a control plane the suite starts in its own process (etcd's
    client and peer ports, the API server's; `ControlPlane(..., ports=...)`)."""
    return [service_port(environ) for _ in range(3)]


def ephemeral_low(range_file: Path = EPHEMERAL_RANGE_FILE) -> int | None:
    """The first port of the kernel's ephemeral range (Linux: 32768); None when unreadable."""
    try:
        return int(range_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def worker_port(base: int, index: int, ephemeral_low: int | None) -> int:
    """Worker `index`'s KAFKA_HEALTH_TEST_PORT: below `base` when the base's ports all lie below the
    ephemeral range (so the worker's do too), else above it."""
    down = base - index * WORKER_PORT_STRIDE
    if ephemeral_low is not None and base + WIDEST_PORT_OFFSET < ephemeral_low and down >= MIN_PORT:
        return down
    return base + index * WORKER_PORT_STRIDE


def isolate_worker(environ: MutableMapping[str, str], range_file: Path = EPHEMERAL_RANGE_FILE) -> int | None:
    """Give this xdist worker its own KAFKA_HEALTH_TEST_PORT and testbed dir (in `environ`, so
    every child process inherits them); returns the worker's index, None when not a worker."""
    index = worker_index(environ)
    if index is None:
        return None
    base = int(environ.get("KAFKA_HEALTH_TEST_PORT", str(DEFAULT_PORT)))
    environ["KAFKA_HEALTH_TEST_PORT"] = str(worker_port(base, index, ephemeral_low(range_file)))
    state_dir = environ.get("KAFKA_HEALTH_TEST_TESTBED_DIR")
    if state_dir:
        environ["KAFKA_HEALTH_TEST_TESTBED_DIR"] = str(Path(state_dir) / f"gw{index}")
    return index


def load_file_seconds(path: Path = FILE_SECONDS_PATH) -> dict[str, float]:
    """{"tests/k8s/test_x.py": seconds}; empty when the table is missing or unreadable (the order
    is then the collection's)."""
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {str(k): float(v) for k, v in table.items() if isinstance(v, int | float)}


class _Item(Protocol):
    @property
    def nodeid(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_Item)


def file_of(nodeid: str) -> str:
    """The file part of a node id, as the table and xdist's loadfile scope name it."""
    return nodeid.split("::", 1)[0]


def longest_files_first(items: Sequence[ItemT], seconds: dict[str, float]) -> list[ItemT]:
    """The items with whole files ordered by their measured seconds, longest first; a file's own
    tests keep their order, and files the table lacks keep theirs, after the measured ones."""
    rank = {name: i for i, name in enumerate(dict.fromkeys(file_of(it.nodeid) for it in items))}

    def key(item: ItemT) -> tuple[float, int]:
        name = file_of(item.nodeid)
        return (-seconds.get(name, -1.0), rank[name])

    return sorted(items, key=key)
