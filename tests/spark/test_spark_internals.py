"""The Spark internals the plan jar (`kafka_health_spark/jvm/*.java`) and the Python around it
reach are each listed in docs/spark-internals.md, and each is still there, in the shape used, in
the Spark this session runs.

The jar is compiled with `-Werror` against the installed Spark (`plan_jar.JAVAC_FLAGS`), so a
changed signature fails `hack/setup.sh`; these tests fail first, by name, in the suite: a Spark
upgrade that moves, renames or reshapes any of them shows here, one line per internal, before a
cycle runs into it. Every internal import must also be in the document's table (what it buys,
what breaks on upgrade): a new one cannot come in unlisted.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafka_health_spark import plan_jar

JVM = Path(plan_jar.__file__).parent / "jvm"
DOC = Path(__file__).resolve().parents[2] / "docs" / "spark-internals.md"

# Packages that are Spark's implementation, not its API (no compatibility promise across releases).
INTERNAL_PACKAGES = (
    "org.apache.spark.sql.catalyst.",
    "org.apache.spark.sql.execution.",
    "org.apache.spark.unsafe.",
)
# Classes outside them used in ways Spark reserves for itself: private[spark]/private[sql]
# constructors or methods, developer APIs to build a task by hand, a Broadcast subclassed.
INTERNAL_CLASSES = frozenset(
    {
        "org.apache.spark.TaskContextImpl",
        "org.apache.spark.SparkEnv",
        "org.apache.spark.memory.TaskMemoryManager",
        "org.apache.spark.executor.TaskMetrics",
        "org.apache.spark.broadcast.Broadcast",
        "org.apache.spark.sql.util.ArrowUtils$",
        "org.apache.spark.sql.classic.Dataset",
    }
)


def spark_imports() -> set[str]:
    """Every Spark class the jar's sources import."""
    found: set[str] = set()
    for source in JVM.glob("*.java"):
        found |= set(re.findall(r"^import (org\.apache\.spark\.[\w.$]+);", source.read_text(), re.M))
    return found


def internal_imports() -> set[str]:
    """The imported Spark classes that are internals (`INTERNAL_PACKAGES`, `INTERNAL_CLASSES`)."""
    return {c for c in spark_imports() if c.startswith(INTERNAL_PACKAGES) or c in INTERNAL_CLASSES}


def test_every_internal_the_jar_imports_is_in_the_documents_table() -> None:
    """docs/spark-internals.md names each internal class (by its simple name, in backticks) in its
    table: a new internal comes in with what it buys and what breaks on upgrade."""
    table = DOC.read_text()
    missing = sorted(c for c in internal_imports() if f"`{c.rsplit('.', 1)[1].rstrip('$')}`" not in table)
    assert not missing, f"Spark internals imported but not in {DOC.name}: {missing}"


