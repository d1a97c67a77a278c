"""`kafka-health restart`, step 3 of 4 (options → plan → run → print): the roll itself, under the
cluster's Lease when `--lock-namespace` is given, with a progress line per step and per node.

The roll's executor and the Lease are imported when a roll runs, not when `kafka-health`
starts: they load the kubernetes package (about 1 s measured with `python -X importtime`).
"""

from __future__ import annotations

import getpass
import socket
import uuid
from typing import TYPE_CHECKING

import typer

from kafka_health.cli.restart_options import RestartOptions, fail, now
from kafka_health.cli.restart_plan import RollPlan
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.models.policy import ActionType
from kafka_health.plan.cluster_lock import cluster_id_key

if TYPE_CHECKING:
    from kafka_health.controller.cluster_lease import ClusterLease
    from kafka_health.k8s.client import K8s
    from kafka_health.models.policy import CurrentRemediation
    from kafka_health.remediate.rolling_restart import BrokerRestartOutcome, RollReport


def _progress(out: BrokerRestartOutcome) -> None:
    colour = typer.colors.GREEN if out.ok else typer.colors.RED
    typer.secho(f"[{now():%H:%M:%S}] broker {out.broker}: {out.result} — {out.message}", fg=colour)


def _step(current: CurrentRemediation) -> None:
    if current.current_broker is not None:
        typer.echo(f"[{now():%H:%M:%S}] broker {current.current_broker}: {current.step}", err=True)


def run(opts: RestartOptions, plan: RollPlan, k8s: K8s, kafka: KafkaAdmin) -> RollReport:
    """Roll `plan.order` one node at a time, as the operator would; exit 1 when the Lease is
    held by another or lost before a pod delete."""
    from kafka_health.controller.cluster_lease import LeaseLost
    from kafka_health.remediate.rolling_restart import run_roll

    args = opts.args
    roll_id = args.request_id or f"cli-{uuid.uuid4().hex[:8]}"
    lease = (
        _take_cluster_lock(k8s, args.lock_namespace, plan.snapshot.cluster_id, roll_id)
        if args.lock_namespace
        else None
    )
    try:
        return run_roll(
            roll_id,
            plan.order,
            k8s=k8s,
            admin=kafka,
            pods_spec=opts.spec,
            namespace=args.namespace,
            timeouts=opts.timeouts,
            pause=opts.pause,
            post_roll_election=args.elect,
            persist=_step,
            on_broker=_progress,
            guard=lease.ensure if lease is not None else lambda: None,
            controller_pods=opts.controller_spec,
            refuse_never_safe=opts.refuse,
            begun=opts.begun,
            drain_leadership=args.drain_leadership,
            max_concurrent=args.max_concurrent,
            batch_by=opts.batch_by,
        )
    except LeaseLost as exc:
        typer.secho(
            f"stopped before the next pod delete: {exc} (this process was frozen or cut off from "
            "the API server for longer than the Lease lasts); nothing more is done",
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(1) from None
    finally:
        if lease is not None:
            lease.release()


def _take_cluster_lock(k8s: K8s, namespace: str, cluster_id: str | None, roll_id: str) -> ClusterLease:
    """The cluster's Lease for this roll, as the operator takes it; exit 1 when another holder
    (an operator's policy, another CLI) has it."""
    from kafka_health.controller.cluster_lease import ClusterLease, LockSettings, default_replica
    from kafka_health.k8s.client import K8sError

    if not cluster_id:
        raise fail("--lock-namespace: the cluster id could not be read, so its Lease cannot be named")
    lease = ClusterLease(
        k8s,
        LockSettings(namespace=namespace, replica=default_replica()),
        cluster=cluster_id_key(cluster_id),
        policy=f"cli/{getpass.getuser()}@{socket.gethostname()}",
        action=ActionType.ROLLING_RESTART,
        id=roll_id,
    )
    try:
        held = lease.acquire()
    except K8sError as exc:
        raise fail(f"--lock-namespace {namespace}: cannot take the cluster's Lease: {exc}") from None
    if held is not None:
        what = f"{held.action}" + (f" {held.id}" if held.id else "")
        typer.secho(
            f"refused: ClusterLocked by {held.holder} ({what}) since {held.acquired_at:%Y-%m-%d %H:%M:%S}Z; "
            "one action per Kafka cluster at a time — retry when it has finished",
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(1)
    return lease
