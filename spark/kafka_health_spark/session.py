"""The one SparkSession of a process: embedded `local[*]`, a Spark cluster, or Spark Connect.

A cold session costs ~10 s, so every diagnosis in a process reuses the same one. The settings
suit small, frequent jobs (measured with bench/diagnose_bench.py, docs/diagnostics.md
"Performance"):
- a code-generation cache large enough for a whole cycle: one diagnosis generates about 300
  classes and Spark's default cache keeps 100, so with the default every warm cycle compiled
  ~290 classes again with Janino (a third of the driver's CPU);
- adaptive query execution off: re-planning each stage costs more than it saves on tables of
  thousands of rows, and fewer jobs run (58 → 34 per cycle);
- no automatic broadcast joins: every table here is small, and each broadcast is one more Spark
  job per join (a warm 10k cycle ran 67 jobs with them, 36 without, same findings);
- PySpark's DataFrame debugging off: with it on, every column function call made about ten
  extra Py4J round trips to record its Python call site (a warm 10k cycle made ~31k calls with
  it, ~13k without);
- few shuffle partitions, no UI, UTC session time (history timestamps are UTC), Spark's own
  logging reduced to errors on stderr.

A long-lived driver JVM (the operator's) keeps G1 but grows its heap only as far as it needs:
`GCTimeRatio=4` lets the collector spend up to 20 % of its time before it grows the heap
(G1's default, 12, grows it at 8 %), and the free-ratio bounds give back what a cycle no longer
uses. A warm 10k-partition cycle then peaks at 1,479 MiB for Python and the JVM together
instead of 1,707 MiB (the whole 1g heap committed), at the same speed, and 100k still runs in
the 1g default (2,054 MiB); measured with bench/diagnose_bench.py --mode operator.

A driver that runs a policy's plans again every cycle (a local master with the plan jar:
`reuse`) compiles with both of HotSpot's JIT tiers: its generated classes are made once, so the
optimizing compiler (C2) compiles them and Spark's code around them once, and a warm 1M-partition
cycle then took 6.6 to 7.0 s of serial time instead of 11.5 s with the first tier only (C1)
(docs/diagnostics.md, 2026-11-26). A driver that builds its plans every cycle (another master, or
no plan jar) compiles with C1 only: every cycle brings new generated classes (each carries the
cycle's times), and C2 spent ~2.5 of a warm 10k cycle's ~9 CPU-seconds compiling them and
re-compiling Spark's code around them; C1 compiles them for a tenth of that. C1 alone gets a
48 MB code cache by default, which fills within the first cycles (the JIT then stops for good),
so the cache is reserved at tiered compilation's default, 240 MB, either way.

Every session also cuts what each task allocates, so the collector runs less often (a Spark
Connect session gets only the aggregation map setting; the others are static): a hash
aggregation's first memory page (sized for the heap: 16 MB here, zeroed for tables of thousands
of rows) is 1 MB, each
broadcast (every stage broadcasts its task) is cut into 256 KB blocks instead of one 4 MB
buffer, and the second-level aggregation hash map (one more set of buffers per aggregating task)
is off. Measured per thread of the driver JVM, docs/diagnostics.md "Performance".

The status store of a session this process starts (what Spark's UI and status API read; a Spark
Connect server keeps its own settings) keeps the last 100 jobs,
stages and SQL executions instead of 1,000: nothing reads more (the UI is off), and each SQL
execution is kept with its plan's text and graph. Over 160 operator cycles at 10k partitions the
heap still used after a full collection went 292 → 263 MiB and the peak RSS 1,601 → 1,531 MiB.

A short-lived embedded session (`kafka-health diagnose`: one diagnosis, then the JVM exits) is
tuned for a cold JVM instead: the JIT's first tier only and the serial collector (HotSpot's
optimizing compiler and G1's threads compete with the work for 2 cores and never pay back in
one run), and Spark's expression interpreter instead of generated code (compiling ~300 classes
with Janino costs more than interpreting a run's rows). Measured with bench/oneshot_bench.py
and on a saved 100k-partition snapshot (same findings; docs/diagnostics.md "Performance").

A short-lived JVM also maps the class archive when one was built for its JDK and Spark
(`class_archive`): half of a cold start is loading classes. A long-lived one does not, unless
asked (`KAFKA_HEALTH_SPARK_CLASS_ARCHIVE_LONG_LIVED=1`): the mapped archive costs its RSS more
than the seconds it saves once.

`KAFKA_HEALTH_SPARK_JAVA_OPTIONS` adds the user's own options to every driver JVM this process
starts, after these (HotSpot takes the last of two conflicting flags). The test suite sets
`-XX:TieredStopAtLevel=1 -XX:+UseSerialGC` there: its operators live for a few cycles, too short
for C2 and G1's threads to pay back.

Every JVM this process starts exits on its first `OutOfMemoryError` (exit code 3): a task that
ran out of heap otherwise left its job waiting for ever with no task running, and the thread
that collected it blocked for good. An exited JVM fails the calls under way at once;
`driver_exit` tells it apart, and `discard_exited_session` lets the next `get_session` start a
new one.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView
from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafka_health_spark import class_archive, plan_jar

DEFAULT_MASTER = "local[*]"
DEFAULT_SHUFFLE_PARTITIONS = 2
# Static: applies when this process starts the JVM (a Spark cluster's driver is this process too).
CODEGEN_CACHE_ENTRIES = "4096"
# Every JVM this process starts: an out-of-heap JVM exits (code 3) rather than hang its jobs.
EXIT_ON_OUT_OF_MEMORY = "-XX:+ExitOnOutOfMemoryError"
OUT_OF_MEMORY_EXIT_CODE = 3
# A driver JVM that lives for many cycles (see the module docstring).
LONG_LIVED_JAVA_OPTIONS = (
    "-XX:GCTimeRatio=4 -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30 -XX:ReservedCodeCacheSize=240m"
)
# ... whose plans are built every cycle (no plan jar, or not a local master): C1 only.
REBUILT_PLANS_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
# Static settings (read when the JVM's Spark context starts): less allocated per task.
ALLOCATION_CONF = {"spark.buffer.pageSize": "1m", "spark.broadcast.blockSize": "256k"}
# Static too: how many finished jobs, stages, tasks and SQL executions Spark's status store keeps
# for its UI and status API (defaults 1,000 / 1,000 / 100,000 / 1,000). Nothing here reads them
# past the last few (the UI is off), and a cycle runs ~35 SQL executions, each kept with its
# plan's text and graph: the defaults hold about 30 cycles' worth.
STATUS_RETENTION_CONF = {
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.ui.retainedTasks": "1000",
    "spark.sql.ui.retainedExecutions": "100",
}
# A JVM that runs one diagnosis and exits (see the module docstring).
SHORT_LIVED_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Writing a class archive at exit takes ~10 s on 2 cores.
JVM_EXIT_TIMEOUT_S = 120
SHORT_LIVED_CONF = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
# The user's own driver JVM options, after ours (the last of two conflicting flags wins).
JAVA_OPTIONS_ENV = "KAFKA_HEALTH_SPARK_JAVA_OPTIONS"


_jvm_generation = 0


def jvm_generation() -> int:
    """Which driver JVM of this process is current: 0 for the first, one more after each
    `discard_exited_session`. What is kept per JVM (prepared columns) is keyed on it: the
    gateway object's `id()` could be reused by the next gateway."""
    return _jvm_generation


