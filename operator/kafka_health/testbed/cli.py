"""`kafka-health testbed …`: the local real cluster for tests and the demo."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_health.testbed import archive_build, distribution, security
from kafka_health.testbed.cluster import DEFAULT_BASE_PORT, Testbed, TestbedError
from kafka_health.testbed.controlplane import (
    CONTROL_PLANE_PORT_OFFSET,
    ControlPlane,
    ControlPlaneError,
    control_plane_ports,
)
from kafka_health.testbed.pod_status import mark_oom_killed

if TYPE_CHECKING:
    from kafka_health.testbed.pod_layout import PodLayout

app = typer.Typer(
    help="A local real Apache Kafka KRaft cluster (and Kubernetes control plane) on 127.0.0.1.",
    rich_markup_mode=None,
)

StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", envvar="KAFKA_HEALTH_TESTBED_DIR", help="Where data, logs and pids live."),
]


def _testbed(state_dir: Path | None) -> Testbed:
    return Testbed(state_dir)


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


PodLayoutOption = Annotated[
    str,
    typer.Option(
        "--pod-layout",
        help="How the broker-pod stand-in names its pods: statefulset (StatefulSet `kafka`, pods "
        "kafka-<id>) or strimzi (Strimzi's node pools: my-cluster-<pool>-<id>, strimzi.io/* labels).",
    ),
]
PodNamespace = Annotated[
    str | None,
    typer.Option(
        "--pod-namespace", help="Namespace of the stand-in's pods (default: kafka; strimzi layout: strimzi)."
    ),
]

Controllers = Annotated[
    int | None,
    typer.Option(
        "--controllers",
        help="Dedicated KRaft controller-only nodes (ids 100.., controller ports from base+100) beside "
        "--brokers broker-only nodes; 0 or absent: combined broker+controller nodes.",
    ),
]

Racks = Annotated[
    int | None,
    typer.Option(
        "--racks",
        help="Spread the brokers over R racks: broker i gets broker.rack=rack-<i mod R> (dedicated "
        "controllers none); 0 or absent: no broker.rack. Fixed when the testbed is created.",
    ),
]


BrokerConfig = Annotated[
    list[str] | None,
    typer.Option(
        "--broker-config",
        metavar="KEY=VALUE",
        help="KEY=VALUE added to every node's properties (repeatable), kept in the testbed's state: a "
        "running node takes it at its next start (e.g. after a roll). E.g. replica.fetch.backoff.ms=100.",
    ),
]


def _broker_config(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or "\n" in item:
            raise typer.BadParameter(
                f"{item!r}: use KEY=VALUE, e.g. replica.fetch.backoff.ms=100", param_hint="--broker-config"
            )
        out[key.strip()] = value.strip()
    return out


def _layout(kind: str, namespace: str | None) -> PodLayout:
    from kafka_health.testbed.pod_layout import NAMESPACE, STRIMZI_NAMESPACE, PodLayout

    try:
        return PodLayout(kind, namespace or (STRIMZI_NAMESPACE if kind == "strimzi" else NAMESPACE))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--pod-layout") from None


KafkaVersion = Annotated[
    str | None,
    typer.Option(
        "--kafka-version",
        help=f"Apache Kafka version: X.Y.Z, or X.Y.x ({', '.join(f'{v}.x' for v in distribution.NEWEST)}) "
        f"for the newest of that line the testbed knows (default {distribution.KAFKA_VERSION}). Cached per version.",
    ),
]


@app.command()
def fetch(kafka_version: KafkaVersion = None) -> None:
    """Fetch the pinned Apache Kafka jars into the cache and build the class archives the
    testbed's JVMs map (no-op when cached)."""
    try:
        version = distribution.resolve(kafka_version) if kafka_version else distribution.KAFKA_VERSION
        path = distribution.ensure_kafka(version, quiet=False)
        archives = archive_build.ensure(version)
    except (distribution.FetchError, TestbedError) as exc:
        _fail(exc)
    typer.echo(str(path))
    for archive in archives:
        typer.echo(str(archive))


