"""The shipping scripts and the kind e2e files: well-formed and consistent with each other.
(The kind test itself needs Docker and runs in users' CI, not here.)"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_health.models.policy import KafkaHealthPolicy
from tests.ship import chart
from tests.ship.chart import REPO

KIND = REPO / "hack" / "kind"
WORKFLOW = REPO / ".github" / "workflows" / "kind-e2e.yaml"
SCRIPTS = [REPO / "hack" / "helm.sh", REPO / "hack" / "lint-image.sh", KIND / "e2e.sh"]


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_scripts_parse(script: Path) -> None:
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert script.read_text().startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in script.read_text()


def test_helm_script_warm_run_prints_the_pinned_binary_last(helm_bin: str) -> None:
    """The script's own cache (KAFKA_HEALTH_HELM unset): no build, the last stdout line is the
    helm binary at the pinned version."""
    script = (REPO / "hack" / "helm.sh").read_text()
    pinned = re.search(r'HELM_VERSION="\$\{KAFKA_HEALTH_HELM_VERSION:-(v3\.[0-9.]+)\}"', script)
    assert pinned
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_HEALTH_HELM", "KAFKA_HEALTH_HELM_VERSION")}
    cache = (
        Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-health" / "helm" / pinned.group(1)
    )
    if not (cache / "bin" / "helm").is_file():
        pytest.skip(f"no cached helm in {cache} (KAFKA_HEALTH_HELM chose another one)")
    proc = subprocess.run(
        ["bash", str(REPO / "hack" / "helm.sh")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=10,
    )
    path = proc.stdout.strip().splitlines()[-1]
    assert path == str(cache / "bin" / "helm")
    assert proc.stderr == ""  # warm: nothing to say, nothing built
    version = subprocess.run(
        [path, "version", "--template", "{{.Version}}"], capture_output=True, text=True, check=True
    )
    assert version.stdout.strip() == pinned.group(1)


def test_workflow_runs_every_e2e_step_and_lints() -> None:
    wf = yaml.safe_load(WORKFLOW.read_text())
    assert set(wf["jobs"]) == {"lint", "e2e"}
    runs = "\n".join(step.get("run", "") for job in wf["jobs"].values() for step in job["steps"])
    assert "  up | image | install | smoke | collect | down) " in (KIND / "e2e.sh").read_text()
    for step in ("up", "image", "install", "smoke", "collect", "down"):
        assert f"hack/kind/e2e.sh {step}" in runs, step
    assert "bash hack/lint-image.sh" in runs
    assert "lint --strict" in runs
    e2e_steps = wf["jobs"]["e2e"]["steps"]
    always = [s["name"] for s in e2e_steps if s.get("if") == "always()"]
    assert always == ["Collect logs and objects", "Upload artifacts", "Delete the kind cluster"]
    assert wf["permissions"] == {"contents": "read"}
    kind_version = re.search(r'KIND_VERSION="\$\{KIND_VERSION:-(v[0-9.]+)\}"', (KIND / "e2e.sh").read_text())
    assert kind_version and wf["env"]["KIND_VERSION"] == kind_version.group(1)


def test_kind_config_pins_the_node_image() -> None:
    (cfg,) = docs(KIND / "kind-config.yaml")
    assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    for node in cfg["nodes"]:
        assert re.fullmatch(r"kindest/node:v1\.\d+\.\d+@sha256:[0-9a-f]{64}", node["image"]), node


def test_in_cluster_kafka_is_consistent() -> None:
    objs = docs(KIND / "kafka.yaml")
    services = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Service"}
    (sts,) = [o for o in objs if o["kind"] == "StatefulSet"]
    assert services[sts["spec"]["serviceName"]]["spec"]["clusterIP"] == "None"
    env = {e["name"]: e.get("value") for e in sts["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert sts["spec"]["serviceName"] in env["KAFKA_ADVERTISED_LISTENERS"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", env["CLUSTER_ID"]), "CLUSTER_ID must be a base64 UUID"
    (policy,) = docs(KIND / "policy-smoke.yaml")
    spec = KafkaHealthPolicy.model_validate(policy).spec
    (server,) = spec.cluster.bootstrap_servers
    assert server.startswith(f"kafka-0.{sts['spec']['serviceName']}.kafka.svc")
    assert (
        spec.cluster.broker_pods is not None
        and spec.cluster.broker_pods.stateful_set == sts["metadata"]["name"]
    )


def test_e2e_values_render(helm_bin: str) -> None:
    values = yaml.safe_load((KIND / "values-e2e.yaml").read_text())
    objs = chart.render(values, namespace="kafka-health")
    dep = chart.one(objs, "Deployment")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "kafka-health-operator:e2e"
    assert container["imagePullPolicy"] == "Never"
    assert "--namespace=kafka" in container["args"]
