"""Apache Kafka jars for the local testbed, fetched from Maven Central with Maven and cached.

The cache is keyed by version (`<cache>/kafka/<version>/libs/*.jar`); a warm call touches
no network. The fetch writes into a temporary directory and renames it into place, so an
interrupted fetch never leaves a half cache behind.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_health._kits.paths import cache_root

KAFKA_VERSION = "4.4.0"
SCALA_BINARY = "2.13"
LOG4J_VERSION = "2.24.3"
# `--kafka-version 3.9.x` ... `4.4.x`: the newest patch release of each KRaft line on Maven Central
# (checked 2026-11-28). The suite runs on the default and on 3.9 and 4.1 (tests/compat); the lines
# between are expected to work (the clients negotiate API versions) and start the same way. An
# exact version (e.g. 3.9.1) is taken as given.
NEWEST = {"3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2", "4.2": "4.2.2", "4.3": "4.3.1", "4.4": "4.4.0"}


class FetchError(RuntimeError):
    """Maven could not provide the Kafka jars; the message says what to check."""


def resolve(version: str) -> str:
    """`3.9.x` → the newest 3.9 release known here; an exact `X.Y.Z` as it is."""
    parts = version.strip().split(".")
    if len(parts) == 3 and parts[2] == "x":
        line = f"{parts[0]}.{parts[1]}"
        if line not in NEWEST:
            raise FetchError(
                f"no Kafka {version} known; one of: {', '.join(f'{v}.x' for v in NEWEST)} or X.Y.Z"
            )
        return NEWEST[line]
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise FetchError(f"--kafka-version {version!r}: give X.Y.Z or X.Y.x (e.g. 3.9.x)")
    if int(parts[0]) < 3 or (int(parts[0]) == 3 and int(parts[1]) < 9):
        raise FetchError(f"Kafka {version}: the testbed runs KRaft with Kafka 3.9 or newer")
    return version.strip()


def uses_log4j2(version: str) -> bool:
    """Kafka 4 logs through SLF4J 2 + log4j2; Kafka 3 through SLF4J 1.7 + reload4j (log4j 1)."""
    return int(version.split(".")[0]) >= 4


def artifacts(version: str) -> list[tuple[str, str, str]]:
    """The broker (core), the command-line tools, and a logging binding for both."""
    kafka = [
        ("org.apache.kafka", f"kafka_{SCALA_BINARY}", version),
        ("org.apache.kafka", "kafka-tools", version),
    ]
    if uses_log4j2(version):
        return [
            *kafka,
            # Kafka 4 logs through SLF4J 2; pin it over 1.7 from transitive deps
            ("org.slf4j", "slf4j-api", "2.0.17"),
            ("org.apache.logging.log4j", "log4j-slf4j2-impl", LOG4J_VERSION),
            ("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
        ]
    return [
        *kafka,
        ("org.slf4j", "slf4j-api", "1.7.36"),
        ("org.slf4j", "slf4j-reload4j", "1.7.36"),
        ("ch.qos.reload4j", "reload4j", "1.2.25"),
    ]


_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.kafkahealth</groupId>
  <artifactId>kafka-testbed-libs</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / "kafka" / version


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    return kafka_home(version) / "libs"


def is_cached(version: str = KAFKA_VERSION) -> bool:
    return (kafka_home(version) / ".complete").exists()


def ensure_kafka(version: str = KAFKA_VERSION, *, quiet: bool = True) -> Path:
    """Return the directory of Kafka's jars, fetching them with Maven on the first call."""
    if is_cached(version):
        return libs_dir(version)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FetchError(
            "Maven (mvn) is not on PATH; it fetches the Kafka jars (Debian: apt-get install maven)"
        )
    home = kafka_home(version)
    home.parent.mkdir(parents=True, exist_ok=True)
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in artifacts(version)
    )
    with tempfile.TemporaryDirectory(dir=home.parent, prefix=f".{version}-") as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(_POM.format(deps=deps))
        cmd = [
            mvn,
            "-B",
            *(["-q"] if quiet else []),
            "-f",
            str(work / "pom.xml"),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={work / 'libs'}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise FetchError(f"mvn could not fetch Apache Kafka {version} from Maven Central:\n{tail}")
        (work / ".complete").write_text(version + "\n")
        shutil.rmtree(home, ignore_errors=True)
        (work / "pom.xml").unlink()
        work.rename(home)
        # TemporaryDirectory's cleanup tolerates the directory having moved away.
        Path(tmp).mkdir(exist_ok=True)
    return libs_dir(version)
