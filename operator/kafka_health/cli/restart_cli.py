"""`kafka-health restart`: a standalone rolling restart with the operator's rules, dry-run by default.

Dry run: the order (KRaft voters after the others, the active controller last) and, per
broker, the live verdict of the restart safety rules as the cluster is NOW, with the
partitions that block it and those skipped because RF <= min.insync.replicas. The rules are
re-checked live before each broker when the roll runs.

--execute: the roll, one broker at a time: delete its pod (uid precondition), wait for a new
Ready pod, the broker registered again and 0 under-replicated partitions (each with a
timeout), pause, next broker; halts on the first failure without touching another broker;
then a preferred leader election for the restarted brokers (--no-elect to skip).

--lock-namespace NS (with --execute): the roll holds the operator's per-cluster Lease in NS (the
chart's lockNamespace) from start to end, checked before each pod delete: refused while an
operator (or another CLI) acts on the cluster, and operators withhold their actions meanwhile.

Exit: 0 done (dry run: the first broker may restart now); 1 halted, failed, refused by another
holder of the cluster's Lease, or (dry run) the first broker may not restart now; 2 usage error
(click's); 3 the command could not run.
"""

from __future__ import annotations

import getpass
import socket
import sys
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from kafka_health.cli import kafka_options, quiet
from kafka_health.collect import security_errors
from kafka_health.models.policy import (
    BrokerIdMapping,
    BrokerIdSource,
    BrokerPods,
    PodSelector,
    RestartTimeouts,
    parse_duration,
)

if TYPE_CHECKING:
    from kafka_health.controller.cluster_lease import ClusterLease
    from kafka_health.k8s.client import K8s

FAILED = 3


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(FAILED)


def _now() -> datetime:
    return datetime.now(UTC)


