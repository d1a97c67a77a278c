"""The CRD generated from the models: committed copy up to date, structural, explained, validated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from kafka_health.cli.main import app
from kafka_health.models import policy
from kafka_health.resources.crd import CRD_PATH, PRINTER_COLUMNS, crd, crd_yaml

from .bad_specs import GOOD_SPECS

ROOT = Path(__file__).resolve().parents[3]


def schema() -> dict[str, Any]:
    return crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}")
    if "items" in node:
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}.*")


def at(path: str) -> dict[str, Any]:
    node = schema()
    for part in path.strip(".").split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def test_committed_crd_is_up_to_date() -> None:
    committed = (ROOT / CRD_PATH).read_text()
    assert committed == crd_yaml(), (
        f"{CRD_PATH} differs from the models: run `kafka-health crd > {CRD_PATH}` and commit the result"
    )


def test_cli_prints_the_crd() -> None:
    result = CliRunner().invoke(app, ["crd"])
    assert result.exit_code == 0
    assert result.output == crd_yaml()
    assert yaml.safe_load(result.output)["metadata"]["name"] == "kafkahealthpolicies.kafkahealth.io"


def test_names_scope_and_subresources() -> None:
    spec = crd()["spec"]
    assert spec["group"] == "kafkahealth.io" and spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "KafkaHealthPolicy" and spec["names"]["shortNames"] == ["khp"]
    # A category is a name `kubectl get` expands; it must not be another product's resource name.
    assert spec["names"]["categories"] == ["kafkahealth"]
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}


def test_schema_is_structural() -> None:
    forbidden = {
        "$ref",
        "$defs",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "title",
        "const",
        "patternProperties",
        "propertyNames",
    }
    for path, node in walk(schema()):
        assert not forbidden & node.keys(), f"{path}: {forbidden & node.keys()}"
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"{path}: no type"
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") is not False, path
        assert "default" not in node or node["default"] is not None, path


def test_every_field_has_a_description() -> None:
    """Every property (what `kubectl explain` lists), and every item that is an object."""
    missing = [
        path
        for path, node in walk(schema())
        if path
        and path != ".metadata"
        and not node.get("description")
        and (node.get("type") == "object" or not path.endswith(("[]", ".*")))
    ]
    assert missing == []


def test_preserve_unknown_fields_only_for_kopf_bookkeeping() -> None:
    preserved = [path for path, node in walk(schema()) if node.get("x-kubernetes-preserve-unknown-fields")]
    assert preserved == [".status.kopf"]


def test_nullable_only_in_status() -> None:
    nullable = [path for path, node in walk(schema()) if node.get("nullable")]
    assert nullable and all(path.startswith(".status.") for path in nullable)


def test_enums_and_defaults() -> None:
    mode = at("spec.remediation.mode")
    assert mode["enum"] == ["Observe", "DryRun", "Enforce"] and mode["default"] == "Observe"
    assert at("spec.remediation.preferredLeaderElection.batchSize")["minimum"] == 1
    assert at("spec.cluster.security.protocol")["enum"] == ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
    assert at("spec.diagnostics")["default"] == {}
    assert at("status.conditions.[].type")["enum"] == ["Ready", "Healthy", "Remediating", "Degraded"]


def rules(path: str) -> list[str]:
    return [r["rule"] for r in at(path).get("x-kubernetes-validations", [])]


def test_cel_rules_for_the_cross_field_checks() -> None:
    strategy = rules("spec.remediation.offsetResets.requests.[]")
    assert any("has(self.toOffset)" in r and r.endswith("== 1") for r in strategy)
    assert any("duration('24h')" in r for r in rules("spec.remediation.maintenanceWindows.[].duration"))
    assert any("duration('0s')" in r for r in rules("spec.remediation.rollingRestart.timeouts.urpZero"))
    assert any("duration('10s')" in r for r in rules("spec.diagnostics.interval"))
    assert rules("spec.cluster.security") and rules("spec.cluster.brokerPods") and rules("spec")


def test_request_ids_are_unique_by_list_type_map() -> None:
    for path in (
        "spec.remediation.rollingRestart.requests",
        "spec.remediation.offsetResets.requests",
        "status.rollingRestarts",
    ):
        node = at(path)
        assert node["x-kubernetes-list-type"] == "map" and node["x-kubernetes-list-map-keys"] == ["id"], path
    assert at("status.conditions")["x-kubernetes-list-map-keys"] == ["type"]


def test_cel_rules_have_cost_bounds() -> None:
    """The API server rejects CEL rules it cannot bound: every string a rule reads needs maxLength,
    every list it iterates needs maxItems."""
    for path, node in walk(schema()):
        if node.get("x-kubernetes-validations") and node.get("type") == "string":
            assert "maxLength" in node, path
        if node.get("type") == "array" and path.startswith(".spec"):
            assert "maxItems" in node, path


def test_printer_columns_point_at_fields_of_the_schema() -> None:
    names = [c["name"] for c in PRINTER_COLUMNS]
    assert names == ["Ready", "Health", "Findings", "Remediation", "Mode", "Age"]
    assert [c["name"] for c in PRINTER_COLUMNS if c.get("priority", 0) > 0] == ["Remediation"]
    for column in PRINTER_COLUMNS:
        path = column["jsonPath"]
        if path == ".metadata.creationTimestamp":
            continue
        if column["name"] == "Ready":
            assert path == '.status.conditions[?(@.type=="Ready")].status'
            continue
        node = at(path)
        assert node["type"] == column["type"], path


def test_crd_defaults_equal_the_model_defaults() -> None:
    """Applying the CRD's defaults (as the API server does) to each good spec gives what pydantic gives."""

    def default(node: dict[str, Any], value: Any) -> Any:
        if isinstance(value, dict) and "properties" in node:
            out = dict(value)
            for name, child in node["properties"].items():
                if name not in out and "default" in child:
                    out[name] = child["default"]
                if name in out:
                    out[name] = default(child, out[name])
            return out
        if isinstance(value, list) and "items" in node:
            return [default(node["items"], v) for v in value]
        return value

    for description, spec in GOOD_SPECS:
        expected = policy.KafkaHealthPolicySpec.model_validate(spec).model_dump(
            mode="json", exclude_none=True
        )
        assert default(at("spec"), spec) == expected, description
