"""A real Kafka Streams application against the testbed: a member of a streams group (KIP-1071,
`group.protocol=streams`), so that what the product reads of streams groups is checked against
Kafka's own answer (`kafka-streams-groups`) and not against a stand-in.

Why a Java program and not a Python client: no Python client speaks the streams rebalance
protocol; the group's topology, subtopologies and internal topics come from Kafka Streams itself.

Three steps, each cached under `${XDG_CACHE_HOME:-~/.cache}/kafka-health/kafka-streams/<version>/`:
1. `ensure_streams_jar`: `org.apache.kafka:kafka-streams:<version>` from Maven Central with Maven,
   as `distribution` fetches Kafka's own jars (Maven checks each file's checksum; `-C` makes a
   mismatch fail the fetch). Its dependencies are in Kafka's jars already (kafka-clients, SLF4J)
   or not needed (RocksDB: the app's one store is in memory).
2. `ensure_app_classes`: `jvm/StreamsApp.java` compiled with javac against Kafka's jars and that
   jar, once per version and source digest.
3. `start_streams_app`: the app as a child process (small heap, serial collector), its log in the
   testbed's logs, its output (a line per state change) in `streams-<app id>.out` beside it.

The brokers need nothing set for it in Kafka 4.4 (checked on the testbed): a new cluster has the
feature `streams.version` at 1 and `group.coordinator.rebalance.protocols` lists `streams`. In
Kafka 4.1, level 1 of `streams.version` is a testing level (`unstable.feature.versions.enable`
and a feature upgrade); the app refuses Kafka before 4.1, whose clients lack the protocol.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from kafka_health._kits.paths import cache_root, state_root
from kafka_health.testbed import broker_config, distribution
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.state import TestbedError

MAIN = "StreamsApp"
FIRST_RELEASE = (4, 1)  # the first Kafka whose clients have group.protocol=streams
JAVAC_FLAGS = ("--release", "17", "-Xlint:all,-path,-classfile", "-Werror")
JVM_FLAGS = ("-Xms64m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
COMPILE_TIMEOUT_S = 300
_LOG4J2 = broker_config.LOG4J2_FILE


def streams_home(version: str) -> Path:
    return cache_root() / "kafka-streams" / version


def source_file() -> Path:
    return Path(str(resources.files("kafka_health.testbed") / "jvm" / f"{MAIN}.java"))


def ensure_streams_jar(version: str = distribution.KAFKA_VERSION) -> Path:
    """The kafka-streams jar of this Kafka version, fetched with Maven on the first call."""
    home = streams_home(version)
    jar = home / f"kafka-streams-{version}.jar"
    if (home / ".complete").exists() and jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise distribution.FetchError(
            "Maven (mvn) is not on PATH; it fetches the kafka-streams jar (Debian: apt-get install maven)"
        )
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home, prefix=".fetch-") as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(
            distribution._POM.format(
                deps="    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId>"
                f"<version>{version}</version></dependency>"
            )
        )
        cmd = [mvn, "-B", "-q", "-C", "-f", str(pom), "dependency:copy-dependencies"]
        cmd += ["-DexcludeTransitive=true", f"-DoutputDirectory={tmp}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        fetched = Path(tmp) / jar.name
        if proc.returncode != 0 or not fetched.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise distribution.FetchError(
                f"mvn could not fetch kafka-streams {version} from Maven Central:\n{tail}"
            )
        fetched.replace(jar)  # a rename: a concurrent reader sees the whole jar or none
    (home / ".complete").write_text(version + "\n")
    return jar


def _classes_dir(version: str) -> Path:
    digest = hashlib.sha256(" ".join(JAVAC_FLAGS).encode() + source_file().read_bytes())
    return streams_home(version) / f"app-{digest.hexdigest()[:16]}"


def ensure_app_classes(version: str = distribution.KAFKA_VERSION) -> Path:
    """The directory of the compiled app for this Kafka version and source, compiled on first use."""
    target = _classes_dir(version)
    if (target / f"{MAIN}.class").is_file():
        return target
    javac = shutil.which("javac")
    if javac is None:
        raise TestbedError("javac (a JDK 17) is needed to compile the streams app; install openjdk-17-jdk")
    classpath = f"{distribution.ensure_kafka(version)}/*:{ensure_streams_jar(version)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".javac-") as tmp:
        cmd = [javac, *JAVAC_FLAGS, "-d", tmp, "-cp", classpath, str(source_file())]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=COMPILE_TIMEOUT_S)
        if proc.returncode != 0:
            raise TestbedError(f"javac failed on {source_file()}:\n{proc.stdout}{proc.stderr}")
        Path(tmp).chmod(0o755)
        try:
            Path(tmp).rename(target)
        except OSError:  # another process compiled it meanwhile
            if not (target / f"{MAIN}.class").is_file():
                raise
        Path(tmp).mkdir(exist_ok=True)  # TemporaryDirectory's cleanup tolerates the move
    return target


def _check_version(version: str) -> None:
    if tuple(int(x) for x in version.split(".")[:2]) < FIRST_RELEASE:
        first = ".".join(map(str, FIRST_RELEASE))
        raise TestbedError(f"streams groups come with Kafka {first}; this cluster runs Kafka {version}")


def app_command(
    version: str,
    bootstrap: str,
    app_id: str,
    source: str,
    sink: str,
    *,
    work_dir: Path,
    log4j2_config: Path,
    extra: Sequence[str] = (),
) -> list[str]:
    """The java command line of the app: Kafka's jars, the kafka-streams jar and the app's classes;
    its state stores under `work_dir`, its log in `work_dir/streams-<app id>.log`. `extra`: more
    arguments for the app (KEY=VALUE settings, or a client properties file)."""
    _check_version(version)
    classpath = ":".join(
        [
            f"{distribution.ensure_kafka(version)}/*",
            str(ensure_streams_jar(version)),
            str(ensure_app_classes(version)),
        ]
    )
    return [
        "java",
        *JVM_FLAGS,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j2_config}",
        f"-Dkafka.logs.file={work_dir / f'streams-{app_id}.log'}",
        "-cp",
        classpath,
        MAIN,
        bootstrap,
        app_id,
        source,
        sink,
        f"state.dir={work_dir / 'streams-state'}",
        *extra,
    ]


def output_path(work_dir: Path, app_id: str) -> Path:
    """Where the app's output goes: "STATE <old> -> <new>", "MISSING <why>" lines."""
    return work_dir / f"streams-{app_id}.out"