# (class, member, parameter counts it is used with): "<init>" is a constructor. Each is called by
# the jar's sources or through Py4J as written here.
SHAPES: list[tuple[str, str, int]] = [
    # a prepared plan computed in the calling thread (PreparedPlan.compute)
    ("org.apache.spark.TaskContextImpl", "<init>", 12),
    ("org.apache.spark.TaskContextImpl", "markInterrupted", 1),
    ("org.apache.spark.TaskContextImpl", "killTaskIfInterrupted", 0),
    ("org.apache.spark.TaskContextImpl", "markTaskFailed", 1),
    ("org.apache.spark.TaskContextImpl", "markTaskCompleted", 1),
    ("org.apache.spark.TaskContext", "withTaskContext", 2),
    ("org.apache.spark.memory.TaskMemoryManager", "<init>", 2),
    ("org.apache.spark.memory.TaskMemoryManager", "cleanUpAllAllocatedMemory", 0),
    ("org.apache.spark.memory.MemoryManager", "releaseAllExecutionMemoryForTask", 1),
    # (SparkEnv is called, not reflected on: its methods name protobuf classes pyspark does not
    # ship, so neither reflection nor Py4J can list them; every prepared plan's run in test_reuse.py
    # calls them)
    ("org.apache.spark.executor.TaskMetrics", "empty", 0),
    # planning once, preparing once (Plans.plan)
    ("org.apache.spark.sql.execution.QueryExecution$", "prepareForExecution", 2),
    ("org.apache.spark.sql.execution.QueryExecution$", "preparations", 3),
    ("org.apache.spark.sql.execution.QueryExecution", "sparkPlan", 0),
    ("org.apache.spark.sql.execution.QueryExecution", "executedPlan", 0),
    ("org.apache.spark.sql.execution.SparkPlan", "execute", 0),
    ("org.apache.spark.sql.execution.SparkPlan", "executeCollect", 0),
    ("org.apache.spark.sql.execution.SparkPlan", "withNewChildren", 1),
    # the physical rewrites (Plans.withoutBroadcasts, projectLate, inOnePartition)
    ("org.apache.spark.sql.execution.joins.CartesianProductExec", "<init>", 3),
    ("org.apache.spark.sql.execution.CoalesceExec", "<init>", 2),
    ("org.apache.spark.sql.execution.ProjectExec", "<init>", 2),
    ("org.apache.spark.sql.execution.TakeOrderedAndProjectExec", "<init>", 5),
    ("org.apache.spark.sql.execution.window.WindowExec", "<init>", 4),
    ("org.apache.spark.sql.catalyst.optimizer.CollapseProject$", "getAliasMap", 1),
    ("org.apache.spark.sql.catalyst.optimizer.CollapseProject$", "replaceAlias", 2),
    ("org.apache.spark.sql.catalyst.optimizer.CollapseProject$", "buildCleanedProjectList", 2),
    # a run's rows as a local frame (PreparedPlan.run)
    ("org.apache.spark.sql.catalyst.plans.logical.LocalRelation", "<init>", 4),
    ("org.apache.spark.sql.classic.Dataset", "ofRows", 2),
    # Arrow in, rows or columns kept (Slots)
    ("org.apache.spark.sql.execution.arrow.ArrowConverters$", "fromBatchIterator", 6),
    ("org.apache.spark.sql.execution.arrow.ArrowConverters$", "loadBatch", 2),
    ("org.apache.spark.sql.util.ArrowUtils$", "toArrowSchema", 5),
    ("org.apache.spark.sql.util.ArrowUtils$", "rootAllocator", 0),
    ("org.apache.spark.sql.catalyst.expressions.UnsafeProjection", "create", 1),
    # Python's Arrow stream into the JVM (reuse._to_jvm; `PythonSQLUtils.readArrowStreamFromFile`
    # is not reflected on: its class's other methods name Spark Connect's protobuf classes, absent
    # from the classpath, so listing its methods fails. Every slot filled calls it: test_reuse.py)
    ("org.apache.spark.sql.api.python.ArrowIteratorServer", "<init>", 0),
]


def _class(spark: SparkSession, name: str) -> Any:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    return jvm.java.lang.Class.forName(name, False, loader)


def _arities(spark: SparkSession, cls: Any, member: str) -> set[int]:
    if member == "<init>":
        return {c.getParameterCount() for c in cls.getDeclaredConstructors()}
    found: set[int] = set()
    klass = cls
    while klass is not None:
        found |= {m.getParameterCount() for m in klass.getDeclaredMethods() if m.getName() == member}
        klass = klass.getSuperclass()
    for interface in cls.getInterfaces():
        found |= {m.getParameterCount() for m in interface.getMethods() if m.getName() == member}
    return found


def test_each_internal_is_there_in_the_shape_used(spark: SparkSession) -> None:
    """One line per class or member Spark moved, renamed or reshaped."""
    changed = []
    for name, member, arity in SHAPES:
        try:
            cls = _class(spark, name)
        except Exception as exc:  # (a Py4J error wrapping ClassNotFoundException)
            changed.append(f"{name}: class not found ({type(exc).__name__})")
            continue
        arities = _arities(spark, cls, member)
        if arity not in arities:
            changed.append(
                f"{name}.{member}: used with {arity} parameters, Spark has {sorted(arities) or 'none'}"
            )
    assert not changed, "Spark internals changed (docs/spark-internals.md):\n" + "\n".join(changed)


