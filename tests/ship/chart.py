"""The Helm chart as the test suites see it: render it, and pull out the operator's RBAC.

Other suites import this module. The e2e suite runs the operator under exactly the chart's
permissions with `install_operator_identity()`: it applies the chart's ServiceAccount, Roles,
ClusterRoles, bindings and Kopf peering objects to a real API server and returns a kubeconfig
that authenticates as that ServiceAccount (a TokenRequest token), e.g.

    from tests.ship.chart import install_operator_identity
    ident = install_operator_identity(k8s_control_plane, release="e2e", namespace=ns, watch=[ns])
    env = {**os.environ, "KUBECONFIG": str(ident.kubeconfig)}
    # run `kafka-health operator --namespace <ns> --peering kafka-health` with env ...
    ident.uninstall()  # removes the cluster-scoped objects (the namespaced ones go with the namespace)

`operator_rules()` gives the rules as plain data (namespace -> list of PolicyRule dicts, None for
cluster-wide), and `python -m tests.ship.chart rbac [helm --set args]` prints them as JSON.

helm comes from $KAFKA_HEALTH_HELM or hack/helm.sh (built from the Go module proxy and cached on
first use); kubectl from the control plane's binary dir (hack/k8s-binaries.sh), else PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kafka-health-operator"
RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
PEERING_KINDS = ("KopfPeering", "ClusterKopfPeering")

Rule = dict[str, list[str]]


class ChartError(RuntimeError):
    """helm or kubectl failed; the message carries its output."""


_helm_path: str | None = None


def helm_binary() -> str:
    """$KAFKA_HEALTH_HELM, else the pinned helm that hack/helm.sh builds (once) and caches."""
    global _helm_path
    if _helm_path is None:
        explicit = os.environ.get("KAFKA_HEALTH_HELM")
        if explicit:
            _helm_path = explicit
        else:
            proc = subprocess.run(
                ["bash", str(REPO / "hack" / "helm.sh")], stdout=subprocess.PIPE, text=True, check=False
            )
            lines = proc.stdout.strip().splitlines()
            if proc.returncode != 0 or not lines:
                raise ChartError(f"hack/helm.sh failed (exit {proc.returncode}); see its messages above")
            _helm_path = lines[-1]
    return _helm_path


def kubectl_binary(bin_dir: str | Path | None = None) -> str:
    """kubectl from `bin_dir` (the control plane's, same version as the API server), else PATH."""
    if bin_dir is not None and (Path(bin_dir) / "kubectl").is_file():
        return str(Path(bin_dir) / "kubectl")
    found = shutil.which("kubectl")
    if found is None:
        raise ChartError("kubectl not found: run hack/k8s-binaries.sh or put kubectl on PATH")
    return found


def run(cmd: Sequence[str], *, input_text: str | None = None, timeout: float = 300) -> str:
    """Run a command; its stdout, or ChartError with the command and everything it printed."""
    proc = subprocess.run(
        list(cmd), input=input_text, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise ChartError(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return proc.stdout


def helm(*args: str, timeout: float = 300) -> str:
    return run([helm_binary(), *args], timeout=timeout)


def render_text(
    values: dict[str, Any] | None = None,
    *,
    release: str = "khp",
    namespace: str = "kafka-health",
    include_crds: bool = False,
    extra_args: Sequence[str] = (),
) -> str:
    """`helm template` of the chart with `values` (merged over values.yaml), as YAML text."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(values or {}, f)
        values_file = f.name
    try:
        args = ["template", release, str(CHART), "--namespace", namespace, "-f", values_file]
        if include_crds:
            args.append("--include-crds")
        return helm(*args, *extra_args)
    finally:
        os.unlink(values_file)


def render(values: dict[str, Any] | None = None, **kwargs: Any) -> list[dict[str, Any]]:
    """The rendered chart as a list of objects."""
    return [doc for doc in yaml.safe_load_all(render_text(values, **kwargs)) if doc]


def find(objs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = find(objs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
    return found[0]


def chart_values(
    *,
    watch: Sequence[str] = (),
    all_namespaces: bool = False,
    extra_namespaces: Sequence[str] = (),
    peering: bool = True,
    lock_namespace: str = "",
) -> dict[str, Any]:
    """Values selecting a watch mode and the lock namespace (the knobs that change RBAC)."""
    return {
        "watch": {"allNamespaces": all_namespaces, "namespaces": list(watch)},
        "rbac": {"extraNamespaces": list(extra_namespaces)},
        "peering": {"enabled": peering, "name": "kafka-health"},
        "lockNamespace": lock_namespace,
    }


def rules_by_namespace(objs: Iterable[dict[str, Any]]) -> dict[str | None, list[Rule]]:
    """The rules bound to the chart's ServiceAccount: namespace -> rules (None: cluster-wide)."""
    objs = list(objs)
    sa = one(objs, "ServiceAccount")["metadata"]
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}
    out: dict[str | None, list[Rule]] = {}
    for binding in find(objs, "RoleBinding") + find(objs, "ClusterRoleBinding"):
        subjects = binding.get("subjects") or []
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == sa["name"] and s["namespace"] == sa["namespace"]
            for s in subjects
        ):
            continue
        ns = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role_ns = ns if ref["kind"] == "Role" else None
        role = roles[(ref["kind"], role_ns, ref["name"])]
        out.setdefault(ns, []).extend(role.get("rules") or [])
    return out


def operator_rules(
    values: dict[str, Any] | None = None, *, namespace: str = "kafka-health"
) -> dict[str | None, list[Rule]]:
    """The operator's RBAC for these chart values (see chart_values()), as plain data."""
    return rules_by_namespace(render(values, namespace=namespace))


def permissions(rules: Iterable[Rule]) -> set[tuple[str, str, str]]:
    """Flatten rules to (apiGroup, resource, verb) triples."""
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }


