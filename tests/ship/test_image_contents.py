"""The operator image carries only what the operator runs (issue 13): no extras, no testbed.

The image itself cannot be built here (no Docker engine), so this checks the two halves: the
Dockerfile installs the project without extras and drops `kafka_health.testbed`, and the code
the image runs imports and starts without the [report] libraries and without the testbed.
"""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import kafka_health

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = ("jinja2", "matplotlib", "kafka_health.testbed", "pytest", "hypothesis", "duckdb", "lupa")

BLOCKER = textwrap.dedent(
    f"""
    import sys
    LEFT_OUT = {LEFT_OUT!r}
    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if any(name == m or name.startswith(m + ".") for m in LEFT_OUT):
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    sys.meta_path.insert(0, Blocker())
    """
)


def run_without_extras(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_dockerfile_installs_no_extras_and_drops_the_testbed() -> None:
    text = (ROOT / "Dockerfile").read_text()
    installs = re.findall(r"bin/pip install [^\n\\]*", text)
    assert installs and all(re.search(r" \.(\s|$)", i) and "[" not in i for i in installs), installs
    assert "site-packages/kafka_health/testbed" in text


def test_operator_modules_import_without_report_libraries_or_testbed() -> None:
    skip = ("kafka_health.testbed", "kafka_health.report.html")
    modules = [
        m.name
        for m in pkgutil.walk_packages(kafka_health.__path__, "kafka_health.")
        if not m.name.startswith(skip)
    ]
    result = run_without_extras(
        f"""
        import importlib
        for name in {modules!r}:
            importlib.import_module(name)
        import kafka_health_spark.session
        print("imported", len({modules!r}))
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_cli_without_extras_lists_no_testbed_and_names_the_report_extra(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text("{}")
    result = run_without_extras(
        """
        import sys
        from typer.testing import CliRunner
        from kafka_health.cli.main import app
        runner = CliRunner()
        top = runner.invoke(app, ["--help"])
        assert top.exit_code == 0, top.output
        assert "operator" in top.output and "testbed" not in top.output, top.output
        html = runner.invoke(app, ["diagnose", "--snapshot", sys.argv[1], "-o", "html"])
        print(html.exit_code)
        print(html.output)
        """,
        str(snapshot),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    code, _, output = result.stdout.partition("\n")
    assert code.strip() == "3", result.stdout  # could not run
    assert "kafka-health-operator[report]" in output, output


def test_the_image_builds_its_spark_class_archive_where_the_runtime_finds_it() -> None:
    # /tmp is an emptyDir at runtime (read-only root): the archive must live in the image itself.
    text = (ROOT / "Dockerfile").read_text()
    runtime = text.split("\nFROM ")[-1]
    path = re.search(r"KAFKA_HEALTH_SPARK_CLASS_ARCHIVE=(\S+)", runtime)
    assert path and path.group(1).startswith("/opt/kafka-health/"), runtime
    build = runtime.index("RUN python -m kafka_health.diagnose.class_archive")
    assert runtime.index("KAFKA_HEALTH_SPARK_CLASS_ARCHIVE=") < build < runtime.index("USER 10001")


def test_the_image_builds_its_plan_jar_where_the_runtime_finds_it() -> None:
    """The runtime has a JRE only: the plan jar is compiled in the build stage, inside the venv
    it copies, at the path the runtime's environment names."""
    text = (ROOT / "Dockerfile").read_text()
    build, runtime = text.split("\nFROM ")[-2], text.split("\nFROM ")[-1]
    built = re.search(r"KAFKA_HEALTH_SPARK_JAR=(\S+) \S+ -m kafka_health_spark\.plan_jar", build)
    used = re.search(r"KAFKA_HEALTH_SPARK_JAR=(\S+)", runtime)
    assert built and used and built.group(1) == used.group(1), (built, used)
    assert built.group(1).startswith("/opt/kafka-health/"), "copied with the venv"
    assert "openjdk-17-jdk-headless" in build and "openjdk-17-jdk" not in runtime