class SessionConflictError(RuntimeError):
    """A session of another kind (embedded vs. Spark Connect) already exists in this process."""


def _log4j_config() -> Path:
    return Path(str(resources.files("kafka_health_spark") / "log4j2.properties"))


def get_session(
    *,
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "kafka-health",
    shuffle_partitions: int = DEFAULT_SHUFFLE_PARTITIONS,
    driver_memory: str = "1g",
    conf: dict[str, str] | None = None,
    short_lived: bool = False,
    record_classes_to: Path | None = None,
) -> SparkSession:
    """Get or create the process's session.

    `remote` (``sc://host:port``) connects through Spark Connect; otherwise `master` is a Spark
    master URL (``spark://…``, ``yarn``, ``k8s://…``) or, by default, embedded ``local[*]``.
    `driver_memory` only applies when this call starts the JVM; so does `short_lived` (one
    diagnosis, then exit: tuned for a cold JVM), and only for an embedded ``local`` master.
    `record_classes_to` makes the JVM write a class archive there when it exits (`class_archive`;
    `stop_session(wait_for_jvm=True)` waits for it).
    """
    if master and remote:
        raise ValueError("give either a Spark master or a Spark Connect URL, not both")
    runtime = {
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        # A snapshot becomes one Spark partition per Arrow batch: 100k rows keeps a 1M-partition
        # cluster at 10 tasks per scan instead of 100.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.sql.codegen.aggregate.map.twolevel.enabled": "false",
        **(conf or {}),
    }
    if remote:
        return _connect(remote, app_name, runtime)
    return _embedded_or_cluster(
        master or DEFAULT_MASTER, app_name, driver_memory, runtime, short_lived, record_classes_to
    )


