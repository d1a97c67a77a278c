"""The local control plane is a real Kubernetes API server: server-side apply, CRDs, Kopf, RBAC, tokens."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from kopf.testing import KopfRunner
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed.controlplane import ControlPlane, ControlPlaneError, find_binaries
from tests import parallel

pytestmark = pytest.mark.k8s

GROUP = "k8stest.kafkahealth.io"
PLURAL = "widgets"
APPLY = "application/apply-patch+yaml"

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget", "shortNames": ["wdg"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "color": {"type": "string"},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def apply_widget(
    api: client.ApiClient, ns: str, body: dict[str, Any], manager: str, force: bool = False
) -> Any:
    custom: Any = client.CustomObjectsApi(api)
    return custom.patch_namespaced_custom_object(
        GROUP,
        "v1",
        ns,
        PLURAL,
        body["metadata"]["name"],
        body,
        field_manager=manager,
        force=force,
        _content_type=APPLY,
    )


def read_widget(api: client.ApiClient, ns: str, name: str) -> Any:
    custom: Any = client.CustomObjectsApi(api)
    return custom.get_namespaced_custom_object(GROUP, "v1", ns, PLURAL, name)


@pytest.fixture(scope="module")
def widget_crd(k8s_api: client.ApiClient) -> dict[str, Any]:
    """The test CRD, server-side applied and Established (its API is served)."""
    ext: Any = client.ApiextensionsV1Api(k8s_api)
    name = WIDGET_CRD["metadata"]["name"]
    ext.patch_custom_resource_definition(
        name, WIDGET_CRD, field_manager="kh-tests", force=True, _content_type=APPLY
    )

    def established() -> bool:
        crd = ext.read_custom_resource_definition(name)
        return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])

    wait_for(established, timeout=30, interval=0.2, what=f"CRD {name} Established")
    return ext.read_custom_resource_definition(name).to_dict()


def test_server_side_apply_of_crd_and_custom_resource(
    k8s_api: client.ApiClient, widget_crd: dict[str, Any], k8s_namespace: str
) -> None:
    managers = {m["manager"]: m["operation"] for m in widget_crd["metadata"]["managed_fields"]}
    assert managers.get("kh-tests") == "Apply"

    # The CR endpoint may lag the Established condition by a moment.
    wait_for(
        lambda: apply_widget(k8s_api, k8s_namespace, widget("w1", size=3, color="red"), "team-a"),
        timeout=15,
        interval=0.2,
        what="the Widget API to accept an apply",
    )
    got = read_widget(k8s_api, k8s_namespace, "w1")
    assert got["spec"] == {"size": 3, "color": "red"}
    assert {m["manager"]: m["operation"] for m in got["metadata"]["managedFields"]} == {"team-a": "Apply"}

    # Another manager changing a field team-a owns is a conflict, unless it forces.
    with pytest.raises(ApiException) as conflict:
        apply_widget(k8s_api, k8s_namespace, widget("w1", size=5), "team-b")
    assert conflict.value.status == 409
    apply_widget(k8s_api, k8s_namespace, widget("w1", size=5), "team-b", force=True)
    got = read_widget(k8s_api, k8s_namespace, "w1")
    assert got["spec"] == {"size": 5, "color": "red"}

    # The structural schema is enforced by the server.
    with pytest.raises(ApiException) as invalid:
        apply_widget(k8s_api, k8s_namespace, widget("w2", size=0), "team-a")
    assert invalid.value.status == 422


OPERATOR = """
import kopf

@kopf.on.login()
def login(**kwargs):
    return kopf.login_with_kubeconfig(**kwargs)  # reads KUBECONFIG now, not at import

@kopf.on.startup()
def configure(settings, **_):
    settings.watching.server_timeout = 10
    settings.posting.enabled = False

@kopf.on.create("{group}", "v1", "{plural}")
def created(spec, patch, **_):
    patch.metadata.annotations["k8stest.kafkahealth.io/seen"] = "yes"
    return {{"doubled": spec["size"] * 2}}
