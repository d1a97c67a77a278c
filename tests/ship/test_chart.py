"""The Helm chart without a server: lint, render, RBAC exactly as the contract, schema, copies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ship import chart
from tests.ship.chart import CHART, REPO, find, one, permissions, render

# The operator's Kubernetes API use (issue 7 contract), per namespace it serves.
SERVED_NAMESPACE = {
    ("kafkahealth.io", "kafkahealthpolicies"): {"get", "list", "watch", "patch"},
    ("kafkahealth.io", "kafkahealthpolicies/status"): {"get", "patch", "update"},
    ("", "events"): {"create", "patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("apps", "statefulsets"): {"get", "list"},
    ("", "configmaps"): {"get", "list", "create", "update", "patch", "delete"},
    ("", "secrets"): {"get"},
}
# kopf.dev/v1 is what the chart installs; zalando.org/v1 is Kopf's legacy group, which Kopf also
# serves when a cluster has its CRDs (from an older Kopf-based operator).
PEERING_NAMESPACED = {
    ("kopf.dev", "kopfpeerings"): {"get", "list", "watch", "patch"},
    ("zalando.org", "kopfpeerings"): {"get", "list", "watch", "patch"},
}
PEERING_CLUSTER = {
    ("kopf.dev", "clusterkopfpeerings"): {"get", "list", "watch", "patch"},
    ("zalando.org", "clusterkopfpeerings"): {"get", "list", "watch", "patch"},
}
DISCOVERY = {("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"}}
NAMESPACES = {("", "namespaces"): {"list", "watch"}}
LOCK_ARGS = ["--lock-namespace=kafka-health", "--lock-ttl=30"]
LOCK = {("coordination.k8s.io", "leases"): {"get", "create", "update"}}
"""The per-Kafka-cluster action lock, in the lock namespace (default: the release namespace)."""
BROKERS_ONLY = {
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("apps", "statefulsets"): {"get", "list"},
}


def as_table(rules: list[dict[str, list[str]]]) -> dict[tuple[str, str], set[str]]:
    table: dict[tuple[str, str], set[str]] = {}
    for group, resource, verb in permissions(rules):
        table.setdefault((group, resource), set()).add(verb)
    return table


def deployment(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return one(objs, "Deployment")


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    containers = deployment(objs)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["operator"]
    return containers[0]


# --------------------------------------------------------------------------------------------
# lint


@pytest.mark.parametrize(
    "values",
    [
        {},
        {
            "watch": {"allNamespaces": True},
            "serviceMonitor": {"enabled": True},
            "grafanaDashboard": {"enabled": True},
        },
        {
            "watch": {"namespaces": ["kafka", "payments"]},
            "rbac": {"extraNamespaces": ["kafka-brokers"]},
            "replicaCount": 2,
            "podDisruptionBudget": {"enabled": True},
            "history": {"persistence": {"enabled": True, "accessModes": ["ReadWriteMany"]}},
        },
        {"peering": {"enabled": False, "name": "kafka-health"}},
    ],
    ids=["defaults", "all-namespaces", "namespaces-ha", "standalone"],
)
def test_helm_lint_strict(helm_bin: str, tmp_path: Path, values: dict[str, Any]) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    out = chart.helm("lint", "--strict", str(CHART), "-f", str(values_file))
    assert "0 chart(s) failed" in out, out


# --------------------------------------------------------------------------------------------
# the Deployment


def test_default_render_has_the_expected_objects(helm_bin: str) -> None:
    objs = render()
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == sorted(
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Role",  # the cluster action lock's Leases
            "RoleBinding",
            "Service",
            "Deployment",
            "KopfPeering",
        ]
    )
    for obj in objs:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "kafka-health-operator"
        assert labels["app.kubernetes.io/instance"] == "khp"
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "kafka-health", obj["kind"]


def test_deployment_security_context_is_restrictive(helm_bin: str) -> None:
    objs = render()
    pod = deployment(objs)["spec"]["template"]["spec"]
    psc = pod["securityContext"]
    assert psc["runAsNonRoot"] is True
    assert psc["runAsUser"] == 10001
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    csc = container(objs)["securityContext"]
    assert csc["runAsNonRoot"] is True
    assert csc["runAsUser"] == 10001
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["privileged"] is False
    assert csc["capabilities"] == {"drop": ["ALL"]}
    assert csc["seccompProfile"] == {"type": "RuntimeDefault"}
    # Only this pod mounts the token, not every pod using the ServiceAccount.
    assert pod["automountServiceAccountToken"] is True
    assert one(objs, "ServiceAccount")["automountServiceAccountToken"] is False


def test_deployment_writable_paths_are_volumes(helm_bin: str) -> None:
    objs = render()
    pod = deployment(objs)["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["name"] for m in container(objs)["volumeMounts"]}
    assert mounts == {"/tmp": "tmp", "/var/lib/kafka-health/history": "history"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes["tmp"]
    assert "emptyDir" in volumes["history"]
    env = {e["name"]: e for e in container(objs)["env"]}
    assert env["KAFKA_HEALTH_HISTORY_DIR"]["value"] == "/var/lib/kafka-health/history"
    assert env["POD_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"


def test_history_persistence_creates_a_claim(helm_bin: str) -> None:
    objs = render({"history": {"persistence": {"enabled": True, "size": "20Gi", "storageClassName": "fast"}}})
    pvc = one(objs, "PersistentVolumeClaim")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert pvc["spec"]["storageClassName"] == "fast"
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    volumes = {v["name"]: v for v in deployment(objs)["spec"]["template"]["spec"]["volumes"]}
    assert volumes["history"]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]

    objs = render({"history": {"persistence": {"enabled": True, "existingClaim": "mine"}}})
    assert not find(objs, "PersistentVolumeClaim")
    volumes = {v["name"]: v for v in deployment(objs)["spec"]["template"]["spec"]["volumes"]}
    assert volumes["history"]["persistentVolumeClaim"]["claimName"] == "mine"


def test_probes_and_ports(helm_bin: str) -> None:
    c = container(render())
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-health"}
    assert c["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http-health"}
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"http-metrics": 8080, "http-health": 8081}
    assert c["resources"]["requests"]["memory"]
    assert c["resources"]["limits"]["memory"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, ["operator", "--namespace=kafka-health", "--metrics-port=8080", "--health-port=8081",
              "--history-dir=/var/lib/kafka-health/history", "--peering=kafka-health", *LOCK_ARGS, "--log-format=json"]),
        ({"watch": {"namespaces": ["a", "b"]}, "ports": {"metrics": 9090, "health": 9091}},
         ["operator", "--namespace=a", "--namespace=b", "--metrics-port=9090", "--health-port=9091",
          "--history-dir=/var/lib/kafka-health/history", "--peering=kafka-health", *LOCK_ARGS, "--log-format=json"]),
        ({"watch": {"allNamespaces": True}, "peering": {"enabled": False, "name": "kafka-health"},
          "logFormat": "text", "verbose": True,
          "spark": {"remote": "sc://spark-connect:15002", "driverMemory": "6g"}},
         ["operator", "--all-namespaces", "--metrics-port=8080", "--health-port=8081",
          "--history-dir=/var/lib/kafka-health/history", "--standalone", *LOCK_ARGS, "--log-format=text", "--verbose",
          "--spark-remote=sc://spark-connect:15002", "--spark-driver-memory=6g"]),
    ],
    ids=["release-namespace", "two-namespaces", "all-namespaces-standalone"],
)  # fmt: skip
def test_operator_arguments(helm_bin: str, values: dict[str, Any], expected: list[str]) -> None:
    assert container(render(values))["args"] == expected


def test_metrics_service_and_service_monitor(helm_bin: str) -> None:
    objs = render({"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}})
    svc = one(objs, "Service")
    assert svc["spec"]["ports"] == [
        {"name": "http-metrics", "port": 8080, "targetPort": "http-metrics", "protocol": "TCP"}
    ]
    selector = svc["spec"]["selector"]
    pod_labels = deployment(objs)["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    sm = one(objs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["endpoints"][0]["port"] == "http-metrics"
    # The series' `namespace` is the policy's: Prometheus must not rename it exported_namespace.
    assert sm["spec"]["endpoints"][0]["honorLabels"] is True
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert not find(render(), "ServiceMonitor")


def test_grafana_dashboard_configmap_carries_the_dashboard(helm_bin: str) -> None:
    objs = render({"grafanaDashboard": {"enabled": True}})
    cm = one(objs, "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads((REPO / "dashboards" / "kafka-health-operator.json").read_text())
    assert json.loads(cm["data"]["kafka-health-operator.json"]) == shipped


def test_peering_objects_per_mode(helm_bin: str) -> None:
    objs = render({"watch": {"namespaces": ["a", "b"]}})
    peerings = find(objs, "KopfPeering")
    assert sorted(p["metadata"]["namespace"] for p in peerings) == ["a", "b"]
    assert {p["metadata"]["name"] for p in peerings} == {"kafka-health"}
    assert {p["apiVersion"] for p in peerings} == {"kopf.dev/v1"}

    objs = render({"watch": {"allNamespaces": True}})
    assert not find(objs, "KopfPeering")
    assert one(objs, "ClusterKopfPeering")["metadata"]["name"] == "kafka-health"

    objs = render({"peering": {"enabled": False, "name": "kafka-health"}})
    assert not find(objs, "KopfPeering") and not find(objs, "ClusterKopfPeering")


# --------------------------------------------------------------------------------------------
# RBAC: exactly the contract's verbs


def test_rbac_release_namespace_only(helm_bin: str) -> None:
    rules = chart.operator_rules()
    assert set(rules) == {"kafka-health", None}
    assert as_table(rules["kafka-health"]) == SERVED_NAMESPACE | PEERING_NAMESPACED | LOCK
    assert as_table(rules[None]) == DISCOVERY


def test_rbac_lock_namespace_is_shared_by_installs(helm_bin: str) -> None:
    """lockNamespace: the Leases' Role goes there (and only there), the flag names it."""
    values = {**chart.chart_values(watch=["payments"]), "lockNamespace": "kafka-locks"}
    rules = chart.operator_rules(values)
    assert set(rules) == {"payments", "kafka-locks", None}
    assert as_table(rules["kafka-locks"]) == LOCK
    assert "--lock-namespace=kafka-locks" in chart.operator_args(
        values, release="r", namespace="kafka-health"
    )
    assert "--lock-namespace=kafka-health" in chart.operator_args(None, release="r", namespace="kafka-health")


