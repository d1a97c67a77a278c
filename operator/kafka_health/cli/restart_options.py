"""`kafka-health restart`, step 1 of 4 (options → plan → run → print): its command-line options,
checked and turned into one typed `RestartOptions` before anything is read.

The typer declarations live here as named types, so the command's signature in `restart_cli`
reads as a list of options; every check that needs no cluster and no Kubernetes is here too
(a bad value exits 3 naming the option, as `restart` always has).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import typer

from kafka_health.cli import restart_honest
from kafka_health.models.policy import (
    BrokerIdMapping,
    BrokerIdSource,
    BrokerPods,
    PodSelector,
    RestartBegun,
    RestartTimeouts,
    parse_duration,
)

FAILED = 3


class Output(StrEnum):
    table = "table"
    json = "json"


class BatchByOpt(StrEnum):
    rack = "rack"
    none = "none"


def fail(message: str) -> typer.Exit:
    """`error: message` on stderr; the caller raises the returned exit (3: could not run)."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(FAILED)


def now() -> datetime:
    return datetime.now(UTC)


Namespace = Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the broker pods.")]
StatefulSet = Annotated[
    str | None, typer.Option("--statefulset", help="The brokers' StatefulSet (broker id = ordinal).")
]
Selector = Annotated[
    str | None, typer.Option("--selector", "-l", help="Label selector of the broker pods: k=v[,k=v].")
]
BrokerIdLabel = Annotated[
    str | None,
    typer.Option(help="Pod label holding the broker id (default: the pod name's ordinal)."),
]
OrdinalOffset = Annotated[int, typer.Option(help="Added to the pod ordinal to get the broker id.")]
ControllerStatefulSet = Annotated[
    str | None,
    typer.Option(
        "--controller-statefulset",
        help="The dedicated KRaft controllers' StatefulSet: puts them in the roll (first).",
    ),
]
ControllerSelector = Annotated[
    str | None,
    typer.Option(
        "--controller-selector", help="Label selector of the dedicated controllers' pods: k=v[,k=v]."
    ),
]
ControllerIdLabel = Annotated[
    str | None,
    typer.Option(help="Pod label holding a controller's node id (default: the pod name's ordinal)."),
]
ControllerOrdinalOffset = Annotated[
    int, typer.Option(help="Added to a controller pod's ordinal to get its node id.")
]
Brokers = Annotated[
    str | None,
    typer.Option(
        "--brokers",
        help="Node ids to restart, e.g. 0,1,2 (default: all brokers, and the dedicated controllers "
        "when their pods are given).",
    ),
]
Pause = Annotated[str, typer.Option("--pause", help="Pause between brokers (Go duration).")]
PodReady = Annotated[str, typer.Option(help="Timeout for the new pod to be Ready.")]
BrokerRegistered = Annotated[str, typer.Option(help="Timeout for the broker to register again.")]
UrpZero = Annotated[str, typer.Option(help="Timeout for under-replicated partitions to return to 0.")]
Elect = Annotated[bool, typer.Option("--elect/--no-elect", help="After the roll, elect preferred leaders.")]
Execute = Annotated[bool, typer.Option("--execute", help="Restart the brokers (default: dry run).")]
Kubeconfig = Annotated[
    str | None,
    typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig (default: in-cluster)."),
]
RequestId = Annotated[str | None, typer.Option("--id", help="An id for this roll (messages).")]
LockNamespace = Annotated[
    str | None,
    typer.Option(
        "--lock-namespace",
        envvar="KAFKA_HEALTH_LOCK_NAMESPACE",
        help="With --execute: hold the operator's per-cluster Lease in this namespace (the chart's "
        "lockNamespace) for the whole roll. The roll is refused while an operator acts on the "
        "cluster, and operators withhold their actions (ClusterLocked) while it runs. Without it "
        "the roll takes no lock.",
    ),
]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="Dry run plan as table or json.")]
NeverSafeOpt = Annotated[
    restart_honest.NeverSafe, typer.Option("--never-safe", help=restart_honest.NEVER_SAFE_HELP)
]
MaxConcurrent = Annotated[
    int,
    typer.Option(
        "--max-concurrent",
        min=1,
        help="Brokers restarted together (rollingRestart.maxConcurrent): >1 restarts batches in which no "
        "partition loses more in-sync replicas than min.insync.replicas allows (controllers and KRaft "
        "voters still one at a time). Default 1: one broker at a time.",
    ),
]
BatchByOption = Annotated[
    BatchByOpt,
    typer.Option(
        "--batch-by",
        help="With --max-concurrent > 1: rack batches the brokers of one rack (broker.rack); none batches "
        "any brokers the rule allows, in roll order.",
    ),
]
DrainLeadership = Annotated[
    bool,
    typer.Option(
        "--drain-leadership/--no-drain-leadership",
        help="Move each broker's leaderships to in-sync replicas before its restart and back after "
        "(needs ALTER on CLUSTER; off by default: see docs/remediation-rolling-restart.md).",
    ),
]
RestartBegunOpt = Annotated[
    str | None, typer.Option("--restart-begun", help=restart_honest.RESTART_BEGUN_HELP)
]


