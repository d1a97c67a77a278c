"""docs/diagnostics.md names every check and every threshold (docs that drift mislead operators)."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_health_spark.thresholds import Thresholds

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "diagnostics.md").read_text()


def check_ids() -> set[str]:
    sources = [
        *(ROOT / "spark/kafka_health_spark/checks").glob("*.py"),
        ROOT / "operator/kafka_health/diagnose/missing.py",
    ]
    return {m for p in sources for m in re.findall(r'check="(\w+)"', p.read_text())}


def test_every_check_is_documented() -> None:
    ids = check_ids()
    assert len(ids) >= 20
    assert {i for i in ids if f"`{i}`" not in DOC} == set()


def test_every_threshold_is_documented_with_its_default() -> None:
    for name, field in Thresholds.model_fields.items():
        row = re.search(rf"^\| `{name}` \| ([^|]+) \|", DOC, re.M)
        assert row is not None, name
        if field.default is None:  # not judged unless set (the policy's optional limits)
            assert row[1].strip() == "none", name
        else:
            assert float(row[1]) == float(field.default), name
