"""The Helm chart against the real local API server: server-side dry-run apply of the rendered
chart, a real `helm install`/`helm uninstall`, and the chart's RBAC proven from the
ServiceAccount's side (authorization reviews, and Kopf running under exactly that Role)."""

from __future__ import annotations

import subprocess
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from kopf.testing import KopfRunner
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kafka_health._kits.waiting import wait_for
from tests.ship import chart
from tests.ship.chart import CHART, REPO

pytestmark = pytest.mark.k8s


def release_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def dry_run(kubeconfig: Path, bin_dir: str | None, manifest: str) -> list[str]:
    out = chart.kubectl(
        kubeconfig, "apply", "--server-side", "--dry-run=server", "--field-manager=helm-chart-test",
        "-f", "-", bin_dir=bin_dir, input_text=manifest,
    )  # fmt: skip
    return [line for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("mode", ["release-namespace", "namespaces-ha", "all-namespaces"])
def test_rendered_chart_passes_server_side_dry_run(
    k8s_control_plane: Any,
    k8s_bin_dir: str | None,
    chart_crds: None,
    k8s_namespace: str,
    make_namespace: Callable[[str], str],
    helm_bin: str,
    mode: str,
) -> None:
    values: dict[str, Any] = {}
    if mode == "namespaces-ha":
        values = {
            "watch": {"namespaces": [k8s_namespace, make_namespace("kafka")]},
            "rbac": {"extraNamespaces": [make_namespace("brokers")]},
            "replicaCount": 2,
            "podDisruptionBudget": {"enabled": True},
            "history": {"persistence": {"enabled": True, "accessModes": ["ReadWriteMany"]}},
            "grafanaDashboard": {"enabled": True},
        }
    elif mode == "all-namespaces":
        values = {"watch": {"allNamespaces": True}}
    manifest = chart.render_text(values, release=release_name("dry"), namespace=k8s_namespace)
    objs = [d for d in yaml.safe_load_all(manifest) if d]
    lines = dry_run(k8s_control_plane.kubeconfig, k8s_bin_dir, manifest)
    assert len(lines) == len(objs), lines
    assert all(line.endswith("serverside-applied (server dry run)") for line in lines), lines
    kinds = {o["kind"] for o in objs}
    assert {"Deployment", "ServiceAccount", "Service", "ClusterRole", "ClusterRoleBinding"} <= kinds
    assert ("ClusterKopfPeering" in kinds) == (mode == "all-namespaces")


def test_deployment_meets_the_restricted_pod_security_standard(
    k8s_control_plane: Any,
    k8s_api: client.ApiClient,
    k8s_bin_dir: str | None,
    chart_crds: None,
    make_namespace: Callable[[str], str],
    helm_bin: str,
) -> None:
    """PodSecurity admission (enforce + warn = restricted) has nothing to say about the chart."""
    ns = make_namespace("restricted")
    core: Any = client.CoreV1Api(k8s_api)
    labels = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn")}
    core.patch_namespace(ns, {"metadata": {"labels": labels}})
    manifest = chart.render_text({"watch": {"namespaces": [ns]}}, release=release_name("pss"), namespace=ns)
    proc = subprocess.run(
        [chart.kubectl_binary(k8s_bin_dir), f"--kubeconfig={k8s_control_plane.kubeconfig}", "apply",
         "--server-side", "--dry-run=server", "-f", "-"],
        input=manifest, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "PodSecurity" not in proc.stderr and "violate" not in proc.stderr, proc.stderr
    # The check is live: an unconfined seccomp profile is flagged.
    bad = manifest.replace("type: RuntimeDefault", "type: Unconfined")
    proc = subprocess.run(
        [chart.kubectl_binary(k8s_bin_dir), f"--kubeconfig={k8s_control_plane.kubeconfig}", "apply",
         "--server-side", "--dry-run=server", "-f", "-"],
        input=bad, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "would violate PodSecurity" in proc.stderr, proc.stderr


def test_server_side_dry_run_rejects_what_the_server_rejects(
    k8s_control_plane: Any, k8s_bin_dir: str | None, k8s_namespace: str, helm_bin: str
) -> None:
    """The dry run is a real check: a broken Deployment is refused by the API server."""
    manifest = chart.render_text(None, release=release_name("bad"), namespace=k8s_namespace)
    broken = manifest.replace("containerPort: 8081", "containerPort: 80811")
    with pytest.raises(chart.ChartError, match="containerPort"):
        dry_run(k8s_control_plane.kubeconfig, k8s_bin_dir, broken)


def test_helm_install_and_uninstall(
    k8s_control_plane: Any, k8s_api: client.ApiClient, chart_crds: None, k8s_namespace: str, helm_bin: str
) -> None:
    release = release_name("inst")
    kubeconfig = str(k8s_control_plane.kubeconfig)
    out = chart.helm(
        "install", release, str(CHART), "--namespace", k8s_namespace, "--kubeconfig", kubeconfig,
        "--set", "grafanaDashboard.enabled=true",
    )  # fmt: skip
    assert "STATUS: deployed" in out
    assert "NOTES:" in out and f"It serves KafkaHealthPolicies in: {k8s_namespace}." in out
    apps: Any = client.AppsV1Api(k8s_api)
    rbac: Any = client.RbacAuthorizationV1Api(k8s_api)
    custom: Any = client.CustomObjectsApi(k8s_api)
    name = f"{release}-kafka-health-operator"
    dep = apps.read_namespaced_deployment(name, k8s_namespace)
    assert dep.spec.template.spec.containers[0].security_context.read_only_root_filesystem is True
    assert rbac.read_namespaced_role(name, k8s_namespace).rules
    assert rbac.read_cluster_role(f"{name}-discovery").rules
    peering = custom.get_namespaced_custom_object(
        "kopf.dev", "v1", k8s_namespace, "kopfpeerings", "kafka-health"
    )
    assert peering["metadata"]["labels"]["app.kubernetes.io/instance"] == release

    listing = chart.helm("list", "--namespace", k8s_namespace, "--kubeconfig", kubeconfig, "-o", "json")
    assert [r["name"] for r in yaml.safe_load(listing)] == [release]

    chart.helm("uninstall", release, "--namespace", k8s_namespace, "--kubeconfig", kubeconfig)
    with pytest.raises(ApiException) as gone:
        rbac.read_cluster_role(f"{name}-discovery")
    assert gone.value.status == 404
    with pytest.raises(ApiException) as gone:
        rbac.read_namespaced_role(name, k8s_namespace)
    assert gone.value.status == 404
    # The NOTES of the other modes render too.
    for flags in (
        ["--set", "watch.allNamespaces=true"],
        ["--set", "peering.enabled=false", "--set", "rbac.extraNamespaces={brokers}"],
    ):
        out = chart.helm(
            "install", release_name("notes"), str(CHART), "--namespace", k8s_namespace,
            "--kubeconfig", kubeconfig, "--dry-run=server", *flags,
        )  # fmt: skip
        assert "NOTES:" in out and "kubectl get khp -A" in out, out
    # CRDs stay (Helm never deletes crds/): policies survive an operator uninstall.
    ext: Any = client.ApiextensionsV1Api(k8s_api)
    assert ext.read_custom_resource_definition("kafkahealthpolicies.kafkahealth.io")


# --------------------------------------------------------------------------------------------
# RBAC from the ServiceAccount's side

ALLOWED_SERVED = [
    ("kafkahealth.io", "kafkahealthpolicies", "", ["get", "list", "watch", "patch"]),
    ("kafkahealth.io", "kafkahealthpolicies", "status", ["get", "patch", "update"]),
    ("", "events", "", ["create", "patch"]),
    ("events.k8s.io", "events", "", ["create", "patch"]),
    ("", "pods", "", ["get", "list", "watch", "delete"]),
    ("apps", "statefulsets", "", ["get", "list"]),
    ("", "configmaps", "", ["get", "list", "create", "update", "patch", "delete"]),
    ("", "secrets", "", ["get"]),
    ("kopf.dev", "kopfpeerings", "", ["get", "list", "watch", "patch"]),
    ("zalando.org", "kopfpeerings", "", ["get", "list", "watch", "patch"]),
]
DENIED_SERVED = [
    ("kafkahealth.io", "kafkahealthpolicies", "", ["create", "update", "delete", "deletecollection"]),
    ("", "secrets", "", ["list", "watch", "create", "update", "patch", "delete"]),
    ("", "pods", "", ["create", "update", "patch", "deletecollection"]),
    ("", "pods", "exec", ["create", "get"]),
    ("", "pods", "eviction", ["create"]),
    ("apps", "statefulsets", "", ["watch", "patch", "update", "delete"]),
    ("", "configmaps", "", ["watch", "deletecollection"]),
    ("", "events", "", ["delete", "list"]),
    ("", "serviceaccounts", "", ["get"]),
    ("rbac.authorization.k8s.io", "roles", "", ["get", "create", "bind", "escalate"]),
    ("coordination.k8s.io", "leases", "", ["get", "create"]),
]
LOCK = [("coordination.k8s.io", "leases", "", ["get", "create", "update"])]
LOCK_DENIED = [
    ("coordination.k8s.io", "leases", "", ["list", "watch", "patch", "delete", "deletecollection"])
]
BROKERS = [
    ("", "pods", "", ["get", "list", "watch", "delete"]),
    ("apps", "statefulsets", "", ["get", "list"]),
]


def can(
    api: client.ApiClient, user: str, verb: str, group: str, resource: str, sub: str, ns: str | None
) -> bool:
    authz: Any = client.AuthorizationV1Api(api)
    attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": resource}
    if sub:
        attrs["subresource"] = sub
    if ns is not None:
        attrs["namespace"] = ns
    review = authz.create_subject_access_review(
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
         "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
                  "resourceAttributes": attrs}}
    )  # fmt: skip
    return bool(review.status.allowed)


def check(api: client.ApiClient, user: str, table: list[Any], ns: str | None, expected: bool) -> list[str]:
    wrong = []
    for group, resource, sub, verbs in table:
        for verb in verbs:
            if can(api, user, verb, group, resource, sub, ns) != expected:
                what = f"{verb} {group or 'core'}/{resource}{'/' + sub if sub else ''} in {ns or 'cluster'}"
                wrong.append(("NOT allowed: " if expected else "allowed: ") + what)
    return wrong


def test_chart_rbac_namespaced_grants_exactly_the_contract(
    k8s_control_plane: Any,
    k8s_api: client.ApiClient,
    k8s_namespace: str,
    make_namespace: Callable[[str], str],
    helm_bin: str,
    tmp_path: Path,
) -> None:
    served, brokers, other = make_namespace("served"), make_namespace("brokers"), make_namespace("other")
    ident = chart.install_operator_identity(
        k8s_control_plane,
        release=release_name("rbac"),
        namespace=k8s_namespace,
        watch=[served],
        extra_namespaces=[brokers],
        out_dir=tmp_path,
    )
    try:
        user = ident.username
        wrong = check(k8s_api, user, ALLOWED_SERVED, served, True)
        wrong += check(k8s_api, user, DENIED_SERVED, served, False)
        wrong += check(k8s_api, user, BROKERS, brokers, True)
        wrong += check(
            k8s_api, user, [t for t in ALLOWED_SERVED if t[1] not in ("pods", "statefulsets")], brokers, False
        )
        wrong += check(k8s_api, user, ALLOWED_SERVED, other, False)
        # The operator's own namespace is not served: nothing there either.
        wrong += check(k8s_api, user, ALLOWED_SERVED, k8s_namespace, False)
        # ... but the cluster action lock: Leases in the lock namespace (default: the release's).
        wrong += check(k8s_api, user, LOCK, k8s_namespace, True)
        wrong += check(k8s_api, user, LOCK_DENIED, k8s_namespace, False)
        wrong += check(k8s_api, user, LOCK, served, False)
        wrong += check(
            k8s_api,
            user,
            [("apiextensions.k8s.io", "customresourcedefinitions", "", ["get", "list", "watch"])],
            None,
            True,
        )
        wrong += check(
            k8s_api,
            user,
            [("apiextensions.k8s.io", "customresourcedefinitions", "", ["create", "patch", "delete"])],
            None,
            False,
        )
        wrong += check(k8s_api, user, [("", "namespaces", "", ["list", "watch", "get"])], None, False)
        wrong += check(
            k8s_api, user, [("kafkahealth.io", "kafkahealthpolicies", "", ["list", "watch"])], None, False
        )
        wrong += check(
            k8s_api, user, [("kopf.dev", "clusterkopfpeerings", "", ["get", "patch"])], None, False
        )
        assert not wrong, "\n".join(wrong)
    finally:
        ident.uninstall()


def test_chart_rbac_all_namespaces_grants_exactly_the_contract(
    k8s_control_plane: Any, k8s_api: client.ApiClient, k8s_namespace: str, helm_bin: str, tmp_path: Path
) -> None:
    ident = chart.install_operator_identity(
        k8s_control_plane,
        release=release_name("rbacall"),
        namespace=k8s_namespace,
        all_namespaces=True,
        out_dir=tmp_path,
    )
    try:
        user = ident.username
        cluster_wide = [t for t in ALLOWED_SERVED if t[1] != "kopfpeerings"]
        wrong = check(k8s_api, user, cluster_wide, "anywhere", True)
        wrong += check(k8s_api, user, cluster_wide, None, True)
        wrong += check(k8s_api, user, DENIED_SERVED, "anywhere", False)
        wrong += check(k8s_api, user, [("", "namespaces", "", ["list", "watch"])], None, True)
        wrong += check(k8s_api, user, [("", "namespaces", "", ["get", "create", "delete"])], None, False)
        wrong += check(
            k8s_api,
            user,
            [
                ("kopf.dev", "clusterkopfpeerings", "", ["get", "list", "watch", "patch"]),
                ("zalando.org", "clusterkopfpeerings", "", ["get", "list", "watch", "patch"]),
            ],
            None,
            True,
        )
        wrong += check(k8s_api, user, [("kopf.dev", "kopfpeerings", "", ["get", "patch"])], "anywhere", False)
        assert not wrong, "\n".join(wrong)
    finally:
        ident.uninstall()


OPERATOR = """
import kopf

@kopf.on.login()
def login(**kwargs):
    return kopf.login_with_kubeconfig(**kwargs)  # the ServiceAccount's kubeconfig (KUBECONFIG)

@kopf.on.startup()
def configure(settings, **_):
    settings.watching.server_timeout = 10
    settings.peering.lifetime = 30
    # Exact namespaces, no globs: no namespace scanning. With scanning on, Kopf 1.45 lists
    # namespaces cluster-wide even for --namespace NS (9 retries on 403, ~55 s, then falls back).
    settings.scanning.disabled = True

@kopf.on.create("kafkahealth.io", "v1alpha1", "kafkahealthpolicies")
def created(body, patch, **_):
    kopf.info(body, reason="RbacProbe", message="posted under the chart's Role")
    patch.status["observedGeneration"] = body["metadata"]["generation"]
    patch.status["conditions"] = [{
        "type": "Ready", "status": "True", "reason": "RbacProbe",
        "message": "written under the chart's Role", "lastTransitionTime": "2026-11-20T00:00:00Z",
    }]
"""


def test_kopf_runs_under_the_chart_rbac(
    k8s_control_plane: Any,
    k8s_api: client.ApiClient,
    k8s_namespace: str,
    make_namespace: Callable[[str], str],
    helm_bin: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kopf with peering, resource discovery, watching, status patches and Events, authenticated
    as the chart's ServiceAccount with only the chart's Role: nothing is forbidden."""
    served = make_namespace("kopf")
    ident = chart.install_operator_identity(
        k8s_control_plane,
        release=release_name("kopf"),
        namespace=k8s_namespace,
        watch=[served],
        out_dir=tmp_path,
    )
    handlers = tmp_path / "probe_operator.py"
    handlers.write_text(textwrap.dedent(OPERATOR))
    monkeypatch.setenv("KUBECONFIG", str(ident.kubeconfig))
    monkeypatch.setenv("POD_ID", "kafka-health-operator-test-0")
    custom: Any = client.CustomObjectsApi(k8s_api)
    core: Any = client.CoreV1Api(k8s_api)
    policy = yaml.safe_load((REPO / "examples" / "observe-only.yaml").read_text())
    args = ["run", "--namespace", served, "--peering", "kafka-health", str(handlers)]
    # A registry of its own: handlers other tests loaded into Kopf's default registry (in this
    # process) must not run here, and ours must not stay behind for them.
    previous_registry = kopf.get_default_registry()
    try:
        with KopfRunner(args, timeout=90, registry=kopf.OperatorRegistry()) as runner:
            wait_for(
                lambda: custom.create_namespaced_custom_object(
                    "kafkahealth.io", "v1alpha1", served, "kafkahealthpolicies", policy
                ),
                timeout=15,
                interval=0.2,
                what="the KafkaHealthPolicy API to accept a create",
            )
            name = policy["metadata"]["name"]
            got = wait_for(
                lambda: (p := custom.get_namespaced_custom_object(
                    "kafkahealth.io", "v1alpha1", served, "kafkahealthpolicies", name
                )).get("status", {}).get("conditions") and p,
                timeout=60,
                what="the handler's status patch",
            )  # fmt: skip
            peering = wait_for(
                lambda: (p := custom.get_namespaced_custom_object(
                    "kopf.dev", "v1", served, "kopfpeerings", "kafka-health"
                )).get("status") and p,
                timeout=30,
                what="Kopf's keep-alive in the KopfPeering",
            )  # fmt: skip
            events = wait_for(
                lambda: [e for e in core.list_namespaced_event(served).items if e.reason == "RbacProbe"],
                timeout=30,
                what="the Event Kopf posts",
            )
    finally:
        kopf.set_default_registry(previous_registry)
        ident.uninstall()
    assert runner.exception is None, runner.output
    assert got["status"]["conditions"][0]["reason"] == "RbacProbe"
    assert "kafka-health-operator-test-0" in peering["status"]
    assert events[0].involved_object.name == name
    forbidden = [line for line in runner.output.splitlines() if "403" in line or "orbidden" in line]
    assert not forbidden, "\n".join(forbidden)
