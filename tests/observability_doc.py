"""What docs/observability.md promises about /metrics, parsed from its Metrics table, so tests can
check a real scrape against it: each family, its labels, and the values each label may take."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "observability.md"


def documented_families() -> dict[str, set[str]]:
    """Family (as exposed, counters with `_total`) -> its label names."""
    section = DOC.read_text().split("## Metrics", 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {}
    for row in re.findall(r"^\| `(kafka_health_\w+)` \|[^|]*\|([^|]*)\|", section, flags=re.MULTILINE):
        name, labels = row
        out[name] = set(re.findall(r"`(\w+)`", labels.split("(")[0]))
    return out


def documented_values() -> dict[str, set[str]]:
    """Label -> the values the doc names for it (only the labels with a closed set)."""
    text = DOC.read_text()
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    row = {
        m.group(1): m.group(0) for m in re.finditer(r"^\| `(kafka_health_\w+)` \|.*$", section, re.MULTILINE)
    }
    checks = section.split("The `check` label is the id of a diagnostics check:", 1)[1].split(
        "(what each", 1
    )[0]
    result_row = row["kafka_health_remediations_total"].split("and result", 1)[1]
    return {
        "outcome": set(re.findall(r"`(ok|problem)`", row["kafka_health_cycle_duration_seconds"])),
        "severity": set(re.findall(r"`(info|warning|critical)`", row["kafka_health_findings"])),
        "check": set(re.findall(r"`(\w+)`", checks)),
        "action": set(
            re.findall(r"`([A-Z]\w+)`", row["kafka_health_remediations_total"].split("and result")[0])
        ),
        "result": set(re.findall(r"`([a-z_]+)`", result_row)),
    }
