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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka_health._kits.paths import state_root
from kafka_health.testbed import distribution, security

DEFAULT_BASE_PORT = 19092  # clear of a user's Kafka on 9092
CONTROLLER_PORT_OFFSET = 100
INTERNAL_PORT_OFFSET = 200  # the inter-broker listener of a secured testbed
CONTROLLER_ID_BASE = 100  # node ids of dedicated controllers (brokers keep 0..N-1 = pod ordinals)
DEFAULT_HEAP = "384m"

# Kafka command-line tools by their script name → main class (the scripts are not in the jars).
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
}
# Kafka 3.x keeps these tools in the Scala core (moved to kafka-tools in 4.0).
TOOLS_3 = {
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-acls": "kafka.admin.AclCommand",
}
# The option each tool reads client settings from (Kafka 4.1's names); absent: it takes none.
COMMAND_CONFIG_OPTION = {
    "kafka-topics": "--command-config",
    "kafka-consumer-groups": "--command-config",
    "kafka-leader-election": "--admin.config",
    "kafka-metadata-quorum": "--command-config",
    "kafka-configs": "--command-config",
    "kafka-log-dirs": "--command-config",
    "kafka-reassign-partitions": "--command-config",
    "kafka-get-offsets": "--command-config",
    "kafka-console-producer": "--producer.config",
    "kafka-console-consumer": "--consumer.config",
    "kafka-acls": "--command-config",
}


class TestbedError(RuntimeError):
    """The testbed could not do what was asked; the message names the broker and the log to read."""

    __test__ = False


@dataclass
class BrokerState:
    id: int
    port: int
    controller_port: int
    pid: int | None = None
    internal_port: int | None = None  # the PLAINTEXT inter-broker listener of a secured testbed
    role: str = "broker,controller"  # process.roles: combined, "broker" or "controller"


@dataclass
class TestbedState:
    __test__ = False
    brokers: list[BrokerState]
    cluster_id: str
    kafka_version: str
    auto_leader_rebalance: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    security: str = "plaintext"  # one of security.MODES: how the client listener is secured
    controllers: list[BrokerState] = field(default_factory=list)  # dedicated controller-only nodes

    @property
    def nodes(self) -> list[BrokerState]:
        """Every process: brokers (or combined nodes), then dedicated controllers."""
        return [*self.brokers, *self.controllers]

    @property
    def voters(self) -> list[BrokerState]:
        """The KRaft voters: the dedicated controllers, else the combined nodes."""
        return self.controllers or self.brokers

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)


def default_state_dir() -> Path:
    env = os.environ.get("KAFKA_HEALTH_TESTBED_DIR")
    return Path(env) if env else state_root() / "testbed"


