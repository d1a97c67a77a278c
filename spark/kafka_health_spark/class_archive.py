"""A class-data-sharing archive of what a diagnosis loads: a new driver JVM maps it instead of
loading and verifying Spark's classes one by one.

Why: a cold embedded driver spends most of its first seconds loading classes from Spark's ~250
jars. With HotSpot's dynamic AppCDS (JDK 13+) one JVM writes the classes it loaded to a file at
exit (`-XX:ArchiveClassesAtExit`) and later JVMs map that file (`-XX:SharedArchiveFile`).
Measured on the project machine (bench/oneshot_bench.py, docs/diagnostics.md "One-shot"):
a Python process starting Spark and running one job took 7.6 s without it, 4.9 s with it.

By default only the short-lived JVM of `kafka-health diagnose` maps it: in the operator's
long-lived JVM the mapped archive raised the peak RSS of a 10k-partition cycle from 1,415 to
2,003 MiB (bench/diagnose_bench.py --mode operator), to save ~3 s once at start.
`KAFKA_HEALTH_SPARK_CLASS_ARCHIVE_LONG_LIVED=1` maps it in long-lived JVMs too, for operators
that live minutes, not days (the test suite's: a driver's start and first job 6.1 -> 3.1 CPU-s).

A JVM only maps an archive written with the same class path before its own, so every local
driver JVM, short- or long-lived, has the plan jar (`plan_jar`) first on its class path, and
the archive holds the classes of both ways of diagnosing (the CLI's, and the operator's reused
plans). The archive is only valid for the JDK and the jars that wrote it, so its name carries a
digest of them (Spark's version and jar list, the plan jar's path, which is keyed by its
sources, and its time and size, the `java` binary and its `release` file). The JVM checks it again when mapping it and,
if it does not match, runs without it (`-Xshare:auto`: slower, never wrong). It is written by
`python -m kafka_health.diagnose.class_archive` (hack/setup.sh, the image build), never by a
diagnosis: writing it costs ~10 s at the JVM's exit.

`KAFKA_HEALTH_SPARK_CLASS_ARCHIVE` overrides the path (the image sets one inside itself);
`off` disables the archive.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from kafka_health_spark import plan_jar

ENV = "KAFKA_HEALTH_SPARK_CLASS_ARCHIVE"
LONG_LIVED_ENV = "KAFKA_HEALTH_SPARK_CLASS_ARCHIVE_LONG_LIVED"
# The JVM's own log lines go to stderr: by default they go to stdout, where `diagnose -o json`
# writes its report (an archive that does not match would print a warning there).
JVM_LOG_TO_STDERR = "-Xlog:disable -Xlog:all=warning:stderr"
# Writing the archive warns once per class it skips (signed jars, old class versions): hundreds.
QUIET_ARCHIVE_LOG = "-Xlog:cds*=error:stderr"


def _java() -> Path | None:
    """The `java` spark-submit starts: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def fingerprint() -> str | None:
    """A digest of the JDK and the jars an archive belongs to (None: no java found)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    digest = hashlib.sha256()
    digest.update(f"{pyspark.__version__}\n{java}\n".encode())
    release = java.parent.parent / "release"
    if release.exists():
        digest.update(release.read_bytes())
    jar = plan_jar.jar_path()
    digest.update(f"{jar}\n".encode())
    if jar.is_file():  # a jar built again (same path) is another jar to the JVM: time and size
        built = jar.stat()
        digest.update(f"{built.st_mtime_ns} {built.st_size}\n".encode())
    jars = plan_jar.spark_jars()
    if jars.is_dir():
        digest.update(f"{jars.resolve()}\n".encode())
        digest.update("\n".join(sorted(p.name for p in jars.glob("*.jar"))).encode())
    return digest.hexdigest()[:16]


def archive_path() -> Path | None:
    """Where this JDK and Spark's archive is (or would be written); None when disabled."""
    override = os.environ.get(ENV, "")
    if override.lower() == "off":
        return None
    if override:
        return Path(override)
    key = fingerprint()
    if key is None:
        return None
    import pyspark

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kafka-health" / "spark-classes" / f"spark-{pyspark.__version__}-{key}.jsa"


def java_options(record_to: Path | None = None) -> str:
    """The driver JVM's options: map the archive if there is one, or write one to `record_to`."""
    if record_to is not None:
        return f"{JVM_LOG_TO_STDERR} {QUIET_ARCHIVE_LOG} -XX:ArchiveClassesAtExit={record_to}"
    path = archive_path()
    if path is not None and path.is_file():
        return f"{JVM_LOG_TO_STDERR} -Xshare:auto -XX:SharedArchiveFile={path}"
    return JVM_LOG_TO_STDERR


def wanted_in_long_lived_jvms() -> bool:
    """Whether long-lived driver JVMs map the archive too (`LONG_LIVED_ENV`; off by default)."""
    return os.environ.get(LONG_LIVED_ENV, "").strip().lower() in ("1", "true", "on", "yes")
