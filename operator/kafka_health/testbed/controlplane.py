"""A real Kubernetes control plane on 127.0.0.1: etcd + kube-apiserver, as controller-runtime's envtest runs it.

kind needs a Docker engine, which these machines lack, so tests and the demo talk to the real
API server binaries instead (built by `hack/k8s-binaries.sh`). There is no controller-manager,
scheduler or kubelet: namespaces never finish terminating, owner references are not garbage
collected, and pods only exist as objects (the broker pods are kept by `podstandin`).

The API server serves TLS on a free port, enforces RBAC, signs service-account tokens (so the
TokenRequest API works) and knows one static admin token. Everything lives under
`<state dir>/k8s/`; the kubeconfig is `<state dir>/kubeconfig`. The processes run in their own
sessions, so the control plane outlives the command that started it; pids and ports are
recorded in `<state dir>/k8s/controlplane.json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from kafka_health._kits.waiting import WaitTimeout, wait_for
from kafka_health.testbed.node_process import wait_exit

BINARIES = ("etcd", "kube-apiserver")
# etcd's client and peer ports and the API server's, from a testbed's base port (`control_plane_ports`).
CONTROL_PLANE_PORT_OFFSET = 90
SERVICE_CIDR = "10.0.0.0/24"
CONTEXT = "kafka-health-testbed"


class ControlPlaneError(RuntimeError):
    """The control plane could not start or be reached; the message names the log to read."""


@dataclass
class ControlPlaneState:
    bin_dir: str
    etcd_port: int
    etcd_peer_port: int
    api_port: int
    etcd_pid: int | None = None
    apiserver_pid: int | None = None

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"


def repo_root() -> Path | None:
    """The source checkout this package runs from (editable install), found by its hack/ script."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "hack" / "k8s-binaries.sh").is_file():
            return parent
    return None


def find_binaries() -> Path:
    """The directory holding etcd and kube-apiserver: $KAFKA_HEALTH_K8S_BIN, $KUBEBUILDER_ASSETS, else the hack script."""
    for var in ("KAFKA_HEALTH_K8S_BIN", "KUBEBUILDER_ASSETS"):
        value = os.environ.get(var)
        if not value:
            continue
        path = Path(value)
        missing = [b for b in BINARIES if not os.access(path / b, os.X_OK)]
        if not missing:
            return path.resolve()
        if var == "KAFKA_HEALTH_K8S_BIN":
            raise ControlPlaneError(f"KAFKA_HEALTH_K8S_BIN={value} lacks {', '.join(missing)}")
    root = repo_root()
    if root is None:
        raise ControlPlaneError(
            "cannot find etcd and kube-apiserver: set KAFKA_HEALTH_K8S_BIN (or KUBEBUILDER_ASSETS) to a "
            "directory holding them, or run from a source checkout where hack/k8s-binaries.sh builds them"
        )
    # The script's messages (a cold build takes minutes) go to our stderr; its last stdout line is the dir.
    proc = subprocess.run(
        ["bash", str(root / "hack" / "k8s-binaries.sh")], stdout=subprocess.PIPE, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"hack/k8s-binaries.sh failed (exit {proc.returncode}); see its messages above"
        )
    return Path(lines[-1]).resolve()


