"""`kafka-health restart`, step 4 of 4 (options → plan → run → print): the plan as JSON or as a
table, the dry run's verdict, and the roll's result.

Every function here only prints and decides the exit code from what it is given: the cluster
was read in `restart_plan`, the roll run in `restart_run`.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import typer

from kafka_health.cli import restart_honest
from kafka_health.cli.restart_options import RestartOptions
from kafka_health.cli.restart_plan import NodeRow, RollPlan
from kafka_health.models.policy import RequestState
from kafka_health.plan.restart_safety import never_safe_verdict

if TYPE_CHECKING:
    from kafka_health.remediate.rolling_restart import RollReport

CONTROLLER_AFTER_EACH = "back in the quorum, caught up (lag <= 100 records) since its new pod was Ready"


def print_json(opts: RestartOptions, plan: RollPlan) -> typer.Exit:
    """The dry run's plan as one JSON object; the exit: 0 when the first node may restart now
    and the never-safe rule does not refuse the roll, else 1."""
    args, after = opts.args, opts.args.after_each
    nsv = never_safe_verdict(plan.snapshot, plan.order, refuse=opts.refuse)
    doc = {
        "cluster": args.bootstrap_servers,
        "mode": "dryRun",
        "quorumLeader": plan.snapshot.quorum.leader_id if plan.snapshot.quorum else None,
        "order": plan.order,
        "nodes": [row.as_json() for row in plan.rows],
        "afterEach": {
            "podReady": after.pod_ready,
            "brokerRegistered": after.broker_registered,
            "urpZero": after.urp_zero,
            "pause": after.pause,
            "controller": CONTROLLER_AFTER_EACH,
        },
        "electAfter": args.elect,
        "drainLeadership": args.drain_leadership,
        "batches": plan.batches.model_dump(mode="json", by_alias=True) if plan.batches else None,
        "neverSafe": {
            "choice": args.never_safe.value,
            "refused": nsv.refused,
            "partitions": nsv.partitions,
        },
    }
    typer.echo(json.dumps(doc, indent=2))
    return typer.Exit(0 if plan.first_safe and not nsv.refused else restart_honest.REFUSED)


def print_table(opts: RestartOptions, plan: RollPlan) -> None:
    """The order, the waits after each node, and each node's verdict now."""
    args, after = opts.args, opts.args.after_each
    mode = "EXECUTE" if args.execute else "DRY RUN (add --execute to restart)"
    typer.echo(f"Rolling restart of {args.bootstrap_servers} — {mode}")
    typer.echo(
        f"Order: {', '.join(map(str, plan.order))} (dedicated controllers first, the active one last of them; "
        "then brokers: non-voters, voters, the active controller last)"
    )
    typer.echo(
        f"After each: pod Ready ({after.pod_ready}), broker registered ({after.broker_registered}; a "
        f"controller: back in the quorum and caught up), URP 0 ({after.urp_zero}); pause {after.pause}; then "
        + ("preferred leader election for the restarted brokers" if args.elect else "no election")
    )
    typer.echo("")
    typer.echo(f"{'NODE':<8}{'POD':<28}{'READY':<7}{'ROLE':<19}VERDICT NOW")
    for row in plan.rows:
        _print_row(row, opts.refuse)
    if plan.batches is not None:
        _print_batches(plan)
    typer.echo("")
    typer.echo("(Verdicts are for the cluster as it is now; each is re-checked live right before its node.)")


def _print_batches(plan: RollPlan) -> None:
    """The batches planned now (each re-checked live before it restarts), and why."""
    b = plan.batches
    assert b is not None
    typer.echo("")
    typer.echo(f"Batches (maxConcurrent {b.max_concurrent}, batchBy {b.batch_by}): {len(b.batches)}")
    for i, batch in enumerate(b.batches, 1):
        typer.echo(f"  {i}. {', '.join(map(str, batch.nodes))}: {batch.why}")
    if b.apart_count:
        kept = "; ".join(f"{p.partition} (ISR {p.isr}, {p.at_once} at once)" for p in b.apart[:5])
        typer.echo(f"  kept apart by {b.apart_count} partition(s), e.g. {kept}")


def _print_row(row: NodeRow, refuse: bool) -> None:
    verdict = "safe" if row.safe_now else "BLOCKED"
    typer.echo(f"{row.node:<8}{row.pod:<28}{row.ready!s:<7}{row.role:<19}{verdict}")
    typer.echo(f"        why here: {row.why}")
    for blocker in row.blockers:
        more = f": {', '.join(blocker['partitions'])}" if blocker["partitions"] else ""
        typer.echo(f"        - {blocker['rule']}: {blocker['message']}{more}")
    if row.skipped and not refuse:  # refused: the never_safe blocker names them
        names = ", ".join(row.skipped[:20])
        typer.echo(
            f"        - skipped (RF <= min.insync.replicas, unavailable to acks=all while it "
            f"restarts): {len(row.skipped)}: {names}"
        )


def gate(opts: RestartOptions, plan: RollPlan) -> typer.Exit | None:
    """After the table: the exit when nothing is to be rolled (the never-safe rule refuses the
    roll, which is printed; or a dry run), None when the roll goes ahead."""
    if restart_honest.never_safe_gate(plan.snapshot, plan.order, opts.args.never_safe).refused:
        return typer.Exit(restart_honest.REFUSED)  # the operator's rule: nothing is touched
    if not opts.args.execute:
        return typer.Exit(0 if plan.first_safe else 1)
    return None


def print_report(report: RollReport, order: list[int]) -> typer.Exit:
    """The roll's result, how to finish a halted one, and the partitions whose election failed."""
    typer.echo(f"{report.result.state}: {report.result.message}")
    if report.result.state is RequestState.FAILED and report.outcomes:
        typer.echo(restart_honest.halt_lines(report.result, order))
    if report.election is not None:
        failed = [p for p in report.election.partitions if p.status == "failed"]
        for p in failed[:20]:
            typer.echo(f"  election failed for {p}: {p.message}")
    sys.stdout.flush()
    return typer.Exit(0 if report.ok else 1)