@app.command()
def up(
    brokers: Annotated[
        int | None, typer.Option(help="Number of broker+controller nodes (default 3).")
    ] = None,
    base_port: Annotated[
        int, typer.Option(help="First client port; controllers use base+100.")
    ] = DEFAULT_BASE_PORT,
    auto_leader_rebalance: Annotated[
        bool, typer.Option(help="Enable Kafka's own auto leader rebalance (off: the operator heals).")
    ] = False,
    security_mode: Annotated[
        str | None,
        typer.Option(
            "--security",
            help="How the client listener is secured: plaintext (default), ssl, sasl_plaintext, "
            "sasl_ssl (SCRAM-SHA-512) or mtls. `testbed env` prints the client settings.",
        ),
    ] = None,
    kafka_version: KafkaVersion = None,
    controllers: Controllers = None,
    racks: Racks = None,
    broker_config: BrokerConfig = None,
    k8s: Annotated[
        bool,
        typer.Option(
            "--k8s",
            help="Also start a Kubernetes control plane (etcd + kube-apiserver) and the broker-pod stand-in.",
        ),
    ] = False,
    certificate_days: Annotated[
        float | None,
        typer.Option(
            "--certificate-days",
            help="Validity in days of the broker certificates a TLS testbed (--security ssl, sasl_ssl, "
            "mtls) issues when it is created (default 825; e.g. 20 or 3 to see the certificate checks).",
        ),
    ] = None,
    pod_layout: PodLayoutOption = "statefulset",
    pod_namespace: PodNamespace = None,
    state_dir: StateDir = None,
) -> None:
    """Start the cluster (idempotent), wait until every broker serves, print the bootstrap servers.

    With --k8s, a second line gives the kubeconfig path.
    """
    from kafka_health.testbed.standin import StandIn, StandInError

    tb = _testbed(state_dir)
    layout = _layout(pod_layout, pod_namespace)
    if security_mode is not None and security_mode not in security.MODES:
        raise typer.BadParameter(f"one of {', '.join(security.MODES)}", param_hint="--security")
    for warning in ephemeral_port_warnings(base_port):
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)
    try:
        state = tb.up(
            brokers,
            base_port,
            auto_leader_rebalance=auto_leader_rebalance,
            security_mode=security_mode,
            kafka_version=kafka_version,
            controllers=controllers,
            certificate_days=certificate_days,
            racks=racks,
            node_config=_broker_config(broker_config),
        )
        if k8s:
            cp = ControlPlane(tb.state_dir, control_plane_ports(base_port))
            cp.start()
            StandIn(tb.state_dir, cp.kubeconfig, layout).start()
    except (TestbedError, distribution.FetchError, ControlPlaneError, StandInError) as exc:
        _fail(exc)
    typer.echo(state.bootstrap_servers)
    if k8s:
        typer.echo(str(cp.kubeconfig))


def ephemeral_port_warnings(
    base_port: int, range_file: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")
) -> list[str]:
    """A warning when testbed ports (client from base, the control plane's from base + 90,
    controller from base + 100, inter-broker from base + 200) fall in the kernel's ephemeral
    range: an outgoing connection can take a stopped broker's port, and the broker then cannot
    start again."""
    try:
        low, high = (int(x) for x in range_file.read_text().split()[:2])
    except (OSError, ValueError):
        return []
    inside = [
        f"{name} {port}"
        for name, port in (
            ("client", base_port),
            ("control plane", base_port + CONTROL_PLANE_PORT_OFFSET),
            ("controller", base_port + 100),
            ("inter-broker", base_port + 200),
        )
        if low <= port <= high
    ]
    if not inside:
        return []
    return [
        f"ports from --base-port {base_port} ({', '.join(inside)}) are in the kernel's ephemeral port "
        f"range {low}-{high} ({range_file}): a restarted broker can find its port taken by an outgoing "
        f"connection; pick a --base-port below {low - 300} or above {high}"
    ]