def _parse_brokers(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise _fail(f"--brokers {text!r}: give broker ids separated by commas, e.g. 0,1,2") from None
    if len(set(ids)) != len(ids) or any(i < 0 for i in ids):
        raise _fail("--brokers: list each non-negative broker id once")
    return ids


def _parse_selector(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise _fail(f"--selector {text!r}: use key=value[,key=value...]")
        labels[key.strip()] = value.strip()
    return labels


def restart(
    bootstrap_servers: Annotated[
        str,
        typer.Option(
            "--bootstrap-servers",
            "-b",
            envvar="KAFKA_BOOTSTRAP_SERVERS",
            help="HOST:PORT[,HOST:PORT...] of the cluster.",
        ),
    ],
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the broker pods.")],
    command_config: kafka_options.CommandConfig = None,
    statefulset: Annotated[
        str | None, typer.Option("--statefulset", help="The brokers' StatefulSet (broker id = ordinal).")
    ] = None,
    selector: Annotated[
        str | None, typer.Option("--selector", "-l", help="Label selector of the broker pods: k=v[,k=v].")
    ] = None,
    broker_id_label: Annotated[
        str | None,
        typer.Option(help="Pod label holding the broker id (default: the pod name's ordinal)."),
    ] = None,
    ordinal_offset: Annotated[int, typer.Option(help="Added to the pod ordinal to get the broker id.")] = 0,
    brokers: Annotated[
        str | None, typer.Option("--brokers", help="Broker ids to restart, e.g. 0,1,2 (default: all).")
    ] = None,
    pause: Annotated[str, typer.Option("--pause", help="Pause between brokers (Go duration).")] = "30s",
    pod_ready: Annotated[str, typer.Option(help="Timeout for the new pod to be Ready.")] = "10m",
    broker_registered: Annotated[str, typer.Option(help="Timeout for the broker to register again.")] = "5m",
    urp_zero: Annotated[
        str, typer.Option(help="Timeout for under-replicated partitions to return to 0.")
    ] = "15m",
    elect: Annotated[
        bool, typer.Option("--elect/--no-elect", help="After the roll, elect preferred leaders.")
    ] = True,
    execute: Annotated[
        bool, typer.Option("--execute", help="Restart the brokers (default: dry run).")
    ] = False,
    kubeconfig: Annotated[
        str | None,
        typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig (default: in-cluster)."),
    ] = None,
    request_id: Annotated[str | None, typer.Option("--id", help="An id for this roll (messages).")] = None,
    lock_namespace: Annotated[
        str | None,
        typer.Option(
            "--lock-namespace",
            envvar="KAFKA_HEALTH_LOCK_NAMESPACE",
            help="With --execute: hold the operator's per-cluster Lease in this namespace (the chart's "
            "lockNamespace) for the whole roll. The roll is refused while an operator acts on the "
            "cluster, and operators withhold their actions (ClusterLocked) while it runs. Without it "
            "the roll takes no lock.",
        ),
    ] = None,
    verbose: quiet.Verbose = False,
    log_file: quiet.LogFile = None,
) -> None:
    """Rolling broker restart, one at a time, with the operator's safety rules. Dry run unless --execute.

    Exit codes: 0 done (dry run: the first broker may restart now); 1 halted, failed, refused
    because another holder has the cluster's Lease (--lock-namespace), or (dry run) the first
    broker may not restart now; 2 usage error; 3 could not run.
    """
    quiet.start(verbose, log_file)
    if (statefulset is None) == (selector is None):
        raise _fail("give exactly one of --statefulset or --selector")
    ids = _parse_brokers(brokers)
    try:
        pause_delta = parse_duration(pause)
        timeouts = RestartTimeouts(
            pod_ready=pod_ready, broker_registered=broker_registered, urp_zero=urp_zero
        )
        mapping = (
            BrokerIdMapping(source=BrokerIdSource.LABEL, label=broker_id_label)
            if broker_id_label
            else BrokerIdMapping(source=BrokerIdSource.ORDINAL, ordinal_offset=ordinal_offset)
        )
        spec = BrokerPods(
            namespace=namespace,
            stateful_set=statefulset,
            pod_selector=PodSelector(match_labels=_parse_selector(selector)) if selector else None,
            broker_id=mapping,
        )
    except ValueError as exc:
        raise _fail(str(exc)) from None

    from kafka_health.collect.kafka_admin import KafkaAdmin
    from kafka_health.collect.snapshot import collect_snapshot
    from kafka_health.controller.cluster_lease import LeaseLost
    from kafka_health.k8s.client import K8s, K8sError, load_config
    from kafka_health.plan.restart_safety import check_restart_safety, order_brokers
    from kafka_health.remediate.broker_pods import BrokerPodsError, find_broker_pods
    from kafka_health.remediate.rolling_restart import BrokerRestartOutcome, pods_one_at_a_time, run_roll

    try:
        k8s = K8s(load_config(kubeconfig))
    except Exception as exc:
        raise _fail(f"no Kubernetes API: {exc}") from None
    with KafkaAdmin(kafka_options.connection(bootstrap_servers, command_config)) as admin:
        snapshot = collect_snapshot(admin, bootstrap_servers, _now)
        if not snapshot.reachable:
            reason = snapshot.missing[0].reason
            # A security refusal (authentication, TLS, protocol) is a setting to fix, not an outage.
            what = "refused the connection" if security_errors.kind_of(reason) else "unreachable"
            raise _fail(f"cluster {bootstrap_servers} {what}: {reason}")
        known = sorted(b.id for b in snapshot.brokers)
        wanted = ids if ids is not None else known
        unknown = [b for b in wanted if b not in known]
        if unknown:
            raise _fail(f"broker(s) {', '.join(map(str, unknown))} not in the cluster (known: {known})")
        try:
            pods = find_broker_pods(k8s, spec, namespace)
        except (BrokerPodsError, K8sError) as exc:
            raise _fail(str(exc)) from None
        no_pod = [b for b in wanted if b not in pods]
        if no_pod:
            raise _fail(f"no pod found for broker(s) {', '.join(map(str, no_pod))}")

        order = order_brokers(snapshot, wanted)
        leader = snapshot.quorum.leader_id if snapshot.quorum else None
        mode = "EXECUTE" if execute else "DRY RUN (add --execute to restart)"
        typer.echo(f"Rolling restart of {bootstrap_servers} — {mode}")
        typer.echo(f"Order: {', '.join(map(str, order))} (non-voters, then voters, active controller last)")
        typer.echo(
            f"After each: pod Ready ({pod_ready}), broker registered ({broker_registered}), "
            f"URP 0 ({urp_zero}); pause {pause}; then "
            + ("preferred leader election for the restarted brokers" if elect else "no election")
        )
        typer.echo("")
        typer.echo(f"{'BROKER':<8}{'POD':<28}{'READY':<7}{'ROLE':<12}VERDICT NOW")
        first_safe = True
        for i, b in enumerate(order):
            safety = pods_one_at_a_time(check_restart_safety(snapshot, b, remaining=order[i:]), pods)
            if i == 0:
                first_safe = safety.safe
            pod = pods[b].pod
            voters = {v.id for v in snapshot.quorum.voters} if snapshot.quorum else set()
            role = "controller" if b == leader else "voter" if b in voters else "broker"
            verdict = "safe" if safety.safe else "BLOCKED"
            typer.echo(f"{b:<8}{pod.name:<28}{pod.ready!s:<7}{role:<12}{verdict}")
            for blocker in safety.blockers:
                more = f": {', '.join(blocker.partitions)}" if blocker.partitions else ""
                typer.echo(f"        - {blocker.rule}: {blocker.message}{more}")
            if safety.skipped:
                names = ", ".join(f"{s.topic}-{s.partition}" for s in safety.skipped[:20])
                typer.echo(
                    f"        - skipped (RF <= min.insync.replicas, unavailable to acks=all while it "
                    f"restarts): {len(safety.skipped)}: {names}"
                )
        typer.echo("")
        typer.echo(
            "(Verdicts are for the cluster as it is now; each is re-checked live right before its broker.)"
        )
        if not execute:
            raise typer.Exit(0 if first_safe else 1)

        def progress(out: BrokerRestartOutcome) -> None:
            colour = typer.colors.GREEN if out.ok else typer.colors.RED
            typer.secho(f"[{_now():%H:%M:%S}] broker {out.broker}: {out.result} — {out.message}", fg=colour)

        roll_id = request_id or f"cli-{uuid.uuid4().hex[:8]}"
        lease = (
            _take_cluster_lock(k8s, lock_namespace, snapshot.cluster_id, roll_id) if lock_namespace else None
        )
        try:
            report = run_roll(
                roll_id,
                order,
                k8s=k8s,
                admin=admin,
                pods_spec=spec,
                namespace=namespace,
                timeouts=timeouts,
                pause=pause_delta,
                post_roll_election=elect,
                persist=lambda c: (
                    typer.echo(f"[{_now():%H:%M:%S}] broker {c.current_broker}: {c.step}", err=True)
                    if c.current_broker is not None
                    else None
                ),
                on_broker=progress,
                guard=lease.ensure if lease is not None else lambda: None,
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
    typer.echo(f"{report.result.state}: {report.result.message}")
    if report.election is not None:
        failed = [p for p in report.election.partitions if p.status == "failed"]
        for p in failed[:20]:
            typer.echo(f"  election failed for {p}: {p.message}")
    sys.stdout.flush()
    raise typer.Exit(0 if report.ok else 1)


def _take_cluster_lock(k8s: K8s, namespace: str, cluster_id: str | None, roll_id: str) -> ClusterLease:
    """The cluster's Lease for this roll, as the operator takes it; exit 1 when another holder
    (an operator's policy, another CLI) has it."""
    from kafka_health.controller.cluster_lease import ClusterLease, LockSettings, default_replica
    from kafka_health.k8s.client import K8sError
    from kafka_health.models.policy import ActionType
    from kafka_health.plan.cluster_lock import cluster_id_key

    if not cluster_id:
        raise _fail("--lock-namespace: the cluster id could not be read, so its Lease cannot be named")
    key = cluster_id_key(cluster_id)
    lease = ClusterLease(
        k8s,
        LockSettings(namespace=namespace, replica=default_replica()),
        cluster=key,
        policy=f"cli/{getpass.getuser()}@{socket.gethostname()}",
        action=ActionType.ROLLING_RESTART,
        id=roll_id,
    )
    try:
        held = lease.acquire()
    except K8sError as exc:
        raise _fail(f"--lock-namespace {namespace}: cannot take the cluster's Lease: {exc}") from None
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
