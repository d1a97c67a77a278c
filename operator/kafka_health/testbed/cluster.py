"""A real Apache Kafka KRaft cluster on 127.0.0.1: N combined broker+controller nodes.

With `controllers` > 0 the KRaft quorum runs on dedicated controller-only nodes (ids
`CONTROLLER_ID_BASE + i`, controller ports base + 100 + i) beside broker-only nodes 0..N-1;
combined nodes stay the default.

`security` secures the client listener (TLS, SASL/SCRAM, mTLS; see `testbed.security`); the
inter-broker (`INTERNAL`, base + 200) and controller (base + 100) listeners stay PLAINTEXT on
loopback.

Node ids are 0..N-1 so they match StatefulSet ordinals (`kafka-0` is broker 0). Each node
runs as its own JVM in its own session, so the cluster outlives the command that started it;
pids and ports are recorded in `<state dir>/testbed.json`. Everything the cluster writes
(data, logs, configs) lives under the state dir.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kafka_health._kits.paths import state_root
from kafka_health.testbed import broker_config, distribution, node_process, security, tools

# The node-id and port constants, where the testbed's users have always found them.
from kafka_health.testbed.broker_config import CONTROLLER_ID_BASE as CONTROLLER_ID_BASE
from kafka_health.testbed.broker_config import INTERNAL_PORT_OFFSET as INTERNAL_PORT_OFFSET
from kafka_health.testbed.exit_reason import last_error_lines
from kafka_health.testbed.state import BrokerState, TestbedError, TestbedState

DEFAULT_BASE_PORT = 19092  # clear of a user's Kafka on 9092
DEFAULT_HEAP = "384m"


def default_state_dir() -> Path:
    env = os.environ.get("KAFKA_HEALTH_TESTBED_DIR")
    return Path(env) if env else state_root() / "testbed"


class Testbed:
    """Start, stop and fault-inject the local cluster recorded in one state dir."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = (state_dir or default_state_dir()).resolve()
        self.state_file = self.state_dir / "testbed.json"
        # Set only by `archive_build`: this testbed's JVMs record class archives there.
        self.record_classes_to: Path | None = None

    # ---------------------------------------------------------------- state
    def load(self) -> TestbedState | None:
        if not self.state_file.exists():
            return None
        raw = json.loads(self.state_file.read_text())
        raw["brokers"] = [BrokerState(**b) for b in raw["brokers"]]
        raw["controllers"] = [BrokerState(**b) for b in raw.get("controllers", [])]
        return TestbedState(**raw)

    def _save(self, state: TestbedState) -> None:
        """Write the whole state (a new cluster); a pid alone goes through `node_process.record_pid`."""
        with node_process.state_lock(self.state_file):
            node_process.write_state(self.state_file, asdict(state))

    def require(self) -> TestbedState:
        state = self.load()
        if state is None:
            raise TestbedError(f"no testbed in {self.state_dir}; run `kafka-health testbed up` first")
        return state

    def broker(self, state: TestbedState, broker_id: int) -> BrokerState:
        """A node by id: a broker (or combined node), or a dedicated controller."""
        for b in state.nodes:
            if b.id == broker_id:
                return b
        ids = ", ".join(str(b.id) for b in state.nodes)
        kinds = "brokers and controllers" if state.controllers else "brokers"
        raise TestbedError(f"no broker {broker_id} in the testbed ({kinds}: {ids})")

    # ---------------------------------------------------------------- layout
    def config_path(self, broker_id: int) -> Path:
        return broker_config.config_path(self.state_dir, broker_id)

    def data_dir(self, broker_id: int) -> Path:
        return broker_config.data_dir(self.state_dir, broker_id)

    def log_path(self, broker_id: int) -> Path:
        return self.state_dir / "logs" / f"broker-{broker_id}.log"

    def material(self, state: TestbedState | None = None) -> security.Material:
        """The testbed's security material (CA, certificates, passwords, client properties)."""
        state = state or self.require()
        return security.Material(self.state_dir, state.security, state.certificate_days)

    def client_properties(self, user: str = security.ADMIN) -> Path | None:
        """The Kafka-style client settings of `user` (None for a PLAINTEXT testbed)."""
        state = self.require()
        if state.security == "plaintext":
            return None
        return self.material(state).client_properties(user)

    def librdkafka_config(self, user: str = security.ADMIN) -> dict[str, str]:
        """Client settings of `user` in librdkafka's names (bootstrap servers included)."""
        state = self.require()
        conf = {"bootstrap.servers": state.bootstrap_servers}
        mode = state.security
        if mode == "plaintext":
            return conf
        material = self.material(state)
        conf["security.protocol"] = security.PROTOCOL[mode]
        if security.uses_tls(mode):
            conf["ssl.ca.location"] = str(material.ca_file)
        if mode == "mtls":
            conf["ssl.certificate.location"] = str(material.user_cert(user))
            conf["ssl.key.location"] = str(material.user_key(user))
        if security.uses_sasl(mode):
            conf["sasl.mechanism"] = security.MECHANISM
            conf["sasl.username"] = user
            conf["sasl.password"] = material.password(user)
        return conf

    # ---------------------------------------------------------------- java
    def _java(
        self,
        main: str,
        args: list[str],
        *,
        heap: str,
        gc: str = "-XX:+UseG1GC",
        extra_jvm: list[str] | None = None,
    ) -> list[str]:
        return broker_config.java_command(
            self.require_version(),
            self.state_dir,
            main,
            args,
            heap=heap,
            gc=gc,
            extra_jvm=extra_jvm,
            record_classes_to=self.record_classes_to,
        )

    def require_version(self) -> str:
        state = self.load()
        return state.kafka_version if state else distribution.KAFKA_VERSION

    # ---------------------------------------------------------------- lifecycle
    def up(
        self,
        brokers: int | None = None,
        base_port: int = DEFAULT_BASE_PORT,
        *,
        auto_leader_rebalance: bool = False,
        security_mode: str | None = None,
        kafka_version: str | None = None,
        controllers: int | None = None,
        certificate_days: float | None = None,
        timeout: float = 120.0,
        racks: int | None = None,
        node_config: dict[str, str] | None = None,
    ) -> TestbedState:
        """Start every node that is not running (creating the cluster on first use) and wait until all serve.

        `controllers` > 0: that many dedicated controller-only nodes (ids CONTROLLER_ID_BASE + i)
        and `brokers` broker-only nodes; 0 or None: combined broker+controller nodes. `racks` > 0:
        broker i has broker.rack rack-<i mod racks> (recorded per broker, kept across restarts).
        `node_config`: extra properties for every node, kept (applied as each node starts).
        `certificate_days`: validity of the broker certificates a TLS testbed issues when it is
        created (default 825 days; short ones to see the certificate checks)."""
        state = self.load()
        version = distribution.resolve(kafka_version) if kafka_version else None
        if state is not None and version is not None and state.kafka_version != version:
            raise TestbedError(
                f"the testbed in {self.state_dir} runs Kafka {state.kafka_version}; "
                "run `kafka-health testbed down --purge` to recreate it with another version"
            )
        distribution.ensure_kafka(state.kafka_version if state else version or distribution.KAFKA_VERSION)
        if security_mode is not None and security_mode not in security.MODES:
            raise TestbedError(f"--security must be one of {', '.join(security.MODES)}")
        if state is None:
            state = self._create(
                3 if brokers is None else brokers,
                controllers,
                base_port,
                kafka_version=version or distribution.KAFKA_VERSION,
                auto_leader_rebalance=auto_leader_rebalance,
                security_mode=security_mode or "plaintext",
                racks=racks or 0,
            )
            if certificate_days is not None:
                if certificate_days <= 0:
                    raise TestbedError("--certificate-days must be above 0")
                state.certificate_days = certificate_days
                self._save(state)
        else:
            broker_config.check_same_shape(state, self.state_dir, brokers, controllers, security_mode, racks)
        if extra := node_config:
            state.extra = {**state.extra, **extra}
            self._save(state)
        broker_config.write_configs(state, self.state_dir, self.material(state))
        # Dedicated controllers first: a broker that cannot register with the quorum within
        # initial.broker.registration.timeout.ms (60 s) exits, and formatting and starting three
        # controller JVMs after three brokers took longer than that on a busy 2-core machine.
        for b in [*state.controllers, *state.brokers]:
            self._ensure_running(b.id)
        state = self.require()
        self.wait_serving(state, [b.id for b in state.nodes], timeout=timeout)
        return state

    def _create(
        self,
        brokers: int,
        controllers: int | None,
        base_port: int,
        *,
        kafka_version: str,
        auto_leader_rebalance: bool,
        security_mode: str,
        racks: int = 0,
    ) -> TestbedState:
        """A new cluster's state, recorded once every port it needs is free."""
        if brokers < 1:
            raise TestbedError("--brokers must be at least 1")
        if controllers is not None and controllers < 0:
            raise TestbedError("--controllers must be 0 (combined nodes) or more")
        nodes, voters = broker_config.new_layout(
            brokers, controllers or 0, base_port, security_mode != "plaintext", racks
        )
        state = TestbedState(
            brokers=nodes,
            controllers=voters,
            cluster_id=_kafka_uuid(),
            kafka_version=kafka_version,
            auto_leader_rebalance=auto_leader_rebalance,
            security=security_mode,
            racks=racks,
        )
        for b in state.nodes:
            for port in (p for p in (b.port, b.controller_port, b.internal_port) if p):
                if _port_open(port):
                    raise TestbedError(
                        f"port {port} on 127.0.0.1 is already in use; pick another --base-port"
                    )
        self._save(state)
        return state

    def _format(self, state: TestbedState, b: BrokerState) -> None:
        if (self.data_dir(b.id) / "meta.properties").exists():
            return
        cmd = self._tool_java(
            tools.TOOLS["kafka-storage"],
            [
                "format",
                f"--cluster-id={state.cluster_id}",
                "-c",
                str(self.config_path(b.id)),
                "--ignore-formatted",
                *self.material(state).add_scram_args(),
            ],
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise TestbedError(f"formatting storage of broker {b.id} failed:\n{proc.stdout}{proc.stderr}")

    def _start_process(self, state: TestbedState, b: BrokerState) -> None:
        self._format(state, b)
        log = self.log_path(b.id)
        cmd = self._java(
            "kafka.Kafka",
            [str(self.config_path(b.id))],
            heap=DEFAULT_HEAP,
            # A test cluster's JVM costs mostly start-up (docs/testbed.md "The brokers' JVM").
            gc="-XX:+UseSerialGC",
            extra_jvm=[
                "-XX:TieredStopAtLevel=1",
                f"-Dkafka.logs.file={log}",
                f"-Dkafka.logs.dir={log.parent}",
            ],
        )
        with open(self.state_dir / "logs" / f"broker-{b.id}.out", "ab") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        b.pid = proc.pid
        node_process.record_pid(self.state_file, b.id, proc.pid)

    def _ensure_running(self, broker_id: int) -> None:
        """Start the node unless its JVM runs, as one step among every actor (node_process rule 1)."""
        with node_process.node_lock(self.state_dir, broker_id):
            state = self.require()
            b = self.broker(state, broker_id)
            recorded = b.pid
            if not self._alive(b):
                broker_config.write_configs(state, self.state_dir, self.material(state))
                self._start_process(state, b)
            elif b.pid != recorded:  # running, but its pid was lost: record it again
                node_process.record_pid(self.state_file, b.id, b.pid)

    def start(self, broker_id: int, *, wait: bool = True, timeout: float = 90.0) -> None:
        self._ensure_running(broker_id)
        if wait:
            self.wait_serving(self.require(), [broker_id], timeout=timeout)

    def stop(self, broker_id: int, *, timeout: float = 60.0) -> None:
        """SIGTERM: a controlled shutdown (the broker leaves ISRs and hands off leadership)."""
        with node_process.node_lock(self.state_dir, broker_id):
            b = self.broker(self.require(), broker_id)
            if self._alive(b):
                assert b.pid is not None
                self._signal(b, signal.SIGCONT)  # a paused JVM cannot shut down
                self._signal(b, signal.SIGTERM)
                if not node_process.wait_exit(b.pid, timeout):
                    self._signal(b, signal.SIGKILL)
                    node_process.wait_exit(b.pid, 10)
            node_process.record_pid(self.state_file, broker_id, None)

    def kill(self, broker_id: int) -> None:
        """SIGKILL: a crash; the controller fences the broker after broker.session.timeout.ms."""
        with node_process.node_lock(self.state_dir, broker_id):
            b = self.broker(self.require(), broker_id)
            if self._alive(b):
                assert b.pid is not None
                self._signal(b, signal.SIGKILL)
                node_process.wait_exit(b.pid, 10)
            node_process.record_pid(self.state_file, broker_id, None)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the process hangs (a GC pause or a frozen VM); it stays alive but answers nothing."""
        b = self.broker(self.require(), broker_id)
        if not self._alive(b):
            raise TestbedError(f"broker {broker_id} is not running")
        self._signal(b, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        b = self.broker(self.require(), broker_id)
        if not self._alive(b):
            raise TestbedError(f"broker {broker_id} is not running")
        self._signal(b, signal.SIGCONT)

    def down(self, *, purge: bool = False) -> None:
        """Stop every node this testbed started; `purge` also deletes data and logs.

        Without `purge` the nodes shut down cleanly (SIGTERM) so the data can be reused. With it
        they are killed at once: the data is about to be deleted, and a clean shutdown of every
        KRaft voter at the same time waits out the lost quorum (about 30 s)."""
        state = self.load()
        if state is not None:
            stop = signal.SIGKILL if purge else signal.SIGTERM
            for b in state.nodes:
                if self._alive(b):
                    assert b.pid is not None
                    self._signal(b, signal.SIGCONT)
                    self._signal(b, stop)
            for b in state.nodes:
                if b.pid is not None and not node_process.wait_exit(b.pid, 30) and self._alive(b):
                    self._signal(b, signal.SIGKILL)
                    node_process.wait_exit(b.pid, 10)
                node_process.record_pid(self.state_file, b.id, None)
        if purge and self.state_dir.exists():
            import shutil

            shutil.rmtree(self.state_dir)

    # ---------------------------------------------------------------- inspection
    def _alive(self, b: BrokerState) -> bool:
        """This node's JVM runs; `b.pid` is set to it (the recorded pid, or the one /proc finds)."""
        pid = node_process.running_pid(b.pid, self.config_path(b.id))
        if pid is not None:
            b.pid = pid
        return pid is not None

    def _signal(self, b: BrokerState, sig: signal.Signals) -> None:
        assert b.pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(b.pid, sig)

    def process_state(self, b: BrokerState) -> str:
        """up, paused or down — from the kernel's view of the process."""
        if not self._alive(b):
            return "down"
        stat = Path(f"/proc/{b.pid}/stat").read_text()
        return "paused" if stat.split(") ", 1)[1].startswith("T") else "up"

    def status(self) -> list[dict[str, object]]:
        """One row per node: brokers (or combined nodes), then dedicated controllers (port None;
        `serving`: the controller port accepts connections)."""
        state = self.require()
        return [
            {
                "id": b.id,
                "pid": b.pid if self._alive(b) else None,
                "state": self.process_state(b),
                "port": b.port or None,
                "controller_port": b.controller_port or None,
                "serving": _port_open(b.port or b.controller_port),
                "role": b.role,
            }
            for b in state.nodes
        ]

    def wait_serving(self, state: TestbedState, broker_ids: list[int], *, timeout: float) -> None:
        """Wait until each broker answers metadata on its own port and is registered in the cluster."""
        from confluent_kafka.admin import AdminClient

        def registered() -> bool:
            for bid in broker_ids:
                b = self.broker(state, bid)
                if not self._alive(b):
                    raise TestbedError(
                        f"broker {bid} exited during start-up; see {self.log_path(bid)} "
                        f"and {self.state_dir / 'logs' / f'broker-{bid}.out'}; its last lines:\n"
                        + last_error_lines(self.state_dir / "logs", bid)
                    )
                if b.role == "controller":  # no client listener: its quorum port answers
                    if not _port_open(b.controller_port):
                        return False
                    continue
                conf: dict[str, Any] = {
                    **self.librdkafka_config(),
                    "bootstrap.servers": f"127.0.0.1:{b.port}",
                    "socket.timeout.ms": 3000,
                    "logger": _QUIET,
                }
                admin = AdminClient(conf)
                md = admin.list_topics(timeout=3)
                if bid not in md.brokers or md.controller_id is None:
                    return False
            return True

        def check() -> bool:
            try:
                return registered()
            except TestbedError:
                raise
            except Exception:
                return False

        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise TestbedError(
                    f"brokers {broker_ids} did not serve within {timeout:.0f}s; see logs in {self.state_dir / 'logs'}"
                )
            time.sleep(0.5)

    # ---------------------------------------------------------------- tools
    def tool_command(self, name: str, args: list[str]) -> list[str]:
        """The java command line of Kafka's tool `name` against the testbed, as its admin."""
        state = self.require()
        full_args = tools.tool_args(name, args, state.bootstrap_servers, self.client_properties())
        return self._tool_java(tools.main_class(name, state.kafka_version), full_args)

    def _tool_java(self, main: str, args: list[str]) -> list[str]:
        """A Kafka tool's JVM: over in seconds, so the serial collector and the JIT's first tier."""
        log = f"-Dkafka.logs.file={self.state_dir / 'logs' / 'tools.log'}"
        return self._java(
            main, args, heap="256m", gc="-XX:+UseSerialGC", extra_jvm=["-XX:TieredStopAtLevel=1", log]
        )

    def tool(self, name: str, args: list[str], *, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run a Kafka CLI tool against the testbed and capture its output."""
        return subprocess.run(
            self.tool_command(name, args), capture_output=True, text=True, timeout=timeout, check=False
        )


_QUIET = logging.getLogger("kafka_health.testbed.librdkafka")
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


def _kafka_uuid() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (as `kafka-storage random-uuid`)."""
    import base64

    # Like Kafka's Uuid.randomUuid(): never one that starts with "-" (it reads as a CLI option).
    while True:
        value = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not value.startswith("-"):
            return value


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0