@app.command(hidden=True)
def standin(
    state_dir: StateDir = None,
    kubeconfig: Annotated[
        Path | None, typer.Option(help="Kubeconfig of the control plane (default: <state dir>/kubeconfig).")
    ] = None,
    probe_period: Annotated[float, typer.Option(help="Seconds between pod status probes.")] = 2.0,
    start_timeout: Annotated[float, typer.Option(help="Seconds a restarted broker has to serve.")] = 120.0,
    pod_layout: PodLayoutOption = "statefulset",
    pod_namespace: PodNamespace = None,
) -> None:
    """Run the broker-pod stand-in in the foreground (`up --k8s` starts it detached)."""
    from kafka_health.testbed.podstandin import run_forever

    tb = _testbed(state_dir)
    run_forever(
        tb.state_dir,
        kubeconfig or ControlPlane(tb.state_dir).kubeconfig,
        probe_period=probe_period,
        start_timeout=start_timeout,
        layout=_layout(pod_layout, pod_namespace),
    )


@app.command()
def env(state_dir: StateDir = None) -> None:
    """Print shell exports for the running testbed: `eval "$(kafka-health testbed env)"`."""
    tb = _testbed(state_dir)
    try:
        state = tb.require()
    except TestbedError as exc:
        _fail(exc)
    typer.echo(f"export KAFKA_BOOTSTRAP_SERVERS={state.bootstrap_servers}")
    properties = tb.client_properties()
    if properties is not None:
        material = tb.material(state)
        typer.echo(
            f"# security {state.security}: client settings of the admin user (Kafka's tools: --command-config)"
        )
        typer.echo(f"export KAFKA_HEALTH_COMMAND_CONFIG={properties}")
        typer.echo(
            f"# the unprivileged user (no ACLs until granted): {material.client_properties(security.APP)}"
        )
        typer.echo("# a policy's Secret (kubectl create secret generic kafka-client ...):")
        for key, value in material.secret_values().items():
            if key in ("ca.crt", "tls.crt", "tls.key"):
                source = {
                    "ca.crt": material.ca_file,
                    "tls.crt": material.user_cert(security.ADMIN),
                    "tls.key": material.user_key(security.ADMIN),
                }[key]
                typer.echo(f"#   --from-file={key}={source}")
            elif key == "password":
                typer.echo(f"#   --from-literal=password=<see {material.passwords_file}>")
            else:
                typer.echo(f"#   --from-literal={key}={value}")
    cp = ControlPlane(tb.state_dir)
    if cp.running():
        typer.echo(f"export KUBECONFIG={cp.kubeconfig}")


@app.command()
def status(
    state_dir: StateDir = None,
    output: Annotated[str, typer.Option("--output", "-o", help="table or json")] = "table",
) -> None:
    """Per broker: pid, up/paused/down, ports; then the control plane and pod stand-in, when started.

    `-o json` stays the list of brokers (scripts rely on its shape).
    """
    from kafka_health.testbed.standin import StandIn

    tb = _testbed(state_dir)
    try:
        rows = tb.status()
    except TestbedError as exc:
        _fail(exc)
    if output == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo(f"{'NODE':<7}{'ROLE':<18}{'STATE':<8}{'PID':<9}{'PORT':<7}{'CONTROLLER':<11}SERVING")
    for r in rows:
        pid, port, cport = (r[k] if r[k] is not None else "-" for k in ("pid", "port", "controller_port"))
        typer.echo(
            f"{r['id']!s:<7}{r['role']!s:<18}{r['state']!s:<8}{pid!s:<9}{port!s:<7}{cport!s:<11}{r['serving']}"
        )
    components = ControlPlane(tb.state_dir).status()
    if not components:
        return
    standin_ = StandIn(tb.state_dir)
    components.append(
        {
            "name": "pod-standin",
            "pid": standin_.pid,
            "state": "up" if standin_.pid else "down",
            "endpoint": str(standin_.log_path),
            "healthy": standin_.pid is not None,
        }
    )
    typer.echo(f"\n{'COMPONENT':<16}{'STATE':<8}{'PID':<9}{'HEALTHY':<9}ENDPOINT")
    for c in components:
        pid = c["pid"] if c["pid"] is not None else "-"
        typer.echo(f"{c['name']!s:<16}{c['state']!s:<8}{pid!s:<9}{c['healthy']!s:<9}{c['endpoint']}")


