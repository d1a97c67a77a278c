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

The command is four steps, each in its module: `restart_options` (the options, checked),
`restart_plan` (read the cluster and the pods, judge each node now), `restart_run` (the roll,
under the Lease) and `restart_print` (JSON, table, result).
"""

from __future__ import annotations

import typer

from kafka_health.cli import kafka_options, quiet, restart_plan, restart_print, restart_run
from kafka_health.cli.kafka_options import Bootstrap
from kafka_health.cli.restart_honest import NeverSafe
from kafka_health.cli.restart_options import (
    AfterEach,
    BatchByOpt,
    BatchByOption,
    BrokerIdLabel,
    BrokerRegistered,
    Brokers,
    ControllerIdLabel,
    ControllerOrdinalOffset,
    ControllerSelector,
    ControllerStatefulSet,
    DrainLeadership,
    Elect,
    Execute,
    Kubeconfig,
    LockNamespace,
    MaxConcurrent,
    Namespace,
    NeverSafeOpt,
    OrdinalOffset,
    Output,
    OutputOpt,
    Pause,
    PodOptions,
    PodReady,
    RequestId,
    RestartArgs,
    RestartBegunOpt,
    RestartOptions,
    Selector,
    StatefulSet,
    UrpZero,
    check,
)


def restart(
    bootstrap_servers: Bootstrap,
    namespace: Namespace,
    command_config: kafka_options.CommandConfig = None,
    statefulset: StatefulSet = None,
    selector: Selector = None,
    broker_id_label: BrokerIdLabel = None,
    ordinal_offset: OrdinalOffset = 0,
    controller_statefulset: ControllerStatefulSet = None,
    controller_selector: ControllerSelector = None,
    controller_id_label: ControllerIdLabel = None,
    controller_ordinal_offset: ControllerOrdinalOffset = 0,
    brokers: Brokers = None,
    pause: Pause = "30s",
    pod_ready: PodReady = "10m",
    broker_registered: BrokerRegistered = "5m",
    urp_zero: UrpZero = "15m",
    elect: Elect = True,
    execute: Execute = False,
    kubeconfig: Kubeconfig = None,
    request_id: RequestId = None,
    lock_namespace: LockNamespace = None,
    output: OutputOpt = Output.table,
    never_safe: NeverSafeOpt = NeverSafe.refuse,
    restart_begun: RestartBegunOpt = None,
    max_concurrent: MaxConcurrent = 1,
    batch_by: BatchByOption = BatchByOpt.rack,
    drain_leadership: DrainLeadership = False,
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
    args = RestartArgs(
        bootstrap_servers=bootstrap_servers,
        namespace=namespace,
        command_config=command_config,
        brokers=PodOptions(statefulset, selector, broker_id_label, ordinal_offset),
        controllers=PodOptions(
            controller_statefulset, controller_selector, controller_id_label, controller_ordinal_offset
        ),
        nodes=brokers,
        after_each=AfterEach(
            pause=pause, pod_ready=pod_ready, broker_registered=broker_registered, urp_zero=urp_zero
        ),
        elect=elect,
        execute=execute,
        kubeconfig=kubeconfig,
        request_id=request_id,
        lock_namespace=lock_namespace,
        output=output,
        never_safe=never_safe,
        restart_begun=restart_begun,
        max_concurrent=max_concurrent,
        batch_by=batch_by,
        drain_leadership=drain_leadership,
    )
    raise _restart(check(args))


def _restart(opts: RestartOptions) -> typer.Exit:
    """Plan, print, and (with --execute, unless refused) roll; the exit to raise."""
    k8s = restart_plan.kubernetes(opts.args.kubeconfig)
    with restart_plan.admin(opts) as kafka:
        plan = restart_plan.plan_roll(opts, k8s, kafka)
        if opts.args.output is Output.json:  # --execute with json was refused by `check`
            return restart_print.print_json(opts, plan)
        restart_print.print_table(opts, plan)
        if (stop := restart_print.gate(opts, plan)) is not None:
            return stop
        report = restart_run.run(opts, plan, k8s, kafka)
    return restart_print.print_report(report, plan.order)