def test_rbac_listed_namespaces_and_broker_namespaces(helm_bin: str) -> None:
    values = chart.chart_values(watch=["kafka", "payments"], extra_namespaces=["kafka-brokers", "kafka"])
    rules = chart.operator_rules(values)
    assert set(rules) == {"kafka", "payments", "kafka-brokers", "kafka-health", None}
    assert as_table(rules["kafka-health"]) == LOCK
    for ns in ("kafka", "payments"):
        assert as_table(rules[ns]) == SERVED_NAMESPACE | PEERING_NAMESPACED
    # A namespace both served and listed as a broker namespace gets no second Role.
    assert as_table(rules["kafka-brokers"]) == BROKERS_ONLY
    assert as_table(rules[None]) == DISCOVERY


def test_rbac_all_namespaces(helm_bin: str) -> None:
    rules = chart.operator_rules(chart.chart_values(all_namespaces=True, extra_namespaces=["ignored"]))
    assert set(rules) == {None, "kafka-health"}
    assert as_table(rules[None]) == SERVED_NAMESPACE | DISCOVERY | NAMESPACES | PEERING_CLUSTER
    assert as_table(rules["kafka-health"]) == LOCK  # the Leases: a Role in the lock namespace only
    objs = render(chart.chart_values(all_namespaces=True))
    assert [r["metadata"]["name"] for r in find(objs, "Role")] == ["khp-kafka-health-operator-lock"]


