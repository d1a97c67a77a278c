"""`kafka-health abort-transaction`: end a hanging transaction, dry-run unless --execute.

Like `kafka-transactions abort --topic T --partition P --start-offset O`, with the rule that
tool leaves to its user: only a hanging transaction is aborted (`plan.transaction_abort`: open
on that partition at that offset, not listed by its coordinator, its producer silent for longer
than the transaction timeout), and the partition is read again afterwards
(`remediate.transaction_abort`).

Exit codes, as `remediation_cli` lists them: 0 aborted (or, without --execute, found hanging and
printed), 2 usage error, 3 could not run (unreachable, hidden or unknown topic or partition, no
transaction open at that offset, the abort failed or did not take: `kafka-health diagnose
--hanging-transactions` shows the partition), 4 refused by a safety rule (the transaction is not
hanging, or its producer was heard from within the timeout).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from kafka_health.cli import kafka_options, quiet
from kafka_health.cli.kafka_options import Bootstrap
from kafka_health.cli.remediation_cli import (
    FAILED,
    REFUSED,
    Execute,
    Output,
    OutputOpt,
    _admin,
    _denied,
    _fail,
    _table,
)
from kafka_health.collect.kafka_admin import AdminCallError
from kafka_health.plan.transaction_abort import AbortRefusal
from kafka_health.remediate import access
from kafka_health.remediate.transaction_abort import AbortOutcome, AbortState, abort_hanging

_EXIT = {
    AbortState.ABORTED: 0,
    AbortState.PLANNED: 0,
    AbortState.FAILED: FAILED,
}


def abort_transaction(
    bootstrap_servers: Bootstrap,
    topic: Annotated[str, typer.Option("--topic", help="The partition's topic.")],
    partition: Annotated[int, typer.Option("--partition", min=0, help="The partition.")],
    start_offset: Annotated[
        int,
        typer.Option(
            "--start-offset", min=0, help="The transaction's first offset (find-hanging's StartOffset)."
        ),
    ],
    command_config: kafka_options.CommandConfig = None,
    max_transaction_timeout: Annotated[
        int,
        typer.Option(
            "--max-transaction-timeout",
            min=0,
            help="Minutes the producer must have been silent (the brokers' transaction.max.timeout.ms); 0: "
            "not checked, as find-hanging --max-transaction-timeout 0.",
        ),
    ] = 15,
    execute: Execute = False,
    output: OutputOpt = Output.table,
    verbose: quiet.Verbose = False,
    log_file: quiet.LogFile = None,
) -> None:
    """Abort a hanging transaction (KIP-664), as kafka-transactions abort --start-offset does,
    only when it is hanging; the partition is read again afterwards.

    Exit codes: 0 aborted (or found hanging, without --execute), 2 usage error, 3 could not run
    (also: no transaction open at that offset, or the abort did not take), 4 refused: not hanging.
    """
    quiet.start(verbose, log_file)
    try:
        with _admin(bootstrap_servers, command_config) as admin:
            outcome = abort_hanging(
                admin,
                topic,
                partition,
                start_offset,
                timeout=timedelta(minutes=max_transaction_timeout),
                clock=lambda: datetime.now(UTC),
                execute=execute,
            )
    except access.NotVisible as exc:
        raise _fail(f"{exc}; nothing aborted") from None
    except AdminCallError as exc:
        _denied("transactions", [(exc.reason, topic)])
        raise _fail(f"cannot read {topic}-{partition}: {exc.reason}; nothing aborted") from None
    _print(outcome, output, execute)
    if outcome.state is AbortState.FAILED:
        _denied("abort_transaction", [(outcome.message, None)])
    if outcome.state is AbortState.REFUSED:
        code = FAILED if outcome.refusal is AbortRefusal.NOT_FOUND else REFUSED
        raise _fail(f"{outcome.message}; nothing aborted", code)
    if _EXIT[outcome.state]:
        raise _fail(outcome.message, _EXIT[outcome.state])


def _print(outcome: AbortOutcome, output: Output, execute: bool) -> None:
    if output is Output.json:
        typer.echo(json.dumps({"executed": execute, "outcome": outcome.model_dump(mode="json")}, indent=2))
        return
    t = outcome.transaction
    if t is not None:
        header = [
            "TOPIC",
            "PARTITION",
            "START-OFFSET",
            "PRODUCER-ID",
            "EPOCH",
            "TRANSACTIONAL-ID",
            "COORDINATOR",
            "RESULT",
        ]
        row = [
            t.topic,
            str(t.partition),
            str(t.start_offset),
            str(t.producer_id),
            str(t.producer_epoch),
            t.transactional_id or "-",
            t.coordinator_state or "-",
            outcome.state.value,
        ]
        typer.echo(_table(header, [row]), nl=False)
    if outcome.state is not AbortState.REFUSED:
        typer.echo(outcome.message if execute else f"{outcome.message} (dry run: --execute aborts it)")
