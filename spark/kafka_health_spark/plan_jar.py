"""The driver JVM's own classes (`jvm/*.java`): the slot data source that lets a policy's plans be
built once and run again (`kafka_health_spark.reuse`).

The sources ship with the package and are compiled against the installed Spark's jars once, into
`${XDG_CACHE_HOME:-~/.cache}/kafka-health/spark-jar/`, keyed by the JDK that compiles them, Spark's
version and the sources' digest (`hack/setup.sh` builds it; the image builds it in its build stage
and points `KAFKA_HEALTH_SPARK_JAR` at it). Without a JDK (`javac`) there is no jar: the session
starts without it, and diagnoses build their plans every cycle, as the engine did before.

They compile warning-free with every lint (`JAVAC_FLAGS`): a warning fails the build, so a Spark
upgrade that deprecates or changes what they use is seen at setup, not at a cycle. Which Spark
internals they reach, and why, is docs/spark-internals.md.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "KAFKA_HEALTH_SPARK_JAR"
JAR_NAME = "kafka-health-spark.jar"
COMPILE_TIMEOUT_S = 300
# Every lint, warnings as errors, class files for Java 17 (the image's runtime) whatever JDK builds.
# Two lint categories are off because they report on Spark's jars, not on these sources: `path`
# (Class-Path entries in Spark's jar manifests naming jars pyspark does not ship, e.g. derby.jar)
# and `classfile` (Arrow's class files annotated with a checker-framework annotation pyspark does
# not ship).
JAVAC_FLAGS = ("--release", "17", "-Xlint:all,-path,-classfile", "-Werror")


def spark_jars() -> Path:
    """The jars of the Spark this process runs ($SPARK_HOME/jars, else pyspark's own)."""
    import pyspark

    home = os.environ.get("SPARK_HOME")
    return Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"


def _sources() -> list[Path]:
    root = Path(str(resources.files("kafka_health_spark") / "jvm"))
    return sorted(root.glob("*.java"))


def jdk_version() -> str:
    """The version of the JDK whose `javac` would compile the jar ("none" without one), read from
    its `release` file (no process started: a session asks at every start)."""
    javac = shutil.which("javac")
    if javac is None:
        return "none"
    home = Path(javac).resolve().parent.parent
    release = home / "release"
    if release.is_file():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    return hashlib.sha256(str(home).encode()).hexdigest()[:8]


def jar_path() -> Path:
    """Where the jar for this JDK, this Spark and these sources is (or would be built)."""
    override = os.environ.get(ENV)
    if override:
        return Path(override)
    import pyspark

    digest = hashlib.sha256()
    digest.update(" ".join(JAVAC_FLAGS).encode())
    for source in _sources():
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = f"spark-{pyspark.__version__}-jdk-{jdk_version()}-{digest.hexdigest()[:16]}"
    return cache / "kafka-health" / "spark-jar" / key / JAR_NAME


def build(target: Path | None = None) -> Path:
    """Compile the sources against Spark's jars into `target` (default `jar_path()`); raises
    `RuntimeError` naming what is missing or what failed when it cannot."""
    target = target or jar_path()
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise RuntimeError(
            "javac and jar (a JDK 17) are needed to build the Spark plan jar; install openjdk-17-jdk"
        )
    with tempfile.TemporaryDirectory(prefix="kh-jar-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        compiled = subprocess.run(
            [javac, *JAVAC_FLAGS, "-d", str(classes), "-cp", f"{spark_jars()}/*", *map(str, _sources())],
            capture_output=True,
            text=True,
            check=False,
            timeout=COMPILE_TIMEOUT_S,
        )
        if compiled.returncode != 0:
            raise RuntimeError(
                f"javac ({jdk_version()}) failed to compile the Spark plan jar's sources against "
                f"Spark's jars ({spark_jars()}):\n{compiled.stdout}{compiled.stderr}"
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


def existing() -> Path | None:
    """The jar if it is built, never building it (a one-shot JVM must not wait for javac)."""
    path = jar_path()
    return path if path.is_file() else None


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


def main() -> int:
    """`python -m kafka_health_spark.plan_jar` (hack/setup.sh, the image): build the jar unless
    it is built (its path is keyed by what it is built from; a jar built again is another file to
    the class archive, which maps only the jars it was written with: `class_archive`). Exit 2
    when there is no JDK (the operator then builds its plans every cycle), 1 when a JDK is here
    but the build fails (a source or Spark change to fix, never to pass unseen)."""
    built = existing()
    if built is not None:
        print(built)
        return 0
    if shutil.which("javac") is None or shutil.which("jar") is None:
        print("no JDK (javac, jar): no Spark plan jar; plans are built every cycle", file=sys.stderr)
        return 2
    try:
        print(build())
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"the Spark plan jar did not build: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