def test_rbac_standalone_has_no_peering_rules(helm_bin: str) -> None:
    rules = chart.operator_rules(chart.chart_values(peering=False))
    assert as_table(rules["kafka-health"]) == SERVED_NAMESPACE | LOCK
    rules = chart.operator_rules(chart.chart_values(all_namespaces=True, peering=False))
    assert as_table(rules[None]) == SERVED_NAMESPACE | DISCOVERY | NAMESPACES


def test_rbac_never_grants_wildcards_or_escalation(helm_bin: str) -> None:
    for values in (None, chart.chart_values(all_namespaces=True)):
        for role in find(render(values), "Role") + find(render(values), "ClusterRole"):
            for rule in role["rules"]:
                for key in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule[key], rule
                assert not {"escalate", "bind", "impersonate", "create"} & set(rule["verbs"]) or rule[
                    "resources"
                ] in (["events"], ["configmaps"], ["leases"]), rule
                assert "resourceNames" not in rule or rule["resourceNames"]


# --------------------------------------------------------------------------------------------
# Values that must be refused


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"replicaCount": 2, "peering": {"enabled": False, "name": "kafka-health"}},
            "needs peering.enabled=true",
        ),
        ({"watch": {"allNamespaces": True, "namespaces": ["a"]}}, "not both"),
        ({"watch": {"namespaces": ["Bad_Name"]}}, "/watch/namespaces/0"),
        ({"replicas": 2}, "replicas"),
        ({"image": {"digest": "latest"}}, "/image/digest"),
        ({"replicaCount": 2, "history": {"persistence": {"enabled": True}}}, "ReadWriteOnce"),
        ({"ports": {"metrics": 0, "health": 8081}}, "/ports/metrics"),
        ({"spark": {"master": "spark://m:7077", "remote": "sc://c:15002"}}, "not both"),
        ({"spark": {"remote": "http://c:15002"}}, "/spark/remote"),
        ({"logFormat": "yaml"}, "/logFormat"),
        ({"spark": {"driverMemory": "6 GB"}}, "/spark/driverMemory"),
    ],
    ids=[
        "ha-without-peering",
        "all-and-list",
        "bad-namespace",
        "unknown-key",
        "bad-digest",
        "rwo-ha",
        "bad-port",
        "spark-both",
        "spark-remote-url",
        "log-format",
        "spark-driver-memory",
    ],
)
def test_bad_values_are_refused(helm_bin: str, values: dict[str, Any], message: str) -> None:
    with pytest.raises(chart.ChartError) as err:
        render(values)
    assert message in str(err.value)