def _connect(remote: str, app_name: str, runtime: dict[str, str]) -> SparkSession:
    """A Spark Connect session: the settings are runtime confs, set on the server's session."""
    existing = SparkSession.getActiveSession()
    if existing is not None and not is_connect(existing):
        raise SessionConflictError("an embedded SparkSession already runs in this process")
    session = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    for key, value in runtime.items():
        session.conf.set(key, value)
    return session


def _jvm_settings(
    target: str, runtime: dict[str, str], short_lived: bool, record_classes_to: Path | None
) -> tuple[str, dict[str, str]]:
    """The driver JVM's options and the confs for this start, the user's options
    (`KAFKA_HEALTH_SPARK_JAVA_OPTIONS`) last so that they win over ours."""
    java_options, confs = _our_jvm_settings(target, runtime, short_lived, record_classes_to)
    extra = os.environ.get(JAVA_OPTIONS_ENV, "").strip()
    return (f"{java_options} {extra}" if extra else java_options), confs


def _our_jvm_settings(
    target: str, runtime: dict[str, str], short_lived: bool, record_classes_to: Path | None
) -> tuple[str, dict[str, str]]:
    """A short-lived local JVM maps the class archive; a long-lived one gets the options for
    reused plans (or for rebuilt ones without the plan jar). Every local JVM this call starts
    has the plan jar on its class path: the one class archive then fits both kinds."""
    java_options = f"-Dlog4j2.configurationFile={_log4j_config().as_uri()} {EXIT_ON_OUT_OF_MEMORY}"
    starts_local_jvm = SparkContext._active_spark_context is None and target.startswith("local")
    if short_lived and starts_local_jvm:
        java_options += f" {class_archive.java_options(record_classes_to)} {SHORT_LIVED_JAVA_OPTIONS}"
        # Only a jar already built: a one-shot JVM never waits for javac.
        return java_options, {**_with_jar(plan_jar.existing()), **SHORT_LIVED_CONF, **runtime}
    # No class archive by default for a JVM that lives for days: mapped, it added ~590 MiB to the
    # operator's peak RSS at 10k partitions (2,003 vs 1,415 MiB) to save ~3 s once at start.
    archive = class_archive.wanted_in_long_lived_jvms() and starts_local_jvm
    java_options += f" {class_archive.java_options() if archive else class_archive.JVM_LOG_TO_STDERR}"
    java_options += f" {LONG_LIVED_JAVA_OPTIONS}"
    # The slot data source a policy's reused plans read (`reuse`); only a local master's
    # tasks share the driver's JVM, where the slots are.
    jar = plan_jar.ensure() if starts_local_jvm else None
    if jar is not None:
        return java_options, {**_with_jar(jar), **runtime}
    return java_options + f" {REBUILT_PLANS_JAVA_OPTIONS}", runtime


def _with_jar(jar: Path | None) -> dict[str, str]:
    return {"spark.driver.extraClassPath": str(jar)} if jar is not None else {}


def _embedded_or_cluster(
    target: str,
    app_name: str,
    driver_memory: str,
    runtime: dict[str, str],
    short_lived: bool,
    record_classes_to: Path | None,
) -> SparkSession:
    """A classic session on `target` (embedded ``local[*]`` by default, or a cluster master)."""
    if target.startswith("local"):
        # Bind the embedded driver to loopback: no firewall prompts, no "resolves to a loopback" warning.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_options, runtime = _jvm_settings(target, runtime, short_lived, record_classes_to)
    builder = (
        SparkSession.builder.master(target)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.codegen.cache.maxEntries", CODEGEN_CACHE_ENTRIES)
        # Read once by PySpark when the first column function runs: it must be set at start.
        .config("spark.python.sql.dataFrameDebugging.enabled", "false")
    )
    for key, value in {**ALLOCATION_CONF, **STATUS_RETENTION_CONF, **runtime}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if is_connect(session):
        raise SessionConflictError("a Spark Connect session already runs in this process")
    session.sparkContext.setLogLevel("ERROR")
    _remember_jvm_lookups(session.sparkContext)
    return session


