"""`kafka-health diagnose`: one diagnosis of a cluster, no Kubernetes needed.

collect (Kafka admin) → optionally append to a history → Spark checks → table, JSON or HTML.
Exit codes: 0 healthy, 1 warnings, 4 critical; 2 a usage error (click's: unknown option, bad
option value, conflicting options); 3 the command could not run (unreadable snapshot file,
Spark failure, or the cluster refused the client's security settings: authentication failed, TLS
handshake failed, security protocol mismatch; stderr names the setting to fix; a ZooKeeper-mode
cluster, which is not supported). An unreachable
cluster is a critical finding (4), not a failure of the command; so are partitions the principal
may not see (the `visibility` finding: 4 when half the cluster or more is hidden, else 1), and
log dirs it may not read, which leave the totals unchecked (1).
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_health.cli import kafka_options, quiet
from kafka_health.collect import security_errors
from kafka_health.collect.connection import ConnectionConfig
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import ZOOKEEPER_MODE
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy.diagnostics import TimeLag
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark.thresholds import ThresholdError, Thresholds, parse_overrides

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HEALTHY, WARNINGS, USAGE, FAILED, CRITICAL = 0, 1, 2, 3, 4


class Output(StrEnum):
    table = "table"
    json = "json"
    html = "html"


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(FAILED)


def collect(
    connection: ConnectionConfig,
    cluster: str,
    transactions_older_than: timedelta | None = None,
    *,
    exact_lag: bool = False,
) -> ClusterSnapshot:
    """Read the cluster once (every admin call bounded; an unreachable cluster is a finding)."""
    from kafka_health.collect.snapshot import collect_snapshot

    with KafkaAdmin(connection) as admin:
        return collect_snapshot(
            admin,
            cluster,
            lambda: datetime.now(UTC),
            transactions_older_than=transactions_older_than,
            exact_lag=exact_lag,
        )


def _start_spark(**session: Any) -> Future[SparkSession]:
    """`get_session(**session)` in a daemon thread; the future holds the session or its error.
    A command that fails before it needs Spark exits without waiting (the JVM ends with it)."""
    started: Future[SparkSession] = Future()

    def run() -> None:
        try:
            from kafka_health_spark.session import get_session

            started.set_result(get_session(**session))
        except BaseException as exc:  # handed to the caller, which reports it
            started.set_exception(exc)

    threading.Thread(target=run, name="spark-start", daemon=True).start()
    return started


def render(diagnosis: Diagnosis, output: Output, members: bool = False) -> str:
    if output is Output.json:
        return diagnosis.model_dump_json(indent=2) + "\n"
    if output is Output.html:
        from kafka_health.report import html

        return html.render(diagnosis)
    from kafka_health.report import table

    return table.render(diagnosis, members=members)


Bootstrap = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-servers",
        "-b",
        envvar="KAFKA_BOOTSTRAP_SERVERS",
        help="HOST:PORT[,HOST:PORT...] of the cluster to read.",
    ),
]
SnapshotFile = Annotated[
    Path | None,
    typer.Option(
        "--snapshot",
        help="Diagnose a saved ClusterSnapshot (JSON) instead of reading a cluster, "
        "e.g. <history>/latest/cluster=<name>/snapshot.json.",
        exists=True,
        dir_okay=False,
    ),
]
SaveSnapshot = Annotated[
    Path | None, typer.Option("--save-snapshot", help="Also write the snapshot read (JSON) here.")
]
Cluster = Annotated[
    str | None,
    typer.Option(help="Name of the cluster in the history and the report (default: the bootstrap servers)."),
]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="table, json or html.")]
Members = Annotated[
    bool,
    typer.Option(
        "--members",
        help="table: list each incident's findings under it (json and html always carry them).",
    ),
]
Out = Annotated[Path | None, typer.Option("--out", help="Write the report to FILE instead of stdout.")]
History = Annotated[
    Path | None,
    typer.Option(
        "--history",
        help="History directory: windowed checks (flapping, lag status, rebalances, disk growth) "
        "read it, and the new snapshot is appended to it.",
    ),
]
Record = Annotated[bool, typer.Option(help="Append the snapshot to --history (--no-record: only read it).")]
SparkMaster = Annotated[
    str | None, typer.Option("--spark-master", help="Spark master URL (default: embedded local[*]).")
]
SparkRemote = Annotated[str | None, typer.Option("--spark-remote", help="Spark Connect URL, sc://host:port.")]
SparkDriverMemory = Annotated[
    str, typer.Option(help="Memory of the embedded Spark driver (when this command starts it).")
]
Threshold = Annotated[
    list[str] | None,
    typer.Option("--threshold", "-t", help="Override a threshold: NAME=VALUE (repeatable)."),
]
HangingTransactions = Annotated[
    bool,
    typer.Option(
        "--hanging-transactions",
        help="Also look for hanging transactions, as kafka-transactions find-hanging does (needs READ "
        "on TOPIC and DESCRIBE on TRANSACTIONAL_ID).",
    ),
]
TimeLagOpt = Annotated[
    TimeLag,
    typer.Option(
        "--time-lag",
        case_sensitive=False,
        help="How lag in seconds is measured: Interpolated (between the history's samples) or Exact "
        "(now minus the timestamp of the record at the committed offset, fetched: needs READ on the "
        "topics; as the policy's consumerLag.timeLag).",
    ),
]
MaxTransactionTimeout = Annotated[
    int,
    typer.Option(
        "--max-transaction-timeout",
        min=1,
        help="With --hanging-transactions: minutes since a producer was last heard from before its "
        "open transaction is looked at (the brokers' transaction.max.timeout.ms).",
    ),
]


@dataclass(frozen=True)
class DiagnoseOptions:
    """The command line of `diagnose`, as typer hands it over."""

    bootstrap_servers: str | None
    command_config: Path | None
    snapshot_file: Path | None
    save_snapshot: Path | None
    cluster: str | None
    output: Output
    members: bool
    out: Path | None
    history: Path | None
    record: bool
    spark_master: str | None
    spark_remote: str | None
    spark_driver_memory: str
    threshold: list[str] | None
    transactions_older_than: timedelta | None = None
    exact_lag: bool = False


def diagnose(
    bootstrap_servers: Bootstrap = None,
    command_config: kafka_options.CommandConfig = None,
    snapshot_file: SnapshotFile = None,
    save_snapshot: SaveSnapshot = None,
    cluster: Cluster = None,
    output: OutputOpt = Output.table,
    members: Members = False,
    out: Out = None,
    history: History = None,
    record: Record = True,
    spark_master: SparkMaster = None,
    spark_remote: SparkRemote = None,
    spark_driver_memory: SparkDriverMemory = "1g",
    threshold: Threshold = None,
    hanging_transactions: HangingTransactions = False,
    max_transaction_timeout: MaxTransactionTimeout = 15,
    time_lag: TimeLagOpt = TimeLag.INTERPOLATED,
    verbose: quiet.Verbose = False,
    log_file: quiet.LogFile = None,
) -> None:
    """Read a Kafka cluster, run the Spark checks, print the incidents: findings grouped by root
    cause (a broker down, a never-safe topic, a lagging group, ...), worst first.

    Exit codes: 0 healthy, 1 warnings, 4 critical (an unreachable cluster is critical; partitions
    hidden from the principal are a warning, critical when half the cluster or more);
    2 usage error; 3 the command could not run (unreadable snapshot, Spark failure, the cluster
    refused the security settings: authentication, TLS, protocol; a ZooKeeper-mode cluster).
    """
    opts = DiagnoseOptions(
        bootstrap_servers=bootstrap_servers,
        command_config=command_config,
        snapshot_file=snapshot_file,
        save_snapshot=save_snapshot,
        cluster=cluster,
        output=output,
        members=members,
        out=out,
        history=history,
        record=record,
        spark_master=spark_master,
        spark_remote=spark_remote,
        spark_driver_memory=spark_driver_memory,
        threshold=threshold,
        transactions_older_than=timedelta(minutes=max_transaction_timeout) if hanging_transactions else None,
        exact_lag=time_lag is TimeLag.EXACT,
    )
    thresholds, connection = _check(opts)
    log = quiet.start(verbose, log_file)
    # The JVM starts while the cluster is read: the two take seconds each and need nothing of
    # each other (bench/oneshot_bench.py).
    spark_session = _start_spark(
        master=spark_master, remote=spark_remote, driver_memory=spark_driver_memory, short_lived=True
    )
    snapshot = _snapshot(opts, connection)
    _keep(opts, snapshot)
    diagnosis = _diagnose(opts, snapshot, thresholds, spark_session, f" (details: {log})" if log else "")
    _write(opts, diagnosis)
    raise typer.Exit(diagnosis.exit_code())


def _check(opts: DiagnoseOptions) -> tuple[Thresholds, ConnectionConfig | None]:
    """The usage errors (exit 2) and a missing report extra (exit 3), before anything starts
    (a bad --command-config among them: the Spark JVM is not started for a command that fails);
    the thresholds, and the connection when a cluster is to be read."""
    if (opts.bootstrap_servers is None) == (opts.snapshot_file is None):
        raise typer.BadParameter(
            "give exactly one of --bootstrap-servers or --snapshot", param_hint="--bootstrap-servers"
        )
    if opts.spark_master and opts.spark_remote:
        raise typer.BadParameter(
            "give at most one of --spark-master and --spark-remote", param_hint="--spark-remote"
        )
    if opts.output is Output.html:
        try:
            from kafka_health.report import html  # noqa: F401
        except ImportError as exc:
            raise _fail(
                f"-o html needs the report extra ({exc.name} is missing): "
                "pip install 'kafka-health-operator[report]'"
            ) from exc
    try:
        thresholds = Thresholds().with_overrides(parse_overrides(opts.threshold or []))
    except ThresholdError as exc:
        raise typer.BadParameter(str(exc), param_hint="--threshold") from exc
    if opts.bootstrap_servers is None:
        return thresholds, None
    return thresholds, kafka_options.connection(opts.bootstrap_servers, opts.command_config)


def _snapshot(opts: DiagnoseOptions, connection: ConnectionConfig | None) -> ClusterSnapshot:
    """The snapshot to diagnose: the --snapshot file, or the cluster read now (exit 3 when the
    file is no snapshot or the cluster refused the client's security settings)."""
    if opts.snapshot_file is not None:
        try:
            snapshot = ClusterSnapshot.model_validate_json(opts.snapshot_file.read_text())
        except ValueError as exc:
            raise _fail(f"{opts.snapshot_file} is not a ClusterSnapshot: {exc}") from exc
        return snapshot.model_copy(update={"cluster": opts.cluster}) if opts.cluster else snapshot
    bootstrap = opts.bootstrap_servers
    assert bootstrap is not None and connection is not None
    with quiet.progress(f"reading {bootstrap}"):
        snapshot = collect(
            connection, opts.cluster or bootstrap, opts.transactions_older_than, exact_lag=opts.exact_lag
        )
    refused = next((m.reason for m in snapshot.missing if m.part == "metadata"), "")
    if security_errors.kind_of(refused) is not None:  # a setting to fix, not a cluster's health
        raise _fail(f"cannot read {bootstrap}: {refused}")
    return snapshot


def _keep(opts: DiagnoseOptions, snapshot: ClusterSnapshot) -> None:
    """Refuse a ZooKeeper-mode cluster; save the snapshot (--save-snapshot) and append it to the
    history (--history, unless --no-record or unreachable)."""
    from kafka_health.collect.snapshot import zookeeper_mode

    if zookeeper_mode(snapshot):  # KRaft only: refused, not half diagnosed
        raise _fail(f"cannot diagnose {snapshot.cluster}: {ZOOKEEPER_MODE}")
    if opts.save_snapshot is not None:
        opts.save_snapshot.write_text(snapshot.model_dump_json(indent=2))
    if opts.history is not None and opts.record and snapshot.reachable:
        from kafka_health.history.store import HistoryStore

        with quiet.progress(f"appending to {opts.history}"):
            result = HistoryStore(opts.history).append(snapshot)
        if result.skipped:
            typer.secho(f"history: not appended ({result.skipped})", err=True)


def _diagnose(
    opts: DiagnoseOptions,
    snapshot: ClusterSnapshot,
    thresholds: Thresholds,
    spark_session: Future[SparkSession],
    see_log: str,
) -> Diagnosis:
    """The Spark checks; exit 3 naming the cause when they fail (a driver out of heap: raise
    --spark-driver-memory)."""
    from kafka_health.diagnose import run_diagnosis

    history = opts.history
    try:
        with quiet.progress("starting Spark"):
            spark = spark_session.result()
        with quiet.progress("diagnosing" + (f" (reading {history})" if history else "")):
            return run_diagnosis(snapshot, history, thresholds, spark)
    except Exception as exc:  # Spark reports JVM and connection errors as many types
        from kafka_health_spark.session import OUT_OF_MEMORY_EXIT_CODE, driver_exit, lost_connection

        started = spark_session.done() and spark_session.exception() is None
        if (
            started
            and lost_connection(exc)
            and driver_exit(spark_session.result(), wait_s=10) == OUT_OF_MEMORY_EXIT_CODE
        ):
            raise _fail(
                "the diagnosis failed: the Spark driver ran out of heap (its JVM exited with code 3); "
                "raise --spark-driver-memory"
            ) from exc
        raise _fail(f"the diagnosis failed: {type(exc).__name__}: {exc}{see_log}") from exc


def _write(opts: DiagnoseOptions, diagnosis: Diagnosis) -> None:
    text = render(diagnosis, opts.output, opts.members)
    if opts.out is not None:
        opts.out.write_text(text)
        typer.echo(f"{opts.output.value} report written to {opts.out}", err=True)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