class Testbed:
    """Start, stop and fault-inject the local cluster recorded in one state dir."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = (state_dir or default_state_dir()).resolve()
        self.state_file = self.state_dir / "testbed.json"

    # ---------------------------------------------------------------- state
    def load(self) -> TestbedState | None:
        if not self.state_file.exists():
            return None
        raw = json.loads(self.state_file.read_text())
        raw["brokers"] = [BrokerState(**b) for b in raw["brokers"]]
        raw["controllers"] = [BrokerState(**b) for b in raw.get("controllers", [])]
        return TestbedState(**raw)

    def _save(self, state: TestbedState) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        tmp.replace(self.state_file)

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
        return self.state_dir / "config" / f"broker-{broker_id}.properties"

    def data_dir(self, broker_id: int) -> Path:
        return self.state_dir / "data" / f"broker-{broker_id}"

    def log_path(self, broker_id: int) -> Path:
        return self.state_dir / "logs" / f"broker-{broker_id}.log"

    def material(self, state: TestbedState | None = None) -> security.Material:
        """The testbed's security material (CA, certificates, passwords, client properties)."""
        state = state or self.require()
        return security.Material(self.state_dir, state.security)

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

    def _listener_props(self, state: TestbedState, b: BrokerState) -> dict[str, Any]:
        if b.role == "controller":
            return {
                "listeners": f"CONTROLLER://127.0.0.1:{b.controller_port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                **self.material(state).controller_props(),
            }
        controller_listener = [f"CONTROLLER://127.0.0.1:{b.controller_port}"] if b.role != "broker" else []
        if state.security == "plaintext" or b.internal_port is None:
            return {
                "listeners": ",".join([f"PLAINTEXT://127.0.0.1:{b.port}", *controller_listener]),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{b.port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            }
            return {
                "listeners": f"PLAINTEXT://127.0.0.1:{b.port},CONTROLLER://127.0.0.1:{b.controller_port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{b.port}",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            }
        protocol = security.PROTOCOL[state.security]
        return {
            "listeners": ",".join(
                [
                    f"CLIENT://127.0.0.1:{b.port}",
                    f"INTERNAL://127.0.0.1:{b.internal_port}",
                    *controller_listener,
                ]
            ),
            "advertised.listeners": f"CLIENT://127.0.0.1:{b.port},INTERNAL://127.0.0.1:{b.internal_port}",
            "inter.broker.listener.name": "INTERNAL",
            "listener.security.protocol.map": f"CLIENT:{protocol},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            **self.material(state).broker_props(b.id, "CLIENT"),
        }

    def _write_configs(self, state: TestbedState) -> None:
        n = len(state.brokers)
        self.material(state).ensure([b.id for b in state.brokers])
        voters = ",".join(f"{b.id}@127.0.0.1:{b.controller_port}" for b in state.voters)
        (self.state_dir / "config").mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        rf, min_isr = min(3, n), min(2, n)
        for b in state.nodes:
            props = {
                "process.roles": b.role,
                "node.id": b.id,
                "controller.quorum.voters": voters,
                **self._listener_props(state, b),
                "controller.listener.names": "CONTROLLER",
                "log.dirs": self.data_dir(b.id),
                "num.partitions": 3,
                "default.replication.factor": rf,
                "min.insync.replicas": min_isr,
                "offsets.topic.replication.factor": rf,
                "offsets.topic.num.partitions": 6,
                "transaction.state.log.replication.factor": rf,
                "transaction.state.log.min.isr": min_isr,
                "group.initial.rebalance.delay.ms": 0,
                # The operator is what heals leader imbalance here; the bench turns Kafka's own on.
                "auto.leader.rebalance.enable": str(state.auto_leader_rebalance).lower(),
                "num.network.threads": 2,
                "num.io.threads": 2,
                "num.recovery.threads.per.data.dir": 1,
                "background.threads": 2,
                "log.cleaner.threads": 1,
                "log.segment.bytes": 16 * 1024 * 1024,
                "share.coordinator.state.topic.replication.factor": rf,
                "share.coordinator.state.topic.min.isr": min_isr,
                **state.extra,
            }
            text = "".join(f"{k}={v}\n" for k, v in props.items())
            self.config_path(b.id).write_text(text)
        log4j = self.state_dir / "config" / "log4j2.properties"
        log4j.write_text(
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = FILE\n"
            "appender.file.fileName = ${sys:kafka.logs.file}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = FILE\n"
            "logger.kafka.name = org.apache.kafka\nlogger.kafka.level = INFO\n"
            "logger.state.name = state.change.logger\nlogger.state.level = WARN\n"
        )
        # Kafka 3.x logs through reload4j (log4j 1): the same layout in its syntax.
        (self.state_dir / "config" / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            "log4j.appender.file.File=${kafka.logs.file}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.state.change.logger=WARN\n"
        )

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
        version = self.require_version()
        libs = distribution.ensure_kafka(version)
        config = self.state_dir / "config"
        logging_config = (
            f"-Dlog4j2.configurationFile={config / 'log4j2.properties'}"
            if distribution.uses_log4j2(version)
            else f"-Dlog4j.configuration=file:{config / 'log4j.properties'}"
        )
        return [
            "java",
            f"-Xms{heap}",
            f"-Xmx{heap}",
            gc,
            "-Djava.awt.headless=true",
            logging_config,
            *(extra_jvm or []),
            "-cp",
            f"{libs}/*",
            main,
            *args,
        ]

    def require_version(self) -> str:
        state = self.load()
        return state.kafka_version if state else distribution.KAFKA_VERSION

    # ---------------------------------------------------------------- lifecycle
    def up(  # noqa: C901, PLR0912
        self,
        brokers: int | None = None,
        base_port: int = DEFAULT_BASE_PORT,
        *,
        auto_leader_rebalance: bool = False,
        security_mode: str | None = None,
        kafka_version: str | None = None,
        controllers: int | None = None,
        timeout: float = 120.0,
    ) -> TestbedState:
        """Start every node that is not running (creating the cluster on first use) and wait until all serve.

        `controllers` > 0: that many dedicated controller-only nodes (ids CONTROLLER_ID_BASE + i)
        and `brokers` broker-only nodes; 0 or None: combined broker+controller nodes."""
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
            brokers = 3 if brokers is None else brokers
            if brokers < 1:
                raise TestbedError("--brokers must be at least 1")
            if controllers is not None and controllers < 0:
                raise TestbedError("--controllers must be 0 (combined nodes) or more")
            mode = security_mode or "plaintext"
            secured = mode != "plaintext"
            dedicated = bool(controllers)
            state = TestbedState(
                brokers=[
                    BrokerState(
                        id=i,
                        port=base_port + i,
                        controller_port=0 if dedicated else base_port + CONTROLLER_PORT_OFFSET + i,
                        internal_port=base_port + INTERNAL_PORT_OFFSET + i if secured else None,
                        role="broker" if dedicated else "broker,controller",
                    )
                    for i in range(brokers)
                ],
                controllers=[
                    BrokerState(
                        id=CONTROLLER_ID_BASE + i,
                        port=0,
                        controller_port=base_port + CONTROLLER_PORT_OFFSET + i,
                        role="controller",
                    )
                    for i in range(controllers or 0)
                ],
                cluster_id=_kafka_uuid(),
                kafka_version=version or distribution.KAFKA_VERSION,
                auto_leader_rebalance=auto_leader_rebalance,
                security=mode,
            )
            for b in state.nodes:
                ports = [p for p in (b.port, b.controller_port, b.internal_port) if p]
                for port in ports:
                    if _port_open(port):
                        raise TestbedError(
                            f"port {port} on 127.0.0.1 is already in use; pick another --base-port"
                        )
            self._save(state)
        elif brokers is not None and len(state.brokers) != brokers:
            raise TestbedError(
                f"the testbed in {self.state_dir} has {len(state.brokers)} brokers; "
                "run `kafka-health testbed down --purge` to recreate it with another size"
            )
        elif controllers is not None and len(state.controllers) != controllers:
            raise TestbedError(
                f"the testbed in {self.state_dir} has {len(state.controllers)} dedicated controllers; "
                "run `kafka-health testbed down --purge` to recreate it with another layout"
            )
        elif security_mode is not None and state.security != security_mode:
            raise TestbedError(
                f"the testbed in {self.state_dir} was created with --security {state.security}; "
                "run `kafka-health testbed down --purge` to recreate it with another"
            )
        self._write_configs(state)
        for b in state.nodes:
            if not self._alive(b):
                self._start_process(state, b)
        self.wait_serving(state, [b.id for b in state.nodes], timeout=timeout)
        return state

    def _format(self, state: TestbedState, b: BrokerState) -> None:
        if (self.data_dir(b.id) / "meta.properties").exists():
            return
        cmd = self._java(
            TOOLS["kafka-storage"],
            [
                "format",
                f"--cluster-id={state.cluster_id}",
                "-c",
                str(self.config_path(b.id)),
                "--ignore-formatted",
                *self.material(state).add_scram_args(),
            ],
            heap="256m",
            extra_jvm=[f"-Dkafka.logs.file={self.state_dir / 'logs' / 'tools.log'}"],
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
            extra_jvm=[f"-Dkafka.logs.file={log}", f"-Dkafka.logs.dir={log.parent}"],
        )
        with open(self.state_dir / "logs" / f"broker-{b.id}.out", "ab") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        b.pid = proc.pid
        self._save(state)

    def start(self, broker_id: int, *, wait: bool = True, timeout: float = 90.0) -> None:
        state = self.require()
        b = self.broker(state, broker_id)
        if not self._alive(b):
            self._write_configs(state)
            self._start_process(state, b)
        if wait:
            self.wait_serving(state, [broker_id], timeout=timeout)

    def stop(self, broker_id: int, *, timeout: float = 60.0) -> None:
        """SIGTERM: a controlled shutdown (the broker leaves ISRs and hands off leadership)."""
        state = self.require()
        b = self.broker(state, broker_id)
        if self._alive(b):
            assert b.pid is not None
            self._signal(b, signal.SIGCONT)  # a paused JVM cannot shut down
            self._signal(b, signal.SIGTERM)
            if not _wait_exit(b.pid, timeout):
                self._signal(b, signal.SIGKILL)
                _wait_exit(b.pid, 10)
        b.pid = None
        self._save(state)

    def kill(self, broker_id: int) -> None:
        """SIGKILL: a crash; the controller fences the broker after broker.session.timeout.ms."""
        state = self.require()
        b = self.broker(state, broker_id)
        if self._alive(b):
            assert b.pid is not None
            self._signal(b, signal.SIGKILL)
            _wait_exit(b.pid, 10)
        b.pid = None
        self._save(state)

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
                if b.pid is not None and not _wait_exit(b.pid, 30) and self._alive(b):
                    self._signal(b, signal.SIGKILL)
                    _wait_exit(b.pid, 10)
                b.pid = None
            self._save(state)
        if purge and self.state_dir.exists():
            import shutil

            shutil.rmtree(self.state_dir)

    # ---------------------------------------------------------------- inspection
    def _alive(self, b: BrokerState) -> bool:
        """The recorded pid is running and is really this broker's JVM (pids get reused)."""
        if b.pid is None:
            return False
        try:
            cmdline = Path(f"/proc/{b.pid}/cmdline").read_bytes()
            for _ in range(10):  # just after exec the kernel may show an empty cmdline for a moment
                if cmdline:
                    break
                time.sleep(0.05)
                cmdline = Path(f"/proc/{b.pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{b.pid}/stat").read_text()
        except OSError:
            return False
        if stat.split(") ", 1)[1].startswith("Z"):
            return False
        return str(self.config_path(b.id)).encode() in cmdline

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
                        f"and {self.state_dir / 'logs' / f'broker-{bid}.out'}"
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
        if name not in TOOLS:
            raise TestbedError(f"unknown tool {name!r}; one of: {', '.join(sorted(TOOLS))}")
        state = self.require()
        args = list(args)
        takes_bootstrap = name not in ("kafka-storage",)
        if takes_bootstrap and not any(a in args for a in ("--bootstrap-server", "--bootstrap-controller")):
            args = ["--bootstrap-server", state.bootstrap_servers, *args]
        option = COMMAND_CONFIG_OPTION.get(name)
        properties = self.client_properties()
        given = {"--command-config", "--admin.config", "--producer.config", "--consumer.config"}
        # Not for --bootstrap-controller: the controller listener is PLAINTEXT.
        controller = "--bootstrap-controller" in args
        if option and properties is not None and not controller and not given.intersection(args):
            # Before any subcommand: kafka-metadata-quorum takes its options ahead of `describe`.
            args = [option, str(properties), *args]
        main = TOOLS[name]
        if not distribution.uses_log4j2(state.kafka_version):
            main = TOOLS_3.get(name, main)
        return self._java(
            main,
            args,
            heap="256m",
            gc="-XX:+UseSerialGC",
            extra_jvm=[
                "-XX:TieredStopAtLevel=1",
                f"-Dkafka.logs.file={self.state_dir / 'logs' / 'tools.log'}",
            ],
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


def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait for a process to go away (reaping it if it is our child)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        except ChildProcessError:
            pass
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.split(") ", 1)[1].startswith("Z"):
                return True
        except OSError:
            return True
        time.sleep(0.2)
    return False
