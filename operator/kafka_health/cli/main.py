"""Entry point of the `kafka-health` console script; each stage registers its subcommands here."""

from __future__ import annotations

import typer

from kafka_health.cli.crd import crd
from kafka_health.cli.diagnose import diagnose
from kafka_health.cli.elect_cli import elect_leaders
from kafka_health.cli.operator import operator
from kafka_health.cli.remediation_cli import reset_offsets
from kafka_health.cli.restart_cli import restart
from kafka_health.cli.transaction_cli import abort_transaction

app = typer.Typer(
    name="kafka-health",
    help="Diagnose Apache Kafka clusters and run guarded remediations.",
    no_args_is_help=True,
    add_completion=False,
    # Plain click help: no Rich markup, so "[log start, log end]" in a help text stays as written.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
try:
    from kafka_health.testbed.cli import app as testbed_app
except ImportError:  # the operator image leaves the testbed out (Dockerfile)
    pass
else:
    app.add_typer(testbed_app, name="testbed")
app.command()(crd)
app.command("diagnose")(diagnose)
app.command("operator")(operator)
app.command("restart")(restart)
app.command("elect-leaders")(elect_leaders)
app.command("reset-offsets")(reset_offsets)
app.command("abort-transaction")(abort_transaction)


if __name__ == "__main__":  # pragma: no cover
    app()
