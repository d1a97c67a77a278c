"""deploy/argocd/health.lua on a real Lua 5.1 runtime (Argo CD runs gopher-lua, a Lua 5.1).

The cases and expected results are deploy/argocd/health_test.yaml (Argo CD's own test format);
the input objects are tests/ship/fixtures/argocd/*.yaml. The fixtures are hand-written to the
status contract for now; they are to be replaced by objects the e2e suite produced.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from lupa import lua51

from kafka_health.models.policy import KafkaHealthPolicy
from tests.ship.chart import REPO

ARGOCD = REPO / "deploy" / "argocd"
SCRIPT = (ARGOCD / "health.lua").read_text()
CASES = yaml.safe_load((ARGOCD / "health_test.yaml").read_text())["tests"]
ARGO_STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}


def to_lua(lua: Any, value: Any) -> Any:
    """JSON-like Python -> Lua, as Argo CD hands `obj` over: objects and arrays become tables
    (arrays 1-based), null fields are absent."""
    if isinstance(value, dict):
        table = lua.table()
        for key, item in value.items():
            if item is not None:
                table[key] = to_lua(lua, item)
        return table
    if isinstance(value, list):
        table = lua.table()
        for index, item in enumerate(value, start=1):
            table[index] = to_lua(lua, item)
        return table
    return value


def run_health(obj: dict[str, Any]) -> dict[str, str]:
    """Run the script as Argo CD does: `obj` global, the script's return value is the health."""
    lua = lua51.LuaRuntime(unpack_returned_tuples=True, register_eval=False)
    assert "Lua 5.1" in lua.eval("_VERSION")
    # Argo CD's sandbox has no io/os/require: the script must not need them.
    lua.execute("io = nil; os = nil; require = nil; dofile = nil; loadfile = nil; package = nil")
    lua.globals().obj = to_lua(lua, obj)
    result = lua.execute(SCRIPT)
    return {"status": result["status"], "message": result["message"]}


def fixture(case: dict[str, Any]) -> dict[str, Any]:
    path = (ARGOCD / case["inputPath"]).resolve()
    return dict(yaml.safe_load(path.read_text()))


def test_runtime_is_lua_5_1() -> None:
    lua = lua51.LuaRuntime()
    assert lua.eval("_VERSION") == "Lua 5.1"


@pytest.mark.parametrize("case", CASES, ids=[Path(c["inputPath"]).stem for c in CASES])
def test_health(case: dict[str, Any]) -> None:
    assert run_health(fixture(case)) == case["healthStatus"]


@pytest.mark.parametrize("case", CASES, ids=[Path(c["inputPath"]).stem for c in CASES])
def test_fixture_is_a_valid_policy_object(case: dict[str, Any]) -> None:
    """The fixtures follow the status contract (models/policy.py), so they are what the operator
    can write; `kafkahealth.io` objects only."""
    obj = fixture(case)
    KafkaHealthPolicy.model_validate(obj)
    assert obj["apiVersion"] == "kafkahealth.io/v1alpha1"
    assert case["healthStatus"]["status"] in ARGO_STATUSES


def test_every_health_status_is_covered() -> None:
    assert {c["healthStatus"]["status"] for c in CASES} == {"Healthy", "Progressing", "Degraded", "Suspended"}


def test_every_fixture_has_a_case() -> None:
    listed = {(ARGOCD / c["inputPath"]).resolve() for c in CASES}
    present = {p.resolve() for p in (REPO / "tests" / "ship" / "fixtures" / "argocd").glob("*.yaml")}
    assert listed == present


def test_degraded_wins_over_paused_and_paused_over_remediating() -> None:
    obj = fixture(next(c for c in CASES if c["inputPath"].endswith("rolling-restart-running.yaml")))
    assert run_health(obj)["status"] == "Progressing"
    obj["spec"]["remediation"]["paused"] = True
    assert run_health(obj)["status"] == "Suspended"
    for cond in obj["status"]["conditions"]:
        if cond["type"] == "Degraded":
            cond.update(status="True", reason="RemediationHalted", message="broker 2 did not come back")
    assert run_health(obj) == {
        "status": "Degraded",
        "message": "RemediationHalted: broker 2 did not come back",
    }


