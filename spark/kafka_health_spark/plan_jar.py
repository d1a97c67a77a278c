"""The driver JVM's own classes (`jvm/*.java`): the slot data source that lets a policy's plans be
built once and run again (`kafka_health_spark.reuse`).

The sources ship with the package and are compiled against the installed Spark's jars once, into
`${XDG_CACHE_HOME:-~/.cache}/kafka-health/spark-jar/`, keyed by Spark's version and the sources'
digest (`hack/setup.sh` builds it; the image builds it in its build stage and points
`KAFKA_HEALTH_SPARK_JAR` at it). Without a JDK (`javac`) there is no jar: the session starts
without it, and diagnoses build their plans every cycle, as the engine did before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from kafka_health_spark.class_archive import _spark_jars

log = logging.getLogger(__name__)

ENV = "KAFKA_HEALTH_SPARK_JAR"
JAR_NAME = "kafka-health-spark.jar"
COMPILE_TIMEOUT_S = 300


def _sources() -> list[Path]:
    root = Path(str(resources.files("kafka_health_spark") / "jvm"))
    return sorted(root.glob("*.java"))


def jar_path() -> Path:
    """Where the jar for this Spark and these sources is (or would be built)."""
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    import pyspark

    digest = hashlib.sha256()
    for source in _sources():
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = f"spark-{pyspark.__version__}-{digest.hexdigest()[:16]}"
    return cache / "kafka-health" / "spark-jar" / key / JAR_NAME


def build(target: Path | None = None) -> Path:
    """Compile the sources against Spark's jars into `target` (default `jar_path()`); raises
    `RuntimeError` naming what is missing when it cannot."""
    target = target or jar_path()
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise RuntimeError(
            "javac and jar (a JDK 17) are needed to build the Spark plan jar; install openjdk-17-jdk"
        )
    with tempfile.TemporaryDirectory(prefix="kh-jar-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        subprocess.run(
            [javac, "-nowarn", "-d", str(classes), "-cp", f"{_spark_jars()}/*", *map(str, _sources())],
            check=True,
            timeout=COMPILE_TIMEOUT_S,
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written beside the target, then renamed: processes building at once never see half a jar.
        handle, name = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(handle)
        partial = Path(name)
        try:
            subprocess.run(
                [jar, "cf", str(partial), "-C", str(classes), "."], check=True, timeout=COMPILE_TIMEOUT_S
            )
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return target


def ensure() -> Path | None:
    """The jar, built now if it is missing and a JDK is here; None (logged) when it cannot be."""
    path = jar_path()
    if path.is_file():
        return path
    if os.environ.get(ENV):
        log.warning("%s points at %s, which does not exist: plans are built every cycle", ENV, path)
        return None
    try:
        return build(path)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        log.warning("no Spark plan jar (%s): plans are built every cycle", exc)
        return None


if __name__ == "__main__":
    print(build())