@app.command()
def broker(
    action: Annotated[
        str,
        typer.Argument(
            help="stop (SIGTERM) | kill (SIGKILL) | pause (SIGSTOP) | resume | start | oom-kill (SIGKILL "
            "as the OOM killer: with --k8s the pod stand-in restarts it in place, lastState OOMKilled)"
        ),
    ],
    broker_id: Annotated[int, typer.Argument(metavar="ID")],
    state_dir: StateDir = None,
) -> None:
    """Fault injection on one broker."""
    tb = _testbed(state_dir)

    def oom_kill(node_id: int) -> None:
        mark_oom_killed(tb.state_dir, node_id)
        tb.kill(node_id)

    actions = {
        "stop": tb.stop,
        "kill": tb.kill,
        "pause": tb.pause,
        "resume": tb.resume,
        "start": tb.start,
        "oom-kill": oom_kill,
    }
    if action not in actions:
        _fail(ValueError(f"unknown action {action!r}; one of: {', '.join(actions)}"))
    try:
        actions[action](broker_id)
    except TestbedError as exc:
        _fail(exc)
    typer.echo(f"broker {broker_id}: {action} done")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def tool(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="kafka-topics, kafka-consumer-groups, kafka-leader-election, …")
    ],
    state_dir: StateDir = None,
) -> None:
    """Run a real Kafka CLI tool from the same jars against the testbed (--bootstrap-server added;
    on a secured testbed also the admin's client settings: --command-config, or the tool's own
    --admin.config / --producer.config / --consumer.config)."""
    try:
        cmd = _testbed(state_dir).tool_command(name, list(ctx.args))
    except TestbedError as exc:
        _fail(exc)
    sys.stdout.flush()
    os.execvp(cmd[0], cmd)


@app.command("streams-app")
def streams_app_(
    app_id: Annotated[str, typer.Option("--app-id", help="application.id: the streams group's id.")],
    source: Annotated[str, typer.Option(help="The topic it reads (absent: the group is NOT_READY).")],
    sink: Annotated[str, typer.Option(help="The topic it writes the counts to.")],
    setting: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="A Kafka Streams or client setting (repeatable)."),
    ] = None,
    state_dir: StateDir = None,
) -> None:
    """Start a real Kafka Streams app (group.protocol=streams) in the background and print its pid.

    It counts the source's records by value (a repartition and a changelog topic, two
    subtopologies); `kill <pid>` (SIGTERM) stops it and its member leaves the group. Its output
    and log: <state dir>/logs/streams-<app id>.out and .log.
    """
    from kafka_health.testbed.streams_app import start_streams_app

    try:
        proc = start_streams_app(_testbed(state_dir), app_id, source, sink, extra=setting or [])
    except (TestbedError, distribution.FetchError) as exc:
        _fail(exc)
    typer.echo(str(proc.pid))


@app.command()
def down(
    purge: Annotated[
        bool, typer.Option(help="Also delete data and logs (the nodes are killed, not shut down).")
    ] = False,
    state_dir: StateDir = None,
) -> None:
    """Stop everything the testbed started (pod stand-in, brokers, control plane); no process is left behind."""
    from kafka_health.testbed.standin import StandIn

    tb = _testbed(state_dir)
    StandIn(tb.state_dir).stop()  # first, so it does not react to the brokers going away
    ControlPlane(tb.state_dir).stop()
    tb.down(purge=purge)
    typer.echo("testbed down")