# Flags the test harness sets per process (free ports, a temporary history dir).
_PER_PROCESS_FLAGS = ("--metrics-port", "--health-port", "--history-dir")


def operator_args(values: dict[str, Any] | None = None, *, release: str, namespace: str) -> list[str]:
    """The operator container's args as the chart renders them (after the `operator` verb), minus
    the per-process flags: the e2e suite runs the operator with exactly the chart's flags."""
    deployment = one(render(values, release=release, namespace=namespace), "Deployment")
    container = next(
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "operator"
    )
    args = [str(a) for a in container["args"]]
    assert args[0] == "operator", args
    return [a for a in args[1:] if not a.startswith(_PER_PROCESS_FLAGS)]


# --------------------------------------------------------------------------------------------
# On a real API server


def kubectl(
    kubeconfig: Path, *args: str, bin_dir: str | Path | None = None, input_text: str | None = None
) -> str:
    return run([kubectl_binary(bin_dir), f"--kubeconfig={kubeconfig}", *args], input_text=input_text)


def install_crds(kubeconfig: Path, bin_dir: str | Path | None = None) -> None:
    """Server-side apply the chart's crds/ (for real) and wait until every CRD is Established."""
    crds = CHART / "crds"
    kubectl(
        kubeconfig, "apply", "--server-side", "--force-conflicts", "--field-manager=kafka-health-tests",
        "-f", str(crds), bin_dir=bin_dir,
    )  # fmt: skip
    names = [
        doc["metadata"]["name"]
        for path in sorted(crds.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    kubectl(
        kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
        *[f"crd/{n}" for n in names], bin_dir=bin_dir,
    )  # fmt: skip


@dataclass
class OperatorIdentity:
    """The chart's ServiceAccount and RBAC on a real API server, and a kubeconfig acting as it."""

    kubeconfig: Path
    service_account: str
    namespace: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    admin_kubeconfig: Path | None = None
    bin_dir: str | None = None

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"

    def uninstall(self) -> None:
        """Delete the cluster-scoped objects (namespaced ones go with their namespace)."""
        assert self.admin_kubeconfig is not None
        for obj in self.objects:
            if "namespace" not in obj["metadata"]:
                kind = obj["kind"].lower()
                kubectl(
                    self.admin_kubeconfig, "delete", "--ignore-not-found", f"{kind}/{obj['metadata']['name']}",
                    bin_dir=self.bin_dir,
                )  # fmt: skip


def install_operator_identity(
    control_plane: Any,
    *,
    release: str,
    namespace: str,
    watch: Sequence[str] = (),
    all_namespaces: bool = False,
    extra_namespaces: Sequence[str] = (),
    peering: bool = True,
    token_seconds: int = 3600,
    out_dir: Path | None = None,
    lock_namespace: str = "",
) -> OperatorIdentity:
    """Apply the chart's ServiceAccount, RBAC and peering objects (nothing else) for `release` in
    `namespace` to the control plane (`kafka_health.testbed.controlplane.ControlPlane`), and
    return a kubeconfig whose user is that ServiceAccount. The namespaces must exist."""
    state = control_plane.load()
    bin_dir = state.bin_dir if state else None
    admin = Path(control_plane.kubeconfig)
    install_crds(admin, bin_dir)
    values = chart_values(
        watch=watch,
        all_namespaces=all_namespaces,
        extra_namespaces=extra_namespaces,
        peering=peering,
        lock_namespace=lock_namespace,
    )
    objs = [
        o
        for o in render(values, release=release, namespace=namespace)
        if o["kind"] in RBAC_KINDS + PEERING_KINDS
    ]
    text = yaml.safe_dump_all(objs)
    kubectl(
        admin,
        "apply",
        "--server-side",
        "--field-manager=kafka-health-tests",
        "-f",
        "-",
        bin_dir=bin_dir,
        input_text=text,
    )
    sa = one(objs, "ServiceAccount")["metadata"]["name"]
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": token_seconds}}  # fmt: skip
    out = kubectl(
        admin, "create", "--raw",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{sa}/token", "-f", "-",
        bin_dir=bin_dir, input_text=json.dumps(request),
    )  # fmt: skip
    token = json.loads(out)["status"]["token"]
    admin_cfg = yaml.safe_load(admin.read_text())
    cluster = admin_cfg["clusters"][0]["cluster"]
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kh", "cluster": cluster}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "operator", "context": {"cluster": "kh", "user": sa, "namespace": namespace}}],
        "current-context": "operator",
    }
    target = (out_dir or Path(tempfile.mkdtemp(prefix="kh-operator-"))) / f"kubeconfig-{release}"
    target.write_text(yaml.safe_dump(cfg, sort_keys=False))
    target.chmod(0o600)
    ident = OperatorIdentity(target, sa, namespace, objs, admin, bin_dir)
    served = ["--all-namespaces"] if all_namespaces else ["-n", (list(watch) or [namespace])[0]]
    _wait_authorized(ident, served)
    return ident


def _wait_authorized(ident: OperatorIdentity, where: list[str], timeout: float = 15) -> None:
    """RBAC changes reach the authorizer's cache within moments: wait until the SA can act."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            kubectl(
                ident.kubeconfig, "auth", "can-i", "watch", "kafkahealthpolicies.kafkahealth.io", *where,
                bin_dir=ident.bin_dir,
            )  # fmt: skip
            return
        except ChartError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main(argv: Sequence[str]) -> int:
    """`python -m tests.ship.chart rbac [helm template args]`: the operator's rules as JSON."""
    if not argv or argv[0] != "rbac":
        print(__doc__, file=sys.stderr)
        print(
            "usage: python -m tests.ship.chart rbac [--namespace NS] [--set watch.allNamespaces=true ...]",
            file=sys.stderr,
        )
        return 2
    args = list(argv[1:])
    namespace = "kafka-health"
    if "--namespace" in args:
        at = args.index("--namespace")
        namespace = args[at + 1]
        del args[at : at + 2]
    objs = [doc for doc in yaml.safe_load_all(render_text(None, namespace=namespace, extra_args=args)) if doc]
    rules = rules_by_namespace(objs)
    print(json.dumps({ns or "*cluster*": r for ns, r in rules.items()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