class _RememberingJavaClass(JavaClass):
    """A JVM class whose static methods are looked up once, not before every call."""

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if isinstance(found, JavaMember):
            self.__dict__[name] = found  # found by normal lookup from now on: no round trip
        return found


class _RememberingJVMView(JVMView):
    """The gateway's view of the JVM, resolving each class name once.

    PySpark resolves the JVM class and then the static method behind every column function
    (`F.col`, `F.when`, ...) and every list of columns (`PythonUtils.toSeq`) through two Py4J
    round trips before the call itself: about 4,000 of the ~13,000 round trips of a warm
    10k-partition cycle. Class names and methods do not change while the JVM runs."""

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if type(found) is JavaClass:
            found = _RememberingJavaClass(found._fqn, found._gateway_client)
            self.__dict__[name] = found
        return found


def _remember_jvm_lookups(sc: SparkContext) -> None:
    jvm = sc._jvm
    if jvm is not None and type(jvm) is JVMView:
        jvm.__class__ = _RememberingJVMView


def bind_to_thread(session: SparkSession) -> None:
    """Make `session` the active one of the JVM thread serving this Python thread (Spark Classic).

    PySpark pins each Python thread to a JVM thread of its own, and only the thread that built
    the session has it active there. Elsewhere Spark's SQL settings (`SQLConf.get`) fall back to
    the defaults: the session's UTC time zone, its few shuffle partitions, adaptive execution and
    automatic broadcasts off, the expression interpreter of a short-lived session, all lost, in
    whatever the plan jar runs itself (a reused plan runs outside the Dataset API, which would set
    the session around its actions). The operator diagnoses in worker threads: unbound, a warm
    cycle of a small cluster took 3.3 s instead of 0.85 s (tests/spark/test_thread_binding.py).
    Spark Connect has no JVM here: nothing to bind."""
    if is_connect(session):
        return
    jvm: Any = session._jvm
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)


def is_connect(session: SparkSession) -> bool:
    """A Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def driver_exit(session: SparkSession, *, wait_s: float = 0.0) -> int | None:
    """The exit code of `session`'s driver JVM once it has exited (negative: the signal that
    ended it), else None: still running, or not a JVM this process started (Spark Connect).

    `wait_s`: how long to wait for a JVM that may be exiting (a call failed on a lost
    connection: the JVM closes its sockets before it is gone)."""
    if is_connect(session):
        return None
    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return None
    if wait_s > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait_s)
    return process.poll()


def lost_connection(exc: BaseException) -> bool:
    """A connection error anywhere in `exc`'s chain (Py4J wraps the socket's own): the driver JVM
    may be exiting."""
    from py4j.protocol import Py4JNetworkError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionError | Py4JNetworkError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def discard_exited_session() -> None:
    """Forget a session whose driver JVM has exited, so the next `get_session` starts a new JVM.

    PySpark keeps the gateway, the context and the session in class attributes, and reuses them
    while they are set; none of them can be stopped once their JVM is gone."""
    global _jvm_generation
    _jvm_generation += 1
    gateway = SparkContext._gateway
    if gateway is not None:
        with contextlib.suppress(Exception):  # nothing to shut down on a dead peer
            gateway.shutdown()  # closes the Python side's sockets; the JVM side is gone
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def stop_session(*, wait_for_jvm: bool = False) -> int | None:
    """Stop the process's session, if any (the CLI calls this before exiting).

    `wait_for_jvm` also ends the driver JVM this process started and waits for it to exit (it
    writes a class archive then), and returns its exit code; otherwise the JVM ends when this
    process does, and None is returned."""
    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if wait_for_jvm and process is not None:
        process.stdin.close()  # PySpark's gateway JVM exits when its stdin closes
        return int(process.wait(timeout=JVM_EXIT_TIMEOUT_S))
    return None
