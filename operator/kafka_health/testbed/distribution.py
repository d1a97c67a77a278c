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

KAFKA_VERSION = "4.1.2"
SCALA_BINARY = "2.13"
LOG4J_VERSION = "2.24.3"

# The broker (core), the command-line tools, and a log4j2 binding for both.
_ARTIFACTS = [
    ("org.apache.kafka", f"kafka_{SCALA_BINARY}", KAFKA_VERSION),
    ("org.apache.kafka", "kafka-tools", KAFKA_VERSION),
    (
        "org.slf4j",
        "slf4j-api",
        "2.0.17",
    ),  # Kafka 4 logs through SLF4J 2; pin it over 1.7 from transitive deps
    ("org.apache.logging.log4j", "log4j-slf4j2-impl", LOG4J_VERSION),
    ("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
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


class FetchError(RuntimeError):
    """Maven could not provide the Kafka jars; the message says what to check."""


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
        for g, a, v in _ARTIFACTS
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
