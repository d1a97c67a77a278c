"""The testbed's node configuration: where each node's files live, its `server.properties`, the
logging configs, and the layout of a new cluster (ids, roles and ports).

Pure but for `write_configs`, which writes the files a node's JVM reads at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_health.testbed import distribution, jvm_archive, security
from kafka_health.testbed.state import BrokerState, TestbedError, TestbedState

CONTROLLER_PORT_OFFSET = 100
INTERNAL_PORT_OFFSET = 200  # the inter-broker listener of a secured testbed
CONTROLLER_ID_BASE = 100  # node ids of dedicated controllers (brokers keep 0..N-1 = pod ordinals)

# Log4j 2 to one file (the JVM's -Dkafka.logs.file), for the testbed's nodes and its apps.
LOG4J2_FILE = (
    "status = warn\n"
    "appender.file.type = File\n"
    "appender.file.name = FILE\n"
    "appender.file.fileName = ${sys:kafka.logs.file}\n"
    "appender.file.layout.type = PatternLayout\n"
    "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
    "rootLogger.level = INFO\n"
    "rootLogger.appenderRef.file.ref = FILE\n"
)
_LOG4J2 = (
    LOG4J2_FILE + "logger.kafka.name = org.apache.kafka\nlogger.kafka.level = INFO\n"
    "logger.state.name = state.change.logger\nlogger.state.level = WARN\n"
)
# Kafka 3.x logs through reload4j (log4j 1): the same layout in its syntax.
_LOG4J1 = (
    "log4j.rootLogger=INFO, file\n"
    "log4j.appender.file=org.apache.log4j.FileAppender\n"
    "log4j.appender.file.File=${kafka.logs.file}\n"
    "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
    "log4j.logger.state.change.logger=WARN\n"
)


def config_path(state_dir: Path, node_id: int) -> Path:
    return state_dir / "config" / f"broker-{node_id}.properties"


def data_dir(state_dir: Path, node_id: int) -> Path:
    return state_dir / "data" / f"broker-{node_id}"


def new_layout(
    brokers: int, controllers: int, base_port: int, secured: bool, racks: int = 0
) -> tuple[list[BrokerState], list[BrokerState]]:
    """The brokers (ids 0..N-1, ports from `base_port`) and the dedicated controllers (ids
    CONTROLLER_ID_BASE + i) of a new cluster; without dedicated controllers every node is combined.
    `racks` > 0: broker i is in rack `rack-<i mod racks>` (what a rack-aware assignment and a roll
    batched by rack need); dedicated controllers hold no partitions and get none."""
    if racks < 0:
        raise TestbedError("--racks must be 0 (no broker.rack) or more")
    dedicated = controllers > 0
    nodes = [
        BrokerState(
            id=i,
            port=base_port + i,
            controller_port=0 if dedicated else base_port + CONTROLLER_PORT_OFFSET + i,
            internal_port=base_port + INTERNAL_PORT_OFFSET + i if secured else None,
            role="broker" if dedicated else "broker,controller",
            rack=f"rack-{i % racks}" if racks else None,
        )
        for i in range(brokers)
    ]
    voters = [
        BrokerState(
            id=CONTROLLER_ID_BASE + i,
            port=0,
            controller_port=base_port + CONTROLLER_PORT_OFFSET + i,
            role="controller",
        )
        for i in range(controllers)
    ]
    return nodes, voters


def check_same_shape(
    state: TestbedState,
    state_dir: Path,
    brokers: int | None,
    controllers: int | None,
    security_mode: str | None,
    racks: int | None = None,
) -> None:
    """An existing testbed is started as it was created: another size, layout, racks or security is refused."""
    recreate = "run `kafka-health testbed down --purge` to recreate it with another"
    if brokers is not None and len(state.brokers) != brokers:
        raise TestbedError(f"the testbed in {state_dir} has {len(state.brokers)} brokers; {recreate} size")
    if controllers is not None and len(state.controllers) != controllers:
        raise TestbedError(
            f"the testbed in {state_dir} has {len(state.controllers)} dedicated controllers; {recreate} layout"
        )
    if racks is not None and state.racks != racks:
        raise TestbedError(f"the testbed in {state_dir} has --racks {state.racks}; {recreate} layout")
    if security_mode is not None and state.security != security_mode:
        raise TestbedError(
            f"the testbed in {state_dir} was created with --security {state.security}; {recreate}"
        )


def listener_props(state: TestbedState, b: BrokerState, material: security.Material) -> dict[str, Any]:
    """A node's listeners: PLAINTEXT on loopback, or a secured CLIENT listener beside a PLAINTEXT
    INTERNAL one (inter-broker); the controller listener stays PLAINTEXT."""
    if b.role == "controller":
        return {
            "listeners": f"CONTROLLER://127.0.0.1:{b.controller_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            **material.controller_props(),
        }
    controller_listener = [f"CONTROLLER://127.0.0.1:{b.controller_port}"] if b.role != "broker" else []
    if state.security == "plaintext" or b.internal_port is None:
        return {
            "listeners": ",".join([f"PLAINTEXT://127.0.0.1:{b.port}", *controller_listener]),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{b.port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }
    protocol = security.PROTOCOL[state.security]
    return {
        "listeners": ",".join(
            [f"CLIENT://127.0.0.1:{b.port}", f"INTERNAL://127.0.0.1:{b.internal_port}", *controller_listener]
        ),
        "advertised.listeners": f"CLIENT://127.0.0.1:{b.port},INTERNAL://127.0.0.1:{b.internal_port}",
        "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": f"CLIENT:{protocol},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        **material.broker_props(b.id, "CLIENT"),
    }


# How long the controller keeps a silent broker registered (Kafka's default: 9 s).
SESSION_TIMEOUT_MS = 4000


def node_properties(
    state: TestbedState, b: BrokerState, state_dir: Path, material: security.Material
) -> dict[str, Any]:
    """One node's `server.properties`: small thread pools and segments (a laptop-sized cluster),
    replication 3 / min ISR 2 where the cluster has the brokers for it."""
    n = len(state.brokers)
    rf, min_isr = min(3, n), min(2, n)
    return {
        "process.roles": b.role,
        "node.id": b.id,
        "controller.quorum.voters": ",".join(f"{v.id}@127.0.0.1:{v.controller_port}" for v in state.voters),
        **listener_props(state, b, material),
        **({"broker.rack": b.rack} if b.rack else {}),
        "controller.listener.names": "CONTROLLER",
        "log.dirs": data_dir(state_dir, b.id),
        "num.partitions": 3,
        "default.replication.factor": rf,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 6,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": 0,
        # A restarted node registers again only once its old session ended (docs/testbed.md
        # "The brokers' JVM"): 4 s instead of Kafka's 9 s makes each restart ~6 s shorter.
        "broker.session.timeout.ms": SESSION_TIMEOUT_MS,
        "broker.heartbeat.interval.ms": SESSION_TIMEOUT_MS // 4,
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


def write_configs(state: TestbedState, state_dir: Path, material: security.Material) -> None:
    """Every node's properties and both logging configs (log4j2 for Kafka 4, log4j 1 for 3.x)."""
    material.ensure([b.id for b in state.brokers])
    (state_dir / "config").mkdir(parents=True, exist_ok=True)
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)
    for b in state.nodes:
        props = node_properties(state, b, state_dir, material)
        config_path(state_dir, b.id).write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    (state_dir / "config" / "log4j2.properties").write_text(_LOG4J2)
    (state_dir / "config" / "log4j.properties").write_text(_LOG4J1)


def java_command(
    kafka_version: str,
    state_dir: Path,
    main: str,
    args: list[str],
    *,
    heap: str,
    gc: str = "-XX:+UseG1GC",
    extra_jvm: list[str] | None = None,
    record_classes_to: Path | None = None,
) -> list[str]:
    """A JVM running `main` from this Kafka version's jars, logging through the testbed's config,
    mapping the class archive built for it (or recording one: `jvm_archive`)."""
    libs = distribution.ensure_kafka(kafka_version)
    config = state_dir / "config"
    logging_config = (
        f"-Dlog4j2.configurationFile={config / 'log4j2.properties'}"
        if distribution.uses_log4j2(kafka_version)
        else f"-Dlog4j.configuration=file:{config / 'log4j.properties'}"
    )
    return [
        "java",
        f"-Xms{heap}",
        f"-Xmx{heap}",
        gc,
        "-Djava.awt.headless=true",
        logging_config,
        *jvm_archive.java_options(kafka_version, main, record_classes_to),
        *(extra_jvm or []),
        "-cp",
        f"{libs}/*",
        main,
        *args,
    ]
