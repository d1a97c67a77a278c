"""`kafka-health elect-leaders`: the operator's preferred leader election, standalone.

Same planner and executor as the operator (`plan_preferred_election` + `execute_election`),
dry-run by default. Exit codes as `remediation_cli` lists them (0 done, 1 some partition failed,
2 usage error, 3 could not run: also a hidden topic or partitions, or Kafka refusing the
election for the ALTER on CLUSTER ACL, with nothing elected).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from kafka_health.cli import kafka_options, quiet
from kafka_health.cli.kafka_options import Bootstrap
from kafka_health.cli.remediation_cli import (
    FAILED,
    PARTIAL,
    Execute,
    Output,
    OutputOpt,
    _admin,
    _denied,
    _fail,
    _refuse,
    _table,
)
from kafka_health.collect.kafka_admin import AdminCallError, ClusterMetadata, KafkaAdmin
from kafka_health.models.snapshot import ClusterSnapshot, Partition
from kafka_health.plan.leader_election_plan import ElectionPlan, electable, plan_preferred_election
from kafka_health.remediate import access
from kafka_health.remediate.leader_election import ElectionOutcome, ElectionStatus, execute_election


def _reason_not_electable(p: Partition, alive: set[int]) -> str:
    preferred = p.preferred_leader
    if preferred not in alive:
        return f"preferred {preferred} not alive"
    return f"preferred {preferred} not in ISR"


def elect_leaders(
    bootstrap_servers: Bootstrap,
    command_config: kafka_options.CommandConfig = None,
    topic: Annotated[
        list[str] | None,
        typer.Option("--topic", "-t", help="Only this topic (repeatable). Default: all topics."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Partitions per ElectLeaders request.")
    ] = 50,
    execute: Execute = False,
    output: OutputOpt = Output.table,
    verbose: quiet.Verbose = False,
    log_file: quiet.LogFile = None,
) -> None:
    """Preferred leader election, like `kafka-leader-election --election-type PREFERRED`.

    Only partitions whose preferred replica (the first replica) is alive, in the ISR and not the
    leader are elected, in batches; each batch is checked again live before it is sent.

    Before anything is elected, what the election acts on must be visible to the principal: a
    --topic it may not DESCRIBE is an authorization error naming that ACL; without --topic,
    partitions the brokers hold that its metadata leaves out (or totals it cannot check) refuse
    the election: it would otherwise claim "every partition is led by its preferred replica".

    Exit codes: 0 done, 1 some partition failed, 2 usage error, 3 could not run (also: a hidden
    topic or partitions, or Kafka refused the election for the ALTER on CLUSTER ACL; nothing elected).
    """
    quiet.start(verbose, log_file)
    with _admin(bootstrap_servers, command_config) as admin:
        md, partitions = _visible_partitions(admin, topic)
        snapshot = ClusterSnapshot(
            cluster=bootstrap_servers, taken_at=datetime.now(UTC), brokers=md.brokers, partitions=partitions
        )
        plan = plan_preferred_election(snapshot, batch_size=batch_size)
        outcome = execute_election(admin, plan) if execute and not plan.empty else None
    if output is Output.json:
        doc: dict[str, Any] = {
            "plan": plan.model_dump(mode="json"),
            "executed": execute,
            "outcome": outcome.model_dump(mode="json") if outcome else None,
        }
        typer.echo(json.dumps(doc, indent=2))
    else:
        _print_table(
            plan, outcome, _rows(partitions, {b.id for b in md.brokers}, outcome), execute, batch_size
        )
    if outcome is not None and not outcome.succeeded:
        _denied("elect_leaders", ((p.message, None) for p in outcome.partitions))
        # Kafka refused the election for an ACL (ALTER on CLUSTER) and nothing was elected: it
        # could not run, like any other authorization error; 1 is for a run that did part.
        refused = outcome.denied() is not None and outcome.count(ElectionStatus.ELECTED) == 0
        raise typer.Exit(FAILED if refused else PARTIAL)


def _visible_partitions(
    admin: KafkaAdmin, topic: list[str] | None
) -> tuple[ClusterMetadata, list[Partition]]:
    """The metadata and the partitions to elect among (--topic, or all); exit 3 when what the
    election acts on is hidden from the principal."""
    try:
        md = admin.metadata()
    except AdminCallError as exc:
        raise _fail(f"cannot read the cluster metadata: {exc.reason}") from None
    partitions = md.partitions
    listed = {p.topic for p in partitions}
    if topic:
        check = access.check_named_topics(admin, topic, listed)
        if not check.ok:
            raise _refuse(check.problems(), "nothing elected")
        partitions = [p for p in partitions if p.topic in set(topic)]
    elif (hidden := access.hidden_refusal(admin, md)) is not None:
        # An election of "every partition" over a partial view would claim what it did not do.
        raise _refuse([hidden], "nothing elected: an election of all partitions needs to see them all")
    return md, partitions


def _rows(partitions: list[Partition], alive: set[int], outcome: ElectionOutcome | None) -> list[list[str]]:
    """One row per partition not led by its preferred replica: what is (or was) done with it."""
    results = {(r.topic, r.partition): r for r in outcome.partitions} if outcome else {}
    rows = []
    for p in partitions:
        if p.preferred_leader is None or p.leader == p.preferred_leader:
            continue
        if electable(p, alive):
            r = results.get((p.topic, p.partition))
            action = (
                (r.status.value + (f" ({r.message})" if r.message and r.status.value != "elected" else ""))
                if r
                else "elect"
            )
        else:
            action = "skip: " + _reason_not_electable(p, alive)
        leader = "none" if p.leader is None else str(p.leader)
        rows.append(
            [
                p.topic,
                str(p.partition),
                f"{leader} -> {p.preferred_leader}",
                ",".join(map(str, p.isr)),
                action,
            ]
        )
    return rows


def _print_table(
    plan: ElectionPlan, outcome: ElectionOutcome | None, rows: list[list[str]], execute: bool, batch_size: int
) -> None:
    mode = "EXECUTED" if execute else "DRY RUN (use --execute to elect)"
    if outcome is not None and not outcome.succeeded:
        mode = "REFUSED BY KAFKA" if outcome.denied() else "EXECUTED, SOME FAILED"
    typer.echo(
        f"Preferred leader election, {mode}: {len(plan.partitions)} partition(s) to elect in "
        f"{len(plan.batches)} batch(es) of at most {batch_size}"
    )
    if rows:
        header = ["TOPIC", "PARTITION", "LEADER -> PREFERRED", "ISR", "RESULT" if execute else "PLAN"]
        typer.echo(_table(header, rows), nl=False)
    else:
        typer.echo("Every partition is led by its preferred replica.")
    if outcome is not None:
        elected = [str(p) for p in outcome.partitions if p.status is ElectionStatus.ELECTED]
        not_needed = [str(p) for p in outcome.partitions if p.status is ElectionStatus.NOT_NEEDED]
        if elected:
            typer.echo(
                f"Successfully completed leader election (PREFERRED) for partitions {', '.join(elected)}"
            )
        if not_needed:
            typer.echo(f"Valid replica already elected for partitions {', '.join(not_needed)}")
        typer.echo(outcome.summary())