def start_streams_app(
    cluster_or_bootstrap: Testbed | str,
    app_id: str,
    source: str,
    sink: str,
    *,
    extra: Sequence[str] = (),
    kafka_version: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start the app in its own session (it outlives the caller until SIGTERM, on which it leaves
    its group). Against a testbed: its version, its admin's client settings, its logs directory;
    against bootstrap servers: a plaintext cluster of `kafka_version` (default the testbed's),
    with logs under `${XDG_STATE_HOME:-~/.local/state}/kafka-health/streams-apps/`."""
    if isinstance(cluster_or_bootstrap, Testbed):
        tb = cluster_or_bootstrap
        state = tb.require()
        version, bootstrap = state.kafka_version, state.bootstrap_servers
        work_dir = tb.state_dir / "logs"
        properties = tb.client_properties()
        extra = [*([str(properties)] if properties else []), *extra]
    else:
        version = kafka_version or distribution.KAFKA_VERSION
        bootstrap = cluster_or_bootstrap
        work_dir = state_root() / "streams-apps"
    work_dir.mkdir(parents=True, exist_ok=True)
    log4j2 = work_dir / "streams-log4j2.properties"
    if not log4j2.exists():
        log4j2.write_text(_LOG4J2)
    cmd = app_command(
        version, bootstrap, app_id, source, sink, work_dir=work_dir, log4j2_config=log4j2, extra=extra
    )
    with output_path(work_dir, app_id).open("ab") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