def test_values_schema_is_self_contained_and_covers_values_yaml() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert all(ref.startswith("#") for ref in refs), refs
    assert "$id" not in schema
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert schema["additionalProperties"] is False
    assert set(values) <= set(schema["properties"]), set(values) - set(schema["properties"])


# --------------------------------------------------------------------------------------------
# Copies that must not drift


def test_chart_crds_are_the_repository_crds() -> None:
    """charts/.../crds/ is a byte-identical copy of crds/ (KafkaHealthPolicy, Kopf's peerings).
    Fix a failure with: cp crds/*.yaml charts/kafka-health-operator/crds/"""
    repo = {p.name: p.read_bytes() for p in sorted((REPO / "crds").glob("*.yaml"))}
    shipped = {p.name: p.read_bytes() for p in sorted((CHART / "crds").glob("*.yaml"))}
    assert "kafkahealthpolicies.kafkahealth.io.yaml" in repo
    stale = sorted(name for name in repo if shipped.get(name) != repo[name])
    extra = sorted(set(shipped) - set(repo))
    assert not stale and not extra, (
        f"chart CRDs differ from crds/ (stale: {stale}, not in crds/: {extra}); "
        "run: rm charts/kafka-health-operator/crds/*.yaml && cp crds/*.yaml charts/kafka-health-operator/crds/"
    )


def test_chart_has_kopf_peering_crds_matching_its_peering_objects(helm_bin: str) -> None:
    crds = [
        d for p in sorted((CHART / "crds").glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d
    ]
    by_kind = {d["spec"]["names"]["kind"]: d for d in crds}
    assert by_kind["KopfPeering"]["spec"]["scope"] == "Namespaced"
    assert by_kind["ClusterKopfPeering"]["spec"]["scope"] == "Cluster"
    served = {
        f"{d['spec']['group']}/{v['name']}" for d in crds if "KopfPeering" in d["spec"]["names"]["kind"]
        for v in d["spec"]["versions"] if v["served"]
    }  # fmt: skip
    objs = render({"watch": {"namespaces": ["a"]}}) + render({"watch": {"allNamespaces": True}})
    peerings = find(objs, "KopfPeering") + find(objs, "ClusterKopfPeering")
    assert peerings and {p["apiVersion"] for p in peerings} <= served


def test_chart_dashboard_is_the_repository_dashboard() -> None:
    """Fix a failure with: cp dashboards/kafka-health-operator.json charts/kafka-health-operator/files/"""
    repo = (REPO / "dashboards" / "kafka-health-operator.json").read_bytes()
    assert (CHART / "files" / "kafka-health-operator.json").read_bytes() == repo


def test_chart_app_version_matches_the_package() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{meta["appVersion"]}"' in pyproject