def test_the_jar_extends_no_spark_internal() -> None:
    """No class of the jar extends or implements a Spark internal: a method Spark adds to one
    would fail only when called (AbstractMethodError). (`LocalBroadcastExec` and
    `ComputedRelation`, a `SparkPlan` and a `HashedRelation`, were the last: docs/spark-internals.md.)"""
    heading = re.compile(r"\b(?:extends|implements)\s+([^{]+)\{")
    found = []
    for source in JVM.glob("*.java"):
        text = source.read_text()
        imported = {
            c.rsplit(".", 1)[1]: c for c in re.findall(r"^import (org\.apache\.spark\.[\w.$]+);", text, re.M)
        }
        for clause in heading.findall(text):
            while "<" in clause:  # (type arguments are not what is extended)
                clause = re.sub(r"<[^<>]*>", "", clause)
            for name in re.findall(r"\b([A-Z]\w*)", clause):
                full = imported.get(name, "")
                if full.startswith(INTERNAL_PACKAGES) or full in INTERNAL_CLASSES:
                    found.append(f"{source.name}: {full}")
    assert not found, f"the jar extends Spark internals: {found}"


def test_the_python_side_internals_are_there(spark: SparkSession) -> None:
    """PySpark's private members reuse.py and session.py call."""
    sc = spark.sparkContext
    assert callable(getattr(sc, "_serialize_to_jvm", None))
    assert sc._jvm is not None
    assert spark._jsparkSession is not None
    assert SparkContext._gateway is not None
    assert getattr(spark.range(1), "_jdf", None) is not None


@pytest.mark.slow  # (two javac runs: ~20 s on a quiet machine)
def test_the_jar_builds_with_no_warning_and_a_warning_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped sources compile with every lint as an error (`plan_jar.JAVAC_FLAGS`); a source
    with a warning (here: a raw type) fails the build, naming the warning."""
    built = plan_jar.build(tmp_path / "ok" / plan_jar.JAR_NAME)
    assert built.is_file()
    warned = tmp_path / "Warned.java"
    warned.write_text(
        "package io.kafkahealth.spark;\n"
        "final class Warned { java.util.List raw() { return new java.util.ArrayList(); } }\n"
    )
    sources = plan_jar._sources()
    monkeypatch.setattr(plan_jar, "_sources", lambda: [*sources, warned])
    with pytest.raises(RuntimeError, match=r"rawtypes|\[unchecked\]|warnings found"):
        plan_jar.build(tmp_path / "bad" / plan_jar.JAR_NAME)
    assert not (tmp_path / "bad" / plan_jar.JAR_NAME).exists()


def test_the_cache_key_names_the_jdk_and_spark() -> None:
    import pyspark

    key = plan_jar.jar_path().parent.name
    assert key.startswith(f"spark-{pyspark.__version__}-jdk-{plan_jar.jdk_version()}-")


def test_setup_fails_when_a_jdk_cannot_build_the_jar() -> None:
    """`python -m kafka_health_spark.plan_jar` exits 1 on a failed build (setup stops), 2 without
    a JDK (setup goes on: plans are built every cycle)."""
    setup = (Path(__file__).resolve().parents[2] / "hack" / "setup.sh").read_text()
    assert "-m kafka_health_spark.plan_jar >/dev/null || jar_rc=$?" in setup
    assert re.search(r'elif \[ "\$jar_rc" -ne 0 \]; then\n(.*\n){1,3}\s*exit 1', setup)
    result = subprocess.run(
        ["bash", "-c", 'PATH=/nonexistent exec "$0" -m kafka_health_spark.plan_jar', _python()],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr


def _python() -> str:
    import sys

    return sys.executable
