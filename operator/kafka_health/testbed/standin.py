"""The handle of the detached broker-pod stand-in (`podstandin`): start it, wait for its pods,
stop it; its pid and settings are recorded in `<state dir>/k8s/standin.json`."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kubernetes import client, config

from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import ControlPlane, _terminate, process_cmdline
from kafka_health.testbed.pod_layout import DEFAULT_LAYOUT, NAMESPACE, PodLayout, is_ready

log = logging.getLogger("kafka_health.testbed.standin")


class StandInError(RuntimeError):
    """The stand-in did not start or its pods did not become Ready; the message names the log."""


# ==================================================================== the handle
class StandIn:
    """Launch, stop and inspect the detached stand-in process of one testbed state dir."""

    def __init__(
        self, state_dir: Path, kubeconfig: Path | None = None, layout: PodLayout | None = None
    ) -> None:
        self.state_dir = state_dir.resolve()
        self.record = self.state_dir / "k8s" / "standin.json"
        self.log_path = self.state_dir / "logs" / "standin.log"
        self._kubeconfig = kubeconfig.resolve() if kubeconfig else None
        self._layout = layout

    @property
    def layout(self) -> PodLayout:
        """The layout given, else the running stand-in's (recorded), else the default."""
        if self._layout is not None:
            return self._layout
        rec = self._load()
        if rec and "layout" in rec:
            return PodLayout(rec["layout"], rec["namespace"])
        return DEFAULT_LAYOUT

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig given, else the recorded one, else the control plane's in the same state dir."""
        if self._kubeconfig is not None:
            return self._kubeconfig
        rec = self._load()
        return Path(rec["kubeconfig"]) if rec else ControlPlane(self.state_dir).kubeconfig

    def _load(self) -> dict[str, Any] | None:
        return json.loads(self.record.read_text()) if self.record.exists() else None

    @property
    def pid(self) -> int | None:
        rec = self._load()
        pid = rec["pid"] if rec else None
        return pid if self._alive(pid) else None

    def running(self) -> bool:
        return self.pid is not None

    def _alive(self, pid: int | None) -> bool:
        cmdline = process_cmdline(pid) or b""
        return b"\0standin\0" in cmdline and str(self.state_dir).encode() in cmdline

    def start(self, *, timeout: float = 120.0) -> int:
        """Start the stand-in unless it runs; return its pid once every broker pod exists and is Ready."""
        pid = self.pid
        rec = self._load()
        layout = self.layout
        if (
            pid is not None
            and rec is not None
            and (
                Path(rec["kubeconfig"]) != self.kubeconfig
                or (rec.get("layout", "statefulset"), rec.get("namespace", NAMESPACE))
                != (layout.kind, layout.namespace)
            )
        ):
            self.stop()  # it serves another control plane (a kept test session, say) or layout
            pid = None
        if pid is None:
            if not self.kubeconfig.exists():
                raise StandInError(f"no kubeconfig at {self.kubeconfig}; start the control plane first")
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.record.parent.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "kafka_health.cli.main", "testbed", "standin"]
            cmd += ["--state-dir", str(self.state_dir), "--kubeconfig", str(self.kubeconfig)]
            cmd += ["--pod-layout", layout.kind, "--pod-namespace", layout.namespace]
            with open(self.log_path.with_suffix(".out"), "ab") as out:
                proc = subprocess.Popen(
                    cmd,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            pid = proc.pid
            self.record.write_text(
                json.dumps(
                    {
                        "pid": pid,
                        "kubeconfig": str(self.kubeconfig),
                        "layout": layout.kind,
                        "namespace": layout.namespace,
                    }
                )
            )
        self.wait_pods_ready(timeout=timeout)
        return pid

    def wait_pods_ready(self, *, timeout: float) -> None:
        state = Testbed(self.state_dir).require()
        layout = self.layout
        sets = layout.sets(bool(state.controllers))
        wanted = {layout.set_of(b, bool(state.controllers)).pod(b.id) for b in state.nodes}
        deadline = time.monotonic() + timeout
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=cfg)
        with client.ApiClient(cfg) as api:
            core: Any = client.CoreV1Api(api)
            while True:
                if not self.running():
                    raise StandInError(
                        f"the pod stand-in exited; see {self.log_path} and {self.log_path.with_suffix('.out')}"
                    )
                with contextlib.suppress(Exception):  # the API server may still be settling
                    items = [
                        p
                        for selector in (sets[0].selector, sets[1].selector)
                        for p in core.list_namespaced_pod(
                            layout.namespace, label_selector=selector, _request_timeout=5
                        ).items
                    ]
                    ready = {
                        p.metadata.name for p in items if is_ready(p) and not p.metadata.deletion_timestamp
                    }
                    if ready >= wanted:
                        return
                if time.monotonic() > deadline:
                    raise StandInError(f"broker pods not Ready within {timeout:.0f}s; see {self.log_path}")
                time.sleep(0.3)

    def stop(self, *, timeout: float = 30.0) -> None:
        """SIGTERM (it finishes the step in hand), SIGKILL after `timeout`."""
        pid = self.pid
        if pid is not None:
            _terminate(pid, timeout)
        self.record.unlink(missing_ok=True)


# ==================================================================== the process
