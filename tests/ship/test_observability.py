"""The Grafana dashboard and docs/observability.md against the operator's real metric registry."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kafka_health.models.policy import ConditionType, WithheldReason
from kafka_health.report import metrics
from tests.ship.chart import CHART, REPO

DASHBOARD = REPO / "dashboards" / "kafka-health-operator.json"
DOC = REPO / "docs" / "observability.md"
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gauge": ("",),
}


def families() -> dict[str, Any]:
    """Metric family name -> family, from the operator's registry."""
    return {f.name: f for f in metrics.REGISTRY.collect()}


def exposed_names() -> dict[str, str]:
    """Every series name /metrics can show -> its family."""
    out = {}
    for name, family in families().items():
        for suffix in SUFFIXES[family.type]:
            out[name + suffix] = name
    return out


def label_names() -> set[str]:
    names: set[str] = {"le"}
    for labels in metrics.LABELS.values():
        names.update(labels)
    return names


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def exprs(dashboard: dict[str, Any]) -> list[str]:
    found = [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]
    found += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return found


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def test_registry_has_the_documented_families() -> None:
    assert set(families()) == {
        "kafka_health_findings",
        "kafka_health_cycle_duration_seconds",
        "kafka_health_last_success_timestamp_seconds",
        "kafka_health_healthy",
        "kafka_health_degraded",
        "kafka_health_listener_certificate_expiry_timestamp_seconds",
        "kafka_health_reassignment_remaining_bytes",
        "kafka_health_reassignment_eta_seconds",
        "kafka_health_consumer_lag_seconds",
        "kafka_health_remediations",
        "kafka_health_client_process_restarts",
        "kafka_health_spark_driver_restarts",
    }


def test_dashboard_queries_only_real_metrics_and_labels(dashboard: dict[str, Any]) -> None:
    names = exposed_names()
    labels = label_names()
    used: set[str] = set()
    for expr in exprs(dashboard):
        for name in re.findall(r"\bkafka_health_\w+", expr):
            assert name in names, f"{name} in {expr!r} is not a series of report/metrics.py"
            used.add(names[name])
        for group in re.findall(r"\bby \(([^)]*)\)", expr):
            for label in (g.strip() for g in group.split(",")):
                assert label in labels, f"label {label!r} in {expr!r}"
        for label in re.findall(r"(\w+)\s*=~?\s*\"", expr):
            assert label in labels, f"label {label!r} in {expr!r}"
    assert used == set(families()), f"families without a panel: {set(families()) - used}"


def test_dashboard_is_importable(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "kafka-health-operator"
    assert dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            assert panel["targets"], panel["title"]
            assert panel.get("description") or panel["type"] == "timeseries", panel["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert {"namespace", "policy"} <= set(variables)
    # No datasource of the author's Grafana is baked in.
    assert '"uid": "${datasource}"' in DASHBOARD.read_text()
    assert "__inputs" not in dashboard


def test_chart_ships_the_same_dashboard() -> None:
    assert (CHART / "files" / "kafka-health-operator.json").read_bytes() == DASHBOARD.read_bytes()


def test_observability_doc_lists_every_metric_condition_and_reason() -> None:
    doc = DOC.read_text()
    for name, family in families().items():
        shown = name + ("_total" if family.type == "counter" else "")
        assert f"`{shown}`" in doc, shown
    for label in label_names() - {"le"}:
        assert f"`{label}`" in doc, label
    for ctype in ConditionType:
        assert f"`{ctype.value}`" in doc, ctype
    for withheld in WithheldReason:
        assert f"`{withheld.value}`" in doc, withheld
    for reason in (
        "IncidentOpened",
        "IncidentResolved",
        "Recovered",
        "KafkaUnreachable",
        "Diagnosed",
        "AsExpected",
    ):
        assert f"`{reason}`" in doc, reason


def test_alert_examples_use_real_metrics() -> None:
    names = exposed_names()
    block = re.search(r"```yaml\n(groups:.*?)```", DOC.read_text(), re.S)
    assert block
    for name in re.findall(r"\bkafka_health_\w+", block.group(1)):
        assert name in names, name