@dataclass(frozen=True)
class PodOptions:
    """How to find one kind of node's pods, as given: a StatefulSet or a selector, and the id."""

    statefulset: str | None
    selector: str | None
    id_label: str | None
    ordinal_offset: int


@dataclass(frozen=True)
class AfterEach:
    """The waits after each node, as given (Go durations, printed back as written)."""

    pause: str
    pod_ready: str
    broker_registered: str
    urp_zero: str


@dataclass(frozen=True)
class RestartArgs:
    """The command line as typer hands it over, before any check."""

    bootstrap_servers: str
    namespace: str
    command_config: Path | None
    brokers: PodOptions
    controllers: PodOptions
    nodes: str | None
    after_each: AfterEach
    elect: bool
    execute: bool
    kubeconfig: str | None
    request_id: str | None
    lock_namespace: str | None
    output: Output
    never_safe: restart_honest.NeverSafe
    restart_begun: str | None
    max_concurrent: int = 1
    batch_by: BatchByOpt = BatchByOpt.rack
    drain_leadership: bool = False


@dataclass(frozen=True)
class RestartOptions:
    """The checked options: what the plan, the roll and the printout need."""

    args: RestartArgs
    ids: list[int] | None
    spec: BrokerPods
    controller_spec: BrokerPods | None
    timeouts: RestartTimeouts
    pause: timedelta
    begun: list[RestartBegun]

    @property
    def refuse(self) -> bool:
        return self.args.never_safe is restart_honest.NeverSafe.refuse

    @property
    def batch_by(self) -> Literal["Rack", "None"]:
        return "Rack" if self.args.batch_by is BatchByOpt.rack else "None"


def _parse_brokers(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--brokers {text!r}: give broker ids separated by commas, e.g. 0,1,2") from None
    if len(set(ids)) != len(ids) or any(i < 0 for i in ids):
        raise fail("--brokers: list each non-negative broker id once")
    return ids


def _parse_selector(text: str, option: str = "--selector") -> dict[str, str]:
    labels: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise fail(f"{option} {text!r}: use key=value[,key=value...]")
        labels[key.strip()] = value.strip()
    return labels


def _pods(namespace: str, given: PodOptions, selector_option: str) -> BrokerPods:
    mapping = (
        BrokerIdMapping(source=BrokerIdSource.LABEL, label=given.id_label)
        if given.id_label
        else BrokerIdMapping(source=BrokerIdSource.ORDINAL, ordinal_offset=given.ordinal_offset)
    )
    return BrokerPods(
        namespace=namespace,
        stateful_set=given.statefulset,
        pod_selector=PodSelector(match_labels=_parse_selector(given.selector, selector_option))
        if given.selector
        else None,
        broker_id=mapping,
    )


def check(args: RestartArgs) -> RestartOptions:
    """The options checked in the order `restart` has always checked them (the first problem
    is the one reported)."""
    if (args.brokers.statefulset is None) == (args.brokers.selector is None):
        raise fail("give exactly one of --statefulset or --selector")
    if args.controllers.statefulset is not None and args.controllers.selector is not None:
        raise fail("give at most one of --controller-statefulset or --controller-selector")
    if args.output is Output.json and args.execute:
        raise fail("--output json is for the dry run (the plan); --execute prints progress")
    ids = _parse_brokers(args.nodes)
    after = args.after_each
    try:
        begun = restart_honest.parse_begun(args.restart_begun)
        pause = parse_duration(after.pause)
        timeouts = RestartTimeouts(
            pod_ready=after.pod_ready, broker_registered=after.broker_registered, urp_zero=after.urp_zero
        )
        spec = _pods(args.namespace, args.brokers, "--selector")
        controller_spec = None
        if args.controllers.statefulset is not None or args.controllers.selector is not None:
            controller_spec = _pods(args.namespace, args.controllers, "--controller-selector")
    except ValueError as exc:
        raise fail(str(exc)) from None
    return RestartOptions(args, ids, spec, controller_spec, timeouts, pause, begun)