class ControlPlane:
    """Start, stop and reach the control plane recorded in one state dir."""

    def __init__(self, state_dir: Path, ports: Sequence[int] = ()) -> None:
        """`ports`: etcd's client and peer ports and the API server's, taken when a fresh start
        finds all three free (`control_plane_ports`); else the kernel picks (a restart keeps the
        ports it had)."""
        self.ports = list(ports)
        self.state_dir = state_dir.resolve()
        self.dir = self.state_dir / "k8s"
        self.state_file = self.dir / "controlplane.json"
        self.pki = self.dir / "pki"
        self.kubeconfig = self.state_dir / "kubeconfig"
        self.logs = self.state_dir / "logs"
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    # ---------------------------------------------------------------- state
    def load(self) -> ControlPlaneState | None:
        if not self.state_file.exists():
            return None
        return ControlPlaneState(**json.loads(self.state_file.read_text()))

    def _save(self, state: ControlPlaneState) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2))
        tmp.replace(self.state_file)

    # ---------------------------------------------------------------- lifecycle
    def start(self, *, timeout: float = 90.0) -> ControlPlaneState:
        """Start etcd and kube-apiserver unless both already run; return once the kubeconfig works."""
        state = self.load()
        if (
            state is not None
            and self._alive(state.etcd_pid, "etcd")
            and self._alive(state.apiserver_pid, "kube-apiserver")
        ):
            self._write_kubeconfig(state)
            self.wait_ready(state, timeout=timeout)
            return state
        self.stop()  # one half alive is no use: the other half's ports may have moved
        bin_dir = find_binaries()
        self._ensure_pki()
        self.logs.mkdir(parents=True, exist_ok=True)
        ports = _free_ports(
            3, prefer=[state.etcd_port, state.etcd_peer_port, state.api_port] if state else self.ports
        )
        state = ControlPlaneState(str(bin_dir), *ports)
        self._save(state)
        state.etcd_pid = self._spawn("etcd", self._etcd_command(state))
        self._save(state)
        try:
            self._wait_up(
                state.etcd_pid,
                "etcd",
                lambda: _http_ok(f"http://127.0.0.1:{state.etcd_port}/health"),
                timeout=30,
                what="etcd /health",
            )
            state.apiserver_pid = self._spawn("kube-apiserver", self._apiserver_command(state))
            self._save(state)
            self._write_kubeconfig(state)
            self.wait_ready(state, timeout=timeout)
        except (WaitTimeout, ControlPlaneError) as exc:
            self.stop()
            raise ControlPlaneError(
                f"{exc}; see {self.logs}/etcd.log and {self.logs}/kube-apiserver.log"
            ) from exc
        return state

    def stop(self, *, timeout: float = 30.0) -> None:
        """API server first (it flushes to etcd), then etcd; SIGKILL whatever ignores SIGTERM."""
        state = self.load()
        if state is None:
            return
        for attr, binary in (("apiserver_pid", "kube-apiserver"), ("etcd_pid", "etcd")):
            pid = getattr(state, attr)
            if self._alive(pid, binary):
                assert pid is not None
                _terminate(pid, timeout)
            setattr(state, attr, None)
            self._save(state)

    def running(self) -> bool:
        state = self.load()
        return (
            state is not None
            and self._alive(state.etcd_pid, "etcd")
            and self._alive(state.apiserver_pid, "kube-apiserver")
        )

    def status(self) -> list[dict[str, object]]:
        """One row per process: name, pid, up/down, endpoint, and whether it answers its health check."""
        state = self.load()
        if state is None:
            return []
        etcd_up = self._alive(state.etcd_pid, "etcd")
        api_up = self._alive(state.apiserver_pid, "kube-apiserver")
        return [
            {
                "name": "etcd",
                "pid": state.etcd_pid if etcd_up else None,
                "state": "up" if etcd_up else "down",
                "endpoint": f"http://127.0.0.1:{state.etcd_port}",
                "healthy": etcd_up and _http_ok(f"http://127.0.0.1:{state.etcd_port}/health"),
            },
            {
                "name": "kube-apiserver",
                "pid": state.apiserver_pid if api_up else None,
                "state": "up" if api_up else "down",
                "endpoint": state.server,
                "healthy": api_up and self._readyz(state),
            },
        ]

    def wait_ready(self, state: ControlPlaneState, *, timeout: float) -> None:
        """/readyz answers ok, and the kubeconfig we wrote really lists namespaces (RBAC bootstrapped)."""
        self._wait_up(
            state.apiserver_pid,
            "kube-apiserver",
            lambda: self._readyz(state),
            timeout=timeout,
            what="kube-apiserver /readyz",
        )
        wait_for(
            self._kubeconfig_works, timeout=timeout, interval=0.2, what="the kubeconfig to list namespaces"
        )

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` for the admin user (never touches the global default config)."""
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=cfg)
        return client.ApiClient(cfg)

    # ---------------------------------------------------------------- processes
    def _spawn(self, name: str, cmd: list[str]) -> int:
        with open(self.logs / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self._procs[proc.pid] = proc  # for the exit code, should it die during start-up
        return proc.pid

    def _etcd_command(self, s: ControlPlaneState) -> list[str]:
        client_url, peer_url = f"http://127.0.0.1:{s.etcd_port}", f"http://127.0.0.1:{s.etcd_peer_port}"
        return [
            f"{s.bin_dir}/etcd",
            "--name=kh",
            f"--data-dir={self.dir / 'etcd-data'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=kh={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # a throwaway test store: durability buys nothing, fsync costs seconds
            "--log-level=warn",
        ]

    def _apiserver_command(self, s: ControlPlaneState) -> list[str]:
        p = self.pki
        return [
            f"{s.bin_dir}/kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{s.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={s.api_port}",
            f"--tls-cert-file={p / 'server.crt'}",
            f"--tls-private-key-file={p / 'server.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            f"--token-auth-file={p / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer=https://127.0.0.1:{s.api_port}",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--endpoint-reconciler-type=none",
            # No controller-manager mints default ServiceAccounts, so the admission plugin would reject pods.
            "--disable-admission-plugins=ServiceAccount",
            f"--cert-dir={self.dir / 'apiserver-certs'}",
        ]

    def _alive(self, pid: int | None, binary: str) -> bool:
        """The pid runs and is our `binary` (its command line names our state dir); pids get reused."""
        cmdline = process_cmdline(pid)
        if not cmdline:
            return False
        argv0 = cmdline.split(b"\0", 1)[0].decode(errors="replace")
        return Path(argv0).name == binary and str(self.dir).encode() in cmdline

    def _wait_up(
        self, pid: int | None, binary: str, check: Callable[[], bool], *, timeout: float, what: str
    ) -> None:
        """Poll `check`, but fail at once when the process died rather than at the deadline."""
        deadline = time.monotonic() + timeout
        while not check():
            if not self._alive(pid, binary):
                proc = self._procs.get(pid) if pid else None
                code = proc.poll() if proc else None
                raise ControlPlaneError(f"{binary} (pid {pid}) exited during start-up with code {code}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.2)

    # ---------------------------------------------------------------- credentials
    def _ensure_pki(self) -> None:
        """A CA, a serving cert for 127.0.0.1, service-account keys and an admin token, made once per state dir."""
        if (self.pki / "tokens.csv").exists():
            return
        if shutil.which("openssl") is None:
            raise ControlPlaneError(
                "openssl is not on PATH; it makes the control plane's keys (apt-get install openssl)"
            )
        tmp = self.dir / "pki.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        sans = "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default," + (
            "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
        )
        (tmp / "server.ext").write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
        steps = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "3650", "-subj", "/CN=kafka-health-testbed-ca"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=kube-apiserver"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.crt", "-days", "3650", "-extfile", "server.ext"],
            ["genrsa", "-out", "sa.key", "2048"],
            ["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"],
        ]  # fmt: skip
        for args in steps:
            proc = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise ControlPlaneError(f"openssl {args[0]} failed: {proc.stderr.strip()}")
        token = secrets.token_hex(32)
        (tmp / "tokens.csv").write_text(f"{token},admin,admin,system:masters\n")
        (tmp / "admin.token").write_text(token)
        for f in tmp.iterdir():
            f.chmod(0o600)
        shutil.rmtree(self.pki, ignore_errors=True)
        tmp.rename(self.pki)

    def admin_token(self) -> str:
        return (self.pki / "admin.token").read_text().strip()

    def _write_kubeconfig(self, state: ControlPlaneState) -> None:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": CONTEXT,
                    "cluster": {"server": state.server, "certificate-authority": str(self.pki / "ca.crt")},
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.admin_token()}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": "admin"}}],
            "current-context": CONTEXT,
        }
        tmp = self.kubeconfig.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(cfg, sort_keys=False))
        tmp.chmod(0o600)  # it holds the admin token
        tmp.replace(self.kubeconfig)

    # ---------------------------------------------------------------- probes
    def _readyz(self, state: ControlPlaneState) -> bool:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        url, auth = f"{state.server}/readyz", {"Authorization": f"Bearer {self.admin_token()}"}
        req = urllib.request.Request(url, headers=auth)  # noqa: S310 (https to ourselves)
        try:
            with urllib.request.urlopen(req, timeout=2, context=ctx) as resp:  # noqa: S310 (https to ourselves)
                return bool(resp.status == 200 and resp.read().strip() == b"ok")
        except (OSError, urllib.error.URLError):
            return False

    def _kubeconfig_works(self) -> bool:
        from kubernetes import client

        with self.api_client() as api:
            items = client.CoreV1Api(api).list_namespace(_request_timeout=5).items
        return any(ns.metadata is not None and ns.metadata.name == "default" for ns in items)


def process_cmdline(pid: int | None) -> bytes | None:
    """The command line of a live (not zombie) process, None when it is gone.

    /proc/<pid>/cmdline reads empty for a moment while a freshly exec'd Go runtime maps its
    memory, so an empty read is retried rather than taken as "not our process".
    """
    if pid is None:
        return None
    for _ in range(20):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.split(") ", 1)[1].startswith("Z"):
                return None
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        if cmdline:
            return cmdline
        time.sleep(0.05)
    return None


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 (http to our own etcd)
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def control_plane_ports(base_port: int) -> list[int]:
    """The control plane's ports beside a testbed whose client ports start at `base_port`:
    `base_port` + 90..92, between the brokers' client ports and their controller ports (+100).
    Below the kernel's ephemeral range with the brokers: a kernel-picked port there can be
    reached by a client still retrying a server that stopped on it, after another process took it."""
    return [base_port + CONTROL_PLANE_PORT_OFFSET + i for i in range(3)]


def _free_ports(n: int, prefer: list[int]) -> list[int]:
    """Ports nobody listens on: the preferred ones when still free (a restart keeps its kubeconfig), else fresh."""
    if len(prefer) == n and all(bindable(p) for p in prefer):
        return prefer
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def bindable(port: int) -> bool:
    """Nobody listens on 127.0.0.1:`port` now: a bind succeeds the way servers bind
    (`SO_REUSEADDR`, so connections of a server stopped a moment ago, in TIME_WAIT, do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _terminate(pid: int, timeout: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not wait_exit(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_exit(pid, 10)
