"""`kafka-health restart`: a standalone rolling restart with the operator's rules, dry-run by default.

Dry run: the order and why each node stands there (dedicated controllers first: followers
by id, the active controller last of them; then the brokers: non-voters, combined voters, the
active combined controller last) and, per node, the live verdict of the restart safety rules
as the cluster is NOW, with the partitions that block it and those skipped because RF <=
min.insync.replicas. The rules are re-checked live before each node when the roll runs.
`--output json` prints the same plan as one JSON object.

Dedicated controllers (KRaft voters that are not brokers) are in the roll when their pods are
given (--controller-statefulset or --controller-selector): they hold no partitions, so only the
quorum gate (without the candidate, the other caught-up voters remain a majority of all voters)
and one-at-a-time apply to them; after each, the roll waits for it to be back in the quorum and
caught up before the next.

--execute: the roll, one broker at a time: delete its pod (uid precondition), wait for a new
Ready pod, the broker registered again and 0 under-replicated partitions (each with a
timeout), pause, next broker; halts on the first failure without touching another broker;
then a preferred leader election for the restarted brokers (--no-elect to skip).

--lock-namespace NS (with --execute): the roll holds the operator's per-cluster Lease in NS (the
chart's lockNamespace) from start to end, checked before each pod delete: refused while an
operator (or another CLI) acts on the cluster, and operators withhold their actions meanwhile.

--never-safe refuse|proceed: the operator's neverSafePartitions rule, through the same decision
(`never_safe_verdict`); a halt names the broker in flight ("restart begun, not confirmed
healthy") and how to finish without restarting it twice (`--restart-begun`): `restart_honest.py`.

Exit: 0 done (dry run: the first broker may restart now); 1 halted, failed, refused (never-safe
partitions, or another holder of the cluster's Lease), or (dry run) the first broker may not
restart now; 2 usage error (click's); 3 the command could not run (also: partitions the brokers
hold are hidden from the principal, or it cannot check that none are: `remediate.access`).
"""

from __future__ import annotations

import getpass
import json
import socket
import sys
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_health.cli import kafka_options, quiet, restart_honest
from kafka_health.collect import security_errors
from kafka_health.models.policy import (
    BrokerIdMapping,
    BrokerIdSource,
    BrokerPods,
    PodSelector,
    RequestState,
    RestartTimeouts,
    parse_duration,
)

if TYPE_CHECKING:
    from kafka_health.controller.cluster_lease import ClusterLease
    from kafka_health.k8s.client import K8s

FAILED = 3


class Output(StrEnum):
    table = "table"
    json = "json"


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


def _parse_selector(text: str, option: str = "--selector") -> dict[str, str]:
    labels: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise _fail(f"{option} {text!r}: use key=value[,key=value...]")
        labels[key.strip()] = value.strip()
    return labels