def test_a_planned_roll_is_progressing_not_degraded() -> None:
    """Issue 33 point 6: the status the operator writes while its roll restarts a broker on request
    (Degraded=False PlannedRestart, the broker's absence a planned_restart info incident) is
    Progressing, and once the roll is over Healthy; the status it wrote before for the same moment
    (Degraded=True ClusterPartlyUnreadable, health Critical) was Degraded in both."""
    during = fixture(next(c for c in CASES if c["inputPath"].endswith("/rolling-restart-planned.yaml")))
    assert run_health(during)["status"] == "Progressing"
    after = fixture(
        next(c for c in CASES if c["inputPath"].endswith("rolling-restart-planned-just-finished.yaml"))
    )
    assert run_health(after)["status"] == "Healthy"
    for obj in (during, after):
        status = obj["status"]
        status["health"] = "Critical"
        for cond in status["conditions"]:
            if cond["type"] == "Degraded":
                cond.update(
                    status="True", reason="ClusterPartlyUnreadable", message="Could not read: log_dirs:2."
                )
            if cond["type"] == "Healthy":
                cond.update(status="False", reason="CriticalFindings", message="worst: broker_down:2")
        assert run_health(obj) == {
            "status": "Degraded",
            "message": "ClusterPartlyUnreadable: Could not read: log_dirs:2.",
        }
    # Something the roll did not cause still reads Degraded during the roll.
    other = fixture(next(c for c in CASES if c["inputPath"].endswith("/rolling-restart-planned.yaml")))
    for cond in other["status"]["conditions"]:
        if cond["type"] == "Degraded":
            cond.update(
                status="True", reason="ClusterPartlyUnreadable", message="Could not read: log_dirs:1."
            )
    assert run_health(other)["status"] == "Degraded"


def test_minimal_objects_do_not_crash_the_script() -> None:
    """Argo CD shows a Lua error as the app's health: never fail on sparse objects."""
    sparse: list[dict[str, Any]] = [
        {},
        {"metadata": {}},
        {"status": {}},
        {"status": {"conditions": []}},
        {"status": {"conditions": [{"type": "Ready"}]}},
        {"spec": {}, "status": {"conditions": [{"type": "Healthy", "status": "True"}]}},
        {
            "metadata": {"generation": 2},
            "status": {"observedGeneration": 1, "conditions": [{"type": "Ready"}]},
        },
        {"status": {"pendingPlan": {}, "conditions": [{"type": "Ready", "status": "True"}]}},
    ]
    for obj in sparse:
        health = run_health(obj)
        assert health["status"] in ARGO_STATUSES, obj
        assert health["message"], obj


def test_argocd_cm_snippets_embed_the_script() -> None:
    """docs/gitops.md and deploy/argocd/argocd-cm.yaml carry health.lua verbatim."""
    cm = yaml.safe_load((ARGOCD / "argocd-cm.yaml").read_text())
    key = "resource.customizations.health.kafkahealth.io_KafkaHealthPolicy"
    assert cm["data"][key] == SCRIPT
    doc = (REPO / "docs" / "gitops.md").read_text()
    block = re.search(r"```yaml\n(# argocd-cm\n.*?)```", doc, re.S)
    assert block, "docs/gitops.md lacks the argocd-cm yaml block"
    assert yaml.safe_load(block.group(1))["data"][key] == SCRIPT


def test_example_application_is_valid() -> None:
    app = yaml.safe_load((ARGOCD / "application.yaml").read_text())
    assert app["apiVersion"] == "argoproj.io/v1alpha1" and app["kind"] == "Application"
    assert app["spec"]["destination"]["namespace"]
    assert app["spec"]["source"]["path"] or app["spec"]["source"].get("chart")


@pytest.mark.k8s
def test_fixtures_round_trip_through_the_real_crd(k8s_api: Any, chart_crds: None, k8s_namespace: str) -> None:
    """Each fixture's status survives the API server's structural schema unchanged (nothing
    pruned, nothing rejected), and the object read back gets the same health."""
    from kubernetes import client

    custom: Any = client.CustomObjectsApi(k8s_api)
    for case in CASES:
        obj = fixture(case)
        meta = obj["metadata"]
        body = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {"name": Path(case["inputPath"]).stem, "annotations": meta.get("annotations") or {}},
            "spec": obj["spec"],
        }
        created = custom.create_namespaced_custom_object(
            "kafkahealth.io", "v1alpha1", k8s_namespace, "kafkahealthpolicies", body
        )
        name = created["metadata"]["name"]
        if "status" in obj:
            custom.patch_namespaced_custom_object_status(
                "kafkahealth.io",
                "v1alpha1",
                k8s_namespace,
                "kafkahealthpolicies",
                name,
                {"status": obj["status"]},
            )
        got = custom.get_namespaced_custom_object(
            "kafkahealth.io", "v1alpha1", k8s_namespace, "kafkahealthpolicies", name
        )
        assert got.get("status") == obj.get("status"), name
        # The server's generation differs from the fixture's; keep the fixture's for the check.
        got["metadata"]["generation"] = meta["generation"]
        assert run_health(got) == case["healthStatus"], name
