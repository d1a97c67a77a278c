"""The driver JVM's class archive: keyed by JDK and Spark, built once, mapped by later JVMs, and a
bad one never breaks a diagnosis nor reaches stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from kafka_health_spark import class_archive, plan_jar
from kafka_health_spark.class_archive import (
    ENV,
    JVM_LOG_TO_STDERR,
    LONG_LIVED_ENV,
    archive_path,
    java_options,
)

# A driver JVM started the way `diagnose` starts it (argument "short"), or the operator ("long"),
# logging where each class came from.
PROBE = """
import sys
from kafka_health_spark import class_archive, reuse
class_archive.JVM_LOG_TO_STDERR += " -Xlog:class+load=info:file=" + sys.argv[1]
from kafka_health_spark.session import get_session
spark = get_session(short_lived=sys.argv[2] == "short")
assert reuse.available(spark)  # the plan jar is on the class path either way
print(spark.range(4).selectExpr("sum(id) AS s").first()["s"])
"""
SHARED_TOP = "org.apache.spark.SparkContext source: shared objects file (top)"
PLAN_JAR_TOP = "io.kafkahealth.spark.Slots source: shared objects file (top)"


def _probe(
    archive: Path, class_log: Path, kind: str = "short", long_lived_maps: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, ENV: str(archive), LONG_LIVED_ENV: long_lived_maps}
    return subprocess.run(
        [sys.executable, "-c", PROBE, str(class_log), kind],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def test_off_disables_the_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "off")
    assert archive_path() is None
    assert java_options() == JVM_LOG_TO_STDERR


def test_an_archive_is_mapped_only_when_it_exists(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "classes.jsa"
    monkeypatch.setenv(ENV, str(target))
    assert archive_path() == target
    assert "SharedArchiveFile" not in java_options()
    target.write_bytes(b"x")
    assert java_options().split() == [
        *JVM_LOG_TO_STDERR.split(),
        "-Xshare:auto",
        f"-XX:SharedArchiveFile={target}",
    ]
    recording = java_options(record_to=tmp_path / "new.jsa")
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}" in recording
    assert "SharedArchiveFile" not in recording


def test_the_default_archive_is_keyed_by_jdk_and_spark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    jdks = []
    for name, release in (("jdk-a", 'JAVA_VERSION="17.0.12"'), ("jdk-b", 'JAVA_VERSION="17.0.13"')):
        home = tmp_path / name
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "java").write_text("#!/bin/sh\n")
        (home / "release").write_text(release)
        monkeypatch.setenv("JAVA_HOME", str(home))
        path = archive_path()
        assert path is not None
        assert path.parent == tmp_path / "cache" / "kafka-health" / "spark-classes"
        assert path.name.startswith(f"spark-{pyspark.__version__}-") and path.suffix == ".jsa"
        jdks.append(path)
    assert jdks[0] != jdks[1]  # another JDK update: another archive
    jars = []
    for name in ("a", "b"):  # another plan jar (its path is keyed by its sources): another archive
        monkeypatch.setenv(plan_jar.ENV, str(tmp_path / name / "kafka-health-spark.jar"))
        jars.append(archive_path())
    assert jars[0] != jars[1] and jdks[1] not in jars
    jar = tmp_path / "b" / "kafka-health-spark.jar"  # the same jar built again: the JVM's checks
    jar.parent.mkdir()  # of its time and size would refuse the archive, so another archive
    jar.write_bytes(b"jar")
    os.utime(jar, ns=(10**18, 10**18))
    first = archive_path()
    os.utime(jar, ns=(2 * 10**18, 2 * 10**18))
    assert len({jars[1], first, archive_path()}) == 3


def test_setup_keeps_a_built_plan_jar(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m kafka_health_spark.plan_jar` (setup) leaves a jar that is there as it is: built
    again, it would no longer be the jar the class archive was written with."""
    jar = tmp_path / "kafka-health-spark.jar"
    jar.write_bytes(b"built")
    os.utime(jar, ns=(10**18, 10**18))
    monkeypatch.setenv(plan_jar.ENV, str(jar))
    assert plan_jar.main() == 0
    assert capsys.readouterr().out == f"{jar}\n"
    assert jar.stat().st_mtime_ns == 10**18 and jar.read_bytes() == b"built"
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    monkeypatch.setattr(class_archive.shutil, "which", lambda _: None)
    assert archive_path() is None


@pytest.mark.spark
def test_a_built_archive_is_mapped_by_the_next_driver_jvm(tmp_path: Path) -> None:
    target = tmp_path / "archive" / "classes.jsa"
    built = subprocess.run(
        [sys.executable, "-m", "kafka_health.diagnose.class_archive"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, ENV: str(target)},
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert target.is_file() and target.stat().st_size > 10 * 2**20
    assert [p.name for p in target.parent.iterdir()] == ["classes.jsa"]  # no partial file left
    assert built.stdout == ""  # the JVM's logging (hundreds of lines while archiving) went to stderr

    # A one-shot JVM maps it, the plan jar's classes too; a long-lived one only when asked.
    for kind, asked, maps in (("short", "", True), ("long", "1", True), ("long", "", False)):
        log = tmp_path / f"classes-{kind}-{asked}.log"
        mapped = _probe(target, log, kind, asked)
        assert mapped.returncode == 0, mapped.stderr[-3000:]
        assert mapped.stdout == "6\n"
        loaded = log.read_text()
        assert (SHARED_TOP in loaded) is maps, (kind, asked)
        assert (PLAN_JAR_TOP in loaded) is maps, (kind, asked)


@pytest.mark.spark
def test_a_damaged_archive_is_skipped_and_the_job_still_runs(tmp_path: Path) -> None:
    damaged = tmp_path / "classes.jsa"
    damaged.write_bytes(os.urandom(2**20))
    ran = _probe(damaged, tmp_path / "classes.log")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout == "6\n"  # nothing of the JVM's on stdout, where `diagnose -o json` writes
    log = (tmp_path / "classes.log").read_text()
    assert "org.apache.spark.SparkContext source: file:" in log  # from its jar
    assert "(top)" not in log