def restart(  # noqa: C901, PLR0912, PLR0915
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
    controller_statefulset: Annotated[
        str | None,
        typer.Option(
            "--controller-statefulset",
            help="The dedicated KRaft controllers' StatefulSet: puts them in the roll (first).",
        ),
    ] = None,
    controller_selector: Annotated[
        str | None,
        typer.Option(
            "--controller-selector", help="Label selector of the dedicated controllers' pods: k=v[,k=v]."
        ),
    ] = None,
    controller_id_label: Annotated[
        str | None,
        typer.Option(help="Pod label holding a controller's node id (default: the pod name's ordinal)."),
    ] = None,
    controller_ordinal_offset: Annotated[
        int, typer.Option(help="Added to a controller pod's ordinal to get its node id.")
    ] = 0,
    brokers: Annotated[
        str | None,
        typer.Option(
            "--brokers",
            help="Node ids to restart, e.g. 0,1,2 (default: all brokers, and the dedicated controllers "
            "when their pods are given).",
        ),
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
    output: Annotated[
        Output, typer.Option("--output", "-o", help="Dry run plan as table or json.")
    ] = Output.table,
    never_safe: Annotated[
        restart_honest.NeverSafe, typer.Option("--never-safe", help=restart_honest.NEVER_SAFE_HELP)
    ] = restart_honest.NeverSafe.refuse,
    restart_begun: Annotated[
        str | None, typer.Option("--restart-begun", help=restart_honest.RESTART_BEGUN_HELP)
    ] = None,
    verbose: quiet.Verbose = False,
    log_file: quiet.LogFile = None,
) -> None:
    """Rolling broker restart, one at a time, with the operator's safety rules. Dry run unless --execute.

    Partitions with RF <= min.insync.replicas on the brokers to restart refuse the roll, as the
    operator does (neverSafePartitions: Refuse), unless --never-safe proceed.

    Exit codes: 0 done (dry run: the first broker may restart now); 1 halted, failed, refused
    (never-safe partitions; another holder has the cluster's Lease, --lock-namespace), or (dry
    run) the first broker may not restart now; 2 usage error; 3 could not run (also: partitions
    hidden from the principal, or DESCRIBE on CLUSTER missing to check that none are).
    """
    quiet.start(verbose, log_file)
    if (statefulset is None) == (selector is None):
        raise _fail("give exactly one of --statefulset or --selector")
    if controller_statefulset is not None and controller_selector is not None:
        raise _fail("give at most one of --controller-statefulset or --controller-selector")
    if output is Output.json and execute:
        raise _fail("--output json is for the dry run (the plan); --execute prints progress")
    ids = _parse_brokers(brokers)
    refuse = never_safe is restart_honest.NeverSafe.refuse
    try:
        begun = restart_honest.parse_begun(restart_begun)
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
        controller_spec = None
        if controller_statefulset is not None or controller_selector is not None:
            controller_spec = BrokerPods(
                namespace=namespace,
                stateful_set=controller_statefulset,
                pod_selector=PodSelector(
                    match_labels=_parse_selector(controller_selector, "--controller-selector")
                )
                if controller_selector
                else None,
                broker_id=BrokerIdMapping(source=BrokerIdSource.LABEL, label=controller_id_label)
                if controller_id_label
                else BrokerIdMapping(source=BrokerIdSource.ORDINAL, ordinal_offset=controller_ordinal_offset),
            )
    except ValueError as exc:
        raise _fail(str(exc)) from None

    from kafka_health.collect.kafka_admin import KafkaAdmin
    from kafka_health.collect.results import ZOOKEEPER_MODE
    from kafka_health.collect.snapshot import collect_snapshot, zookeeper_mode
    from kafka_health.controller.cluster_lease import LeaseLost
    from kafka_health.k8s.client import K8s, K8sError, load_config
    from kafka_health.plan.restart_safety import (
        check_restart_safety,
        controller_only_nodes,
        never_safe_verdict,
        roll_plan,
    )
    from kafka_health.remediate import access
    from kafka_health.remediate.broker_pods import BrokerPodsError, find_node_pods
    from kafka_health.remediate.rolling_restart import (
        BrokerRestartOutcome,
        pods_one_at_a_time,
        run_roll,
    )

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
        if zookeeper_mode(snapshot):
            raise _fail(f"cannot roll {bootstrap_servers}: {ZOOKEEPER_MODE}")
        # The safety rules judge only the partitions the principal sees: with any hidden (or the
        # totals unchecked), a broker could be called safe while it leads what nobody checked.
        alive = [b.id for b in snapshot.brokers if b.alive]
        if (hidden := access.hidden_in(admin, {p.topic for p in snapshot.partitions}, alive)) is not None:
            raise _fail(f"cannot roll {bootstrap_servers}: {hidden}; nothing restarted")
        controllers = sorted(controller_only_nodes(snapshot))
        known = sorted(b.id for b in snapshot.brokers)
        default = known + (controllers if controller_spec is not None else [])
        wanted = ids if ids is not None else default
        unknown = [b for b in wanted if b not in known and b not in controllers]
        if unknown:
            raise _fail(
                f"node(s) {', '.join(map(str, unknown))} not in the cluster "
                f"(brokers: {known}; dedicated controllers: {controllers})"
            )
        if controller_spec is None and any(b in controllers for b in wanted):
            raise _fail(
                "dedicated controller(s) in --brokers: give their pods with --controller-statefulset "
                "or --controller-selector"
            )
        try:
            pods = find_node_pods(k8s, spec, controller_spec, namespace)
        except (BrokerPodsError, K8sError) as exc:
            raise _fail(str(exc)) from None
        no_pod = [b for b in wanted if b not in pods]
        if no_pod:
            raise _fail(f"no pod found for node(s) {', '.join(map(str, no_pod))}")

        plan = roll_plan(snapshot, wanted)
        order = [slot.node for slot in plan]
        rows: list[dict[str, Any]] = []
        for i, slot in enumerate(plan):
            safety = pods_one_at_a_time(
                check_restart_safety(snapshot, slot.node, remaining=order[i:], refuse_never_safe=refuse), pods
            )
            pod = pods[slot.node].pod
            rows.append(
                {
                    "node": slot.node,
                    "role": slot.role,
                    "why": slot.why,
                    "pod": pod.name,
                    "ready": pod.ready,
                    "safeNow": safety.safe,
                    "blockers": [b.model_dump(mode="json") for b in safety.blockers],
                    "skipped": [f"{x.topic}-{x.partition}" for x in safety.skipped],
                }
            )
        first_safe = bool(rows) and bool(rows[0]["safeNow"])
        if output is Output.json and not execute:
            nsv = never_safe_verdict(snapshot, order, refuse=refuse)
            doc = {
                "cluster": bootstrap_servers,
                "mode": "dryRun",
                "quorumLeader": snapshot.quorum.leader_id if snapshot.quorum else None,
                "order": order,
                "nodes": rows,
                "afterEach": {
                    "podReady": pod_ready,
                    "brokerRegistered": broker_registered,
                    "urpZero": urp_zero,
                    "pause": pause,
                    "controller": "back in the quorum, caught up (lag <= 100 records) since its new pod was Ready",
                },
                "electAfter": elect,
                "neverSafe": {
                    "choice": never_safe.value,
                    "refused": nsv.refused,
                    "partitions": nsv.partitions,
                },
            }
            typer.echo(json.dumps(doc, indent=2))
            raise typer.Exit(0 if first_safe and not nsv.refused else restart_honest.REFUSED)
        mode = "EXECUTE" if execute else "DRY RUN (add --execute to restart)"
        typer.echo(f"Rolling restart of {bootstrap_servers} — {mode}")
        typer.echo(
            f"Order: {', '.join(map(str, order))} (dedicated controllers first, the active one last of them; "
            "then brokers: non-voters, voters, the active controller last)"
        )
        typer.echo(
            f"After each: pod Ready ({pod_ready}), broker registered ({broker_registered}; a controller: back "
            f"in the quorum and caught up), URP 0 ({urp_zero}); pause {pause}; then "
            + ("preferred leader election for the restarted brokers" if elect else "no election")
        )
        typer.echo("")
        typer.echo(f"{'NODE':<8}{'POD':<28}{'READY':<7}{'ROLE':<19}VERDICT NOW")
        for row in rows:
            verdict = "safe" if row["safeNow"] else "BLOCKED"
            typer.echo(f"{row['node']:<8}{row['pod']:<28}{row['ready']!s:<7}{row['role']:<19}{verdict}")
            typer.echo(f"        why here: {row['why']}")
            for blocker in row["blockers"]:
                more = f": {', '.join(blocker['partitions'])}" if blocker["partitions"] else ""
                typer.echo(f"        - {blocker['rule']}: {blocker['message']}{more}")
            if row["skipped"] and not refuse:  # refused: the never_safe blocker names them
                names = ", ".join(row["skipped"][:20])
                typer.echo(
                    f"        - skipped (RF <= min.insync.replicas, unavailable to acks=all while it "
                    f"restarts): {len(row['skipped'])}: {names}"
                )
        typer.echo("")
        typer.echo(
            "(Verdicts are for the cluster as it is now; each is re-checked live right before its node.)"
        )
        if restart_honest.never_safe_gate(snapshot, order, never_safe).refused:
            raise typer.Exit(restart_honest.REFUSED)  # the operator's rule: nothing is touched
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
                controller_pods=controller_spec,
                refuse_never_safe=refuse,
                begun=begun,
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
    if report.result.state is RequestState.FAILED and report.outcomes:
        typer.echo(restart_honest.halt_lines(report.result, order))
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
