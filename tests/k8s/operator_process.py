"""Run the real operator (`kafka-health operator`) as a subprocess against the test control plane."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from kafka_health._kits.waiting import wait_for
from kafka_health.testbed.controlplane import ControlPlane, find_binaries
from tests import parallel
from tests.ship.chart import OperatorIdentity, chart_values, install_operator_identity, operator_args


class OperatorProcess:
    """One `kafka-health operator` process with its own ports, history dir and log file."""

    def __init__(
        self,
        cp: ControlPlane,
        workdir: Path,
        namespaces: list[str],
        *extra: str,
        kubeconfig: Path | None = None,
    ) -> None:
        self.cp = cp
        self.kubeconfig = kubeconfig or cp.kubeconfig
        self.workdir = workdir
        self.namespaces = namespaces
        self.extra = list(extra)
        self.metrics_port = parallel.service_port()
        self.health_port = parallel.service_port()
        self.log_path = workdir / f"operator-{self.metrics_port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, wait_ready: bool = True, timeout: float = 180.0) -> OperatorProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "kafka_health.cli.main", "operator"]
        for ns in self.namespaces:
            args += ["--namespace", ns]
        args += [
            "--metrics-port", str(self.metrics_port),
            "--health-port", str(self.health_port),
            "--history-dir", str(self.workdir / "history"),
            *self.extra,
        ]  # fmt: skip
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KAFKA_HEALTH_WORK_DIR": str(self.workdir / "work"),
        }
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        if wait_ready:
            wait_for(self.ready, timeout=timeout, interval=1.0, what="the operator's /readyz")
        return self

    def ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"operator exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def cycles(self, namespace: str, name: str) -> float:
        """How many cycles this process ran for one policy (from its own metrics)."""
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith("kafka_health_cycle_duration_seconds_count{") and (
                f'namespace="{namespace}"' in line and f'policy="{name}"' in line
            ):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def chart_operator(
    cp: ControlPlane,
    workdir: Path,
    namespace: str,
    *,
    extra_namespaces: tuple[str, ...] = (),
    lock_namespace: str = "",
    release: str | None = None,
    extra_args: tuple[str, ...] = (),
) -> tuple[OperatorProcess, OperatorIdentity]:
    """The operator as the Helm chart deploys it: the chart's ServiceAccount, Role(s), bindings
    and KopfPeering applied to the API server, the process authenticated as that ServiceAccount
    (a TokenRequest token) and started with the chart's own container args. A verb the operator
    needs and the chart does not grant fails the e2e test that needs it."""
    release = release or f"kho-{namespace}"
    values = chart_values(watch=[namespace], extra_namespaces=extra_namespaces, lock_namespace=lock_namespace)
    workdir.mkdir(parents=True, exist_ok=True)
    ident = install_operator_identity(
        cp,
        release=release,
        namespace=namespace,
        watch=[namespace],
        extra_namespaces=extra_namespaces,
        out_dir=workdir,
        lock_namespace=lock_namespace,
    )
    args = operator_args(values, release=release, namespace=namespace)
    return OperatorProcess(cp, workdir, [], *args, *extra_args, kubeconfig=ident.kubeconfig), ident


def kubectl(
    cp: ControlPlane, *args: str, input: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    # kubectl's own --timeout (a deletion waiting on finalizers) runs out before ours does.
    own = [a.removeprefix("--timeout=") for a in args if a.startswith("--timeout=")]
    out = subprocess.run(
        [str(find_binaries() / "kubectl"), "--kubeconfig", str(cp.kubeconfig), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60 + (int(own[0].removesuffix("s")) if own else 0),
        check=False,
    )
    if check and out.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {out.stderr}")
    return out


def apply(cp: ControlPlane, obj: dict[str, Any], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    return kubectl(
        cp, "apply", "--server-side", "--field-manager=e2e", "-f", "-", input=json.dumps(obj), check=check
    )


def bare_policy(cp: ControlPlane, prefix: str, name: str) -> str:
    """A new namespace `<prefix>-<6 hex>` holding a policy `name` with nothing but a cluster to
    read (no operator watches it: the test writes its status); the namespace."""
    ns = f"{prefix}-{uuid.uuid4().hex[:6]}"
    kubectl(cp, "create", "namespace", ns)
    body = {
        "apiVersion": "kafkahealth.io/v1alpha1",
        "kind": "KafkaHealthPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"cluster": {"bootstrapServers": ["kafka:9092"]}},
    }
    kubectl(cp, "create", "-f", "-", input=json.dumps(body))
    return ns


def get(cp: ControlPlane, kind: str, namespace: str, name: str) -> dict[str, Any]:
    return dict(json.loads(kubectl(cp, "get", kind, "-n", namespace, name, "-o", "json").stdout))


def wait_status(
    cp: ControlPlane, namespace: str, name: str, predicate: Any, *, timeout: float, what: str
) -> dict[str, Any]:
    """Poll the policy until `predicate(status)` holds; return the status."""
    started = time.monotonic()
    last: dict[str, Any] = {}

    def check() -> dict[str, Any] | None:
        last.clear()
        last.update(get(cp, "khp", namespace, name).get("status") or {})
        return dict(last) if predicate(last) else None

    try:
        status: dict[str, Any] = wait_for(check, timeout=timeout, interval=1.0, what=what)
    except TimeoutError as exc:
        raise AssertionError(f"{namespace}/{name}: {exc}; last status: {json.dumps(last)[:3000]}") from None
    status["_waited_s"] = round(time.monotonic() - started, 1)
    return status


def request_finished(results: str, request_id: str) -> Any:
    """A `wait_status` predicate: status.<results> (rollingRestarts, offsetResets) holds
    `request_id` Succeeded or Failed."""
    return lambda s: any(
        r["id"] == request_id and r["state"] in ("Succeeded", "Failed") for r in s.get(results) or []
    )


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == type_), {})


def broker_starts(kafka: Any) -> dict[int, int]:
    """How many times each testbed broker's JVM has started (its log keeps every start)."""
    out = {}
    for b in kafka.require().brokers:
        log = kafka.log_path(b.id)
        out[b.id] = log.read_text(errors="replace").count("Kafka Server started") if log.exists() else 0
    return out