"""


def test_kopf_handler_reacts_to_custom_resource(
    k8s_control_plane: ControlPlane,
    k8s_api: client.ApiClient,
    widget_crd: dict[str, Any],
    k8s_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handlers = tmp_path / "widget_operator.py"
    handlers.write_text(textwrap.dedent(OPERATOR.format(group=GROUP, plural=PLURAL)))
    monkeypatch.setenv("KUBECONFIG", str(k8s_control_plane.kubeconfig))
    args = ["run", "--standalone", "--namespace", k8s_namespace, str(handlers)]
    with KopfRunner(args, timeout=60) as runner:
        wait_for(
            lambda: apply_widget(k8s_api, k8s_namespace, widget("w1", size=21), "kh-tests"),
            timeout=15,
            interval=0.2,
            what="the Widget API to accept an apply",
        )
        got = wait_for(
            lambda: (w := read_widget(k8s_api, k8s_namespace, "w1")).get("status", {}).get("created") and w,
            timeout=60,
            what="Kopf's create handler to write status",
        )
    assert runner.exception is None, runner.output
    assert runner.exit_code == 0
    assert got["status"]["created"] == {"doubled": 42}
    assert got["metadata"]["annotations"]["k8stest.kafkahealth.io/seen"] == "yes"
    assert "Handler 'created' succeeded" in runner.output


def _client_with_token(cp: ControlPlane, token: str) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = cp.load().server  # type: ignore[union-attr]
    cfg.ssl_ca_cert = str(cp.pki / "ca.crt")
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(cfg)


def test_rbac_is_enforced_for_a_service_account_token(
    k8s_control_plane: ControlPlane, k8s_api: client.ApiClient, k8s_namespace: str
) -> None:
    core: Any = client.CoreV1Api(k8s_api)
    rbac: Any = client.RbacAuthorizationV1Api(k8s_api)
    ns = k8s_namespace
    core.create_namespaced_service_account(ns, {"metadata": {"name": "reader"}})
    rbac.create_namespaced_role(
        ns,
        {
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        ns,
        {
            "metadata": {"name": "reader-reads-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        },
    )
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "victim"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    )
    token = core.create_namespaced_service_account_token(
        "reader", ns, {"spec": {"audiences": [], "expirationSeconds": 600}}
    ).status.token
    assert token

    with _client_with_token(k8s_control_plane, token) as api:
        as_reader: Any = client.CoreV1Api(api)
        # RBAC bindings are picked up within moments; the token itself is valid at once.
        names = wait_for(
            lambda: [p.metadata.name for p in as_reader.list_namespaced_pod(ns).items],
            timeout=10,
            what="the service account to list pods",
        )
        assert names == ["victim"]
        with pytest.raises(ApiException) as denied:
            as_reader.delete_namespaced_pod("victim", ns)
        assert denied.value.status == 403
        with pytest.raises(ApiException) as other_ns:
            as_reader.list_namespaced_pod("default")
        assert other_ns.value.status == 403
    assert core.read_namespaced_pod("victim", ns).metadata.deletion_timestamp is None

    with _client_with_token(k8s_control_plane, token[:-4] + "AAAA") as api:
        forged: Any = client.CoreV1Api(api)
        with pytest.raises(ApiException) as unauthenticated:
            forged.list_namespaced_pod(ns)
        assert unauthenticated.value.status == 401


def test_control_plane_restarts_warm_with_its_data(tmp_path: Path, k8s_control_plane: ControlPlane) -> None:
    """A second control plane (its own dir): a restart keeps etcd's data, and start is idempotent."""
    cp = ControlPlane(tmp_path, parallel.control_plane_ports())
    try:
        cp.start()
        with cp.api_client() as api:
            core: Any = client.CoreV1Api(api)
            core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}, "data": {"k": "v"}})
        cp.stop()
        assert not cp.running()
        t0 = time.monotonic()
        first = cp.start()
        warm = time.monotonic() - t0
        with cp.api_client() as api:
            core = client.CoreV1Api(api)
            assert core.read_namespaced_config_map("kept", "default").data == {"k": "v"}
        again = cp.start()
        assert (again.etcd_pid, again.apiserver_pid) == (first.etcd_pid, first.apiserver_pid)
        print(f"control plane warm start: {warm:.1f}s")
        assert warm < 30
    finally:
        cp.stop()
    assert not cp.running()
    assert all(row["state"] == "down" for row in cp.status())


def test_missing_binaries_are_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_HEALTH_K8S_BIN", str(tmp_path))
    with pytest.raises(ControlPlaneError, match="lacks etcd, kube-apiserver"):
        find_binaries()
