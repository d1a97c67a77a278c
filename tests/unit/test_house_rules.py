"""The house rules ruff and import-linter cannot check: no module over 500 lines, no function
over 80, and no import hidden inside a function across packages without a reason.

Ruff holds functions simple (C901, PLR0912, PLR0915 in pyproject.toml) and import-linter the
layers ([tool.importlinter]), but neither counts lines, and import-linter counts an import inside a
function like one at the top, where the reader would look for it.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 500
MAX_FUNCTION_LINES = 80


def _sources() -> list[Path]:
    return sorted([*(REPO / "operator").rglob("*.py"), *(REPO / "spark").rglob("*.py")])


def _lines(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("\n")


def test_no_module_is_over_500_lines() -> None:
    over = {str(p.relative_to(REPO)): _lines(p) for p in _sources() if _lines(p) > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split them by job): {over}"


def test_no_function_is_over_80_lines() -> None:
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into steps): {long}"


# Imports inside functions that cross packages, each with why it cannot sit at the top. Anything
# else goes to the top of its module, where import-linter sees it and the reader expects it.
LOCAL_IMPORTS_ALLOWED: dict[str, str] = {
    # cli: `kafka-health --help` and every command load all of cli/ (main.py registers them); a
    # command's heavy readers are imported when it runs. Measured: the seconds to import each in a
    # python that has imported kafka_health.cli.main already (2 cores under load, best of 2).
    "kafka_health.cli.diagnose": "collect.snapshot (kafka-python, 0.8 s), history.store (pandas, "
    "4.0 s), kafka_health.diagnose (2.0 s) and report.table (2.5 s) load when a diagnosis runs; "
    "kafka_health_spark.session (pyspark, 1.1 s) loads in the thread that starts Spark while the "
    "cluster is read; report.html (matplotlib, 5.6 s) is an optional extra, checked for -o html",
    "kafka_health.cli.restart_plan": "collect.snapshot (kafka-python, 0.8 s), k8s.client, broker_pods "
    "and rolling_restart (kubernetes, 1.1 s): --help and the other commands never need them",
    "kafka_health.cli.restart_run": "rolling_restart, controller.cluster_lease, k8s.client (kubernetes, "
    "1.1 s): loaded only when a roll runs",
    "kafka_health.cli.operator": "controller.app and controller.runtime (kopf, aiohttp, kubernetes: "
    "3.0 s) load when the operator starts, after its flags are checked; the unit test replaces "
    "controller.app.run, which this import reads at call time",
    "kafka_health.cli.remediation_cli": "remediate.offset_reset (kubernetes and kafka-python, 1.4 s) "
    "loads when reset-offsets runs; elect-leaders and --help never need it",
    # end cli
}


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "kafka_health" else parts[0]


def _local_cross_package_imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in _sources():
        rel = path.relative_to(REPO).with_suffix("").parts[1:]
        module = ".".join(rel[:-1] if rel[-1] == "__init__" else rel)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for sub in ast.walk(node):
                names = [sub.module or ""] if isinstance(sub, ast.ImportFrom) else []
                names += [a.name for a in sub.names] if isinstance(sub, ast.Import) else []
                for name in names:
                    if name.startswith("kafka_health") and _package(name) != _package(module):
                        found.setdefault(module, set()).add(name)
    return found


def test_no_function_local_import_across_packages_without_a_reason() -> None:
    found = _local_cross_package_imports()
    unexplained = {m: sorted(i) for m, i in found.items() if m not in LOCAL_IMPORTS_ALLOWED}
    assert not unexplained, (
        f"move these imports to the top of the module (or name the reason here): {unexplained}"
    )


def test_the_local_import_lists_hold_only_modules_that_still_need_them() -> None:
    found = _local_cross_package_imports()
    stale = sorted(set(LOCAL_IMPORTS_ALLOWED) - set(found))
    assert not stale, f"these modules have no function-local cross-package import any more: {stale}"
