"""The broker-pod stand-in: plays the StatefulSet controller and the kubelet for the testbed's brokers.

The local control plane has no controller-manager and no kubelet, and the brokers are plain JVMs
on 127.0.0.1, not containers. So that the operator finds and restarts brokers exactly as it will
in production (delete pod `kafka-N`, wait for the new pod to be Ready), this process keeps, in
namespace `kafka`:

- a StatefulSet object `kafka` (its status counts ready pods), and
- one Pod per broker, `kafka-0` … `kafka-<N-1>`, labelled `app.kubernetes.io/name=kafka` and
  `kafkahealth.io/broker-id=<N>`, owned by that StatefulSet, bound to a pretend node;
- with dedicated controllers (`testbed up --controllers C`), a second StatefulSet
  `kafka-controller` and its Pods `kafka-controller-0` … `kafka-controller-<C-1>` (node ids
  100 …), labelled `app.kubernetes.io/name=kafka-controller` and `kafkahealth.io/node-id=<id>`:
  the same kubelet and StatefulSet-controller parts, so a roll can restart controllers too
  (Ready: the controller's quorum port accepts connections).

As the **kubelet** it reports each pod's status from the broker process (Ready only while the
broker serves; containerID `testbed://<pid>`), and when a pod is deleted it stops that broker
with SIGTERM (a controlled shutdown) and then finishes the deletion. As the **StatefulSet
controller** it then recreates the pod (not Ready), starts the broker again and marks the pod
Ready once the broker is registered in the cluster's metadata (pods deleted together restart
together: `podManagementPolicy: Parallel`, what a batched roll needs). A broker that cannot start
leaves its pod not Ready. Unlike a kubelet it never restarts a broker that stops on its own:
fault injection (`kafka-health testbed broker stop 1`) owns that, and the pod just reports it --
except after `testbed broker oom-kill N`, which it restarts in the same pod as a kubelet does
after an OOM kill (restartCount + 1, lastState OOMKilled exit 137: `pod_status`).

`kafka-health testbed up --k8s` starts it detached (`testbed standin`, a hidden subcommand);
its pid is in `<state dir>/k8s/standin.json`, its log in `<state dir>/logs/standin.log`.

Names, labels and layouts: `pod_layout`; the handle that starts and stops it: `standin.StandIn`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from kafka_health.testbed.cluster import BrokerState, Testbed, TestbedError, _port_open
from kafka_health.testbed.node_process import reap_children
from kafka_health.testbed.pod_layout import (
    CONTAINER,
    DEFAULT_LAYOUT,
    NODE_NAME,
    TERMINATION_GRACE_SECONDS,
    PodLayout,
    PodSet,
    is_ready,
)
from kafka_health.testbed.pod_status import (
    container_status,
    oom_killed_state,
    restart_count,
    running_since,
    status_body,
    take_oom_killed,
)

log = logging.getLogger("kafka_health.testbed.standin")


class PodStandIn:
    """The reconcile loop: keep one Ready pod per serving broker; a deleted pod restarts its broker."""

    def __init__(
        self,
        testbed: Testbed,
        api_client: client.ApiClient,
        *,
        watch_client: client.ApiClient | None = None,
        probe_period: float = 2.0,
        start_timeout: float = 120.0,
        layout: PodLayout = DEFAULT_LAYOUT,
    ) -> None:
        self.testbed = testbed
        self.layout = layout
        self.namespace = layout.namespace
        # Any: the client's models type every field Optional; the API server guarantees what we read.
        self.core: Any = client.CoreV1Api(api_client)
        self.apps: Any = client.AppsV1Api(api_client)
        self._watch_core: Any = client.CoreV1Api(watch_client or api_client)
        self.probe_period = probe_period
        self.start_timeout = start_timeout
        self.stopping = threading.Event()
        self._wake: queue.Queue[str] = queue.Queue()
        self._known: dict[str, str] = {}  # pod name -> uid of the incarnation we keep
        self._sts_uid: dict[str, str] = {}  # StatefulSet name -> uid
        self._sts_status: dict[str, dict[str, int]] = {}
        self._restarting: dict[int, threading.Thread] = {}  # broker id -> its pod's restart in progress

    # ---------------------------------------------------------------- loop
    def run(self) -> None:
        threading.Thread(target=self._watch, name="pod-watch", daemon=True).start()
        failures = 0
        while not self.stopping.is_set():
            try:
                self.reconcile()
                failures = 0
            except Exception as exc:  # API server away, broker state unreadable: keep going, say so
                failures += 1
                if failures == 1 or failures % 30 == 0:
                    log.warning("reconcile failed (%d in a row): %s", failures, exc, exc_info=failures == 1)
            reap_children()
            try:
                self._wake.get(timeout=self.probe_period)
                while not self._wake.empty():
                    self._wake.get_nowait()
            except queue.Empty:
                pass
        log.info("stand-in stopped")

    def _watch(self) -> None:
        """Wake the loop on any broker-pod event; the loop itself re-reads everything (level-based)."""
        while not self.stopping.is_set():
            w = watch.Watch()
            try:
                for _ in w.stream(
                    self._watch_core.list_namespaced_pod,
                    self.namespace,
                    label_selector=self.layout.watch_selector,
                    timeout_seconds=60,
                    _request_timeout=75,
                ):
                    self._wake.put("event")
                    if self.stopping.is_set():
                        break
            except Exception as exc:  # the API server restarts or a stream breaks: watch again
                log.debug("pod watch ended: %s", exc)
                time.sleep(1)

    def reconcile(self) -> None:
        state = self.testbed.require()
        self._ensure_namespace()
        brokers, controllers = self.layout.sets(bool(state.controllers))
        self._reconcile_set(brokers, state.brokers)
        if state.controllers:
            self._reconcile_set(controllers, state.controllers)

    def _reconcile_set(self, sts: PodSet, nodes: list[BrokerState]) -> None:
        self._ensure_statefulset(sts, len(nodes))
        pods = {
            p.metadata.name: p
            for p in self.core.list_namespaced_pod(
                self.namespace, label_selector=sts.selector, _request_timeout=10
            ).items
        }
        deleted: list[tuple[BrokerState, Any]] = []
        for b in nodes:
            if self.stopping.is_set():
                return
            if self._busy(b.id):
                continue  # its restart (below) owns the pod until the broker serves again
            name = sts.pod(b.id)
            pod = pods.get(name)
            if pod is not None and pod.metadata.deletion_timestamp is not None:
                deleted.append((b, pod))
            elif pod is None and name in self._known:
                # Deleted with grace 0 (kubectl delete --force): the container is gone with it.
                log.info("pod %s was removed; stopping broker %d (SIGTERM)", name, b.id)
                self.testbed.stop(b.id)
                self._replace(b)
            elif pod is None:
                # First sight (or after a stand-in restart): adopt the running broker, restart nothing.
                created = self._create_pod(b)
                if created is not None:
                    self._probe(b, created)
            else:
                self._known[name] = pod.metadata.uid
                self._probe(b, pod)
        # podManagementPolicy Parallel: each deleted pod is stopped and recreated on its own thread,
        # at once, whatever the others do (a pod deleted while another restarts does not wait for it).
        for b, pod in deleted:
            t = threading.Thread(target=self._restart, args=(b, pod), daemon=True, name=f"restart-{b.id}")
            self._restarting[b.id] = t
            t.start()
        self._update_statefulset_status(sts, len(nodes))

    def _busy(self, broker_id: int) -> bool:
        t = self._restarting.get(broker_id)
        return t is not None and t.is_alive()

    def _restart(self, b: BrokerState, pod: Any) -> None:
        try:
            self._kill_container(b, pod)
            self._replace(b)
        finally:
            self._wake.put("restarted")  # the next pass reports the StatefulSet's status

    # ---------------------------------------------------------------- the kubelet's part
    def _kill_container(self, b: BrokerState, pod: Any) -> None:
        """A pod marked for deletion: stop its broker (controlled shutdown), then finish the deletion."""
        name = pod.metadata.name
        log.info("pod %s is terminating; stopping broker %d (SIGTERM)", name, b.id)
        t0 = time.monotonic()
        with contextlib.suppress(ApiException):
            self._patch_status(name, self._status_body(pod, ready=False, pid=None, waiting="Terminating"))
        grace = pod.metadata.deletion_grace_period_seconds or TERMINATION_GRACE_SECONDS
        self.testbed.stop(b.id, timeout=max(float(grace), 1.0))
        log.info("broker %d stopped after %.1fs", b.id, time.monotonic() - t0)
        opts = client.V1DeleteOptions(
            grace_period_seconds=0, preconditions=client.V1Preconditions(uid=pod.metadata.uid)
        )
        try:
            self.core.delete_namespaced_pod(name, self.namespace, body=opts)
        except ApiException as exc:
            if exc.status not in (404, 409):  # already gone, or another incarnation by now
                raise

    def _probe(self, b: BrokerState, pod: Any) -> None:
        """Report the broker process in the pod's status, like a readiness probe on the client port."""
        proc = self.testbed.process_state(b)
        ready = proc == "up" and _port_open(b.port or b.controller_port)
        if ready and not is_ready(pod):
            ready = self._serves(b, timeout=3)  # becoming Ready: insist on registration in the cluster
        if proc == "down" and (killed_at := take_oom_killed(self.testbed.state_dir, b.id)):
            t = threading.Thread(
                target=self._restart_in_place, args=(b, pod, killed_at), daemon=True, name=f"oom-{b.id}"
            )
            self._restarting[b.id] = t
            t.start()
            return
        pid = b.pid if proc != "down" else None
        waiting = "BrokerDown" if proc == "down" else None
        current = _container_id(pod)
        if ready != is_ready(pod) or current != (f"testbed://{pid}" if pid else None):
            log.info("pod %s: broker %d %s, Ready=%s", pod.metadata.name, b.id, proc, ready)
            self._patch_status(
                pod.metadata.name, self._status_body(pod, ready=ready, pid=pid, waiting=waiting)
            )

    def _restart_in_place(self, b: BrokerState, pod: Any, killed_at: str) -> None:
        """The kubelet after an OOM kill (pod_status): the same pod, restartCount + 1,
        lastState terminated OOMKilled exit 137, the broker started again and Ready once it serves."""
        name = pod.metadata.name
        try:
            last = oom_killed_state(killed_at, running_since(pod))
            log.info("pod %s: broker %d OOM-killed; restarting it in place", name, b.id)
            pod = self._patch_status(
                name,
                self._status_body(
                    pod, ready=False, pid=None, waiting="ContainerCreating", last_state=last,
                    restarts=restart_count(pod) + 1,
                ),
            )  # fmt: skip
            self._start_and_serve(b, name, pod)
        finally:
            self._wake.put("restarted")

    # ---------------------------------------------------------------- the StatefulSet controller's part
    def _set_of(self, b: BrokerState) -> PodSet:
        return self.layout.set_of(b, bool(self.testbed.require().controllers))

    def _replace(self, b: BrokerState) -> None:
        """Recreate the pod (not Ready), start its broker, and mark it Ready once the broker serves."""
        name = self._set_of(b).pod(b.id)
        t0 = time.monotonic()
        pod = self._create_pod(b)
        if pod is None:
            return  # the old incarnation still exists (a finalizer holds it): try again next round
        pod = self._patch_status(
            name, self._status_body(pod, ready=False, pid=None, waiting="ContainerCreating")
        )
        self._start_and_serve(b, name, pod, t0)

    def _start_and_serve(self, b: BrokerState, name: str, pod: Any, t0: float | None = None) -> None:
        """Start the pod's broker; Ready once it serves, else not Ready with BrokerDown."""
        t0 = time.monotonic() if t0 is None else t0
        try:
            self.testbed.start(b.id, wait=False)
            pid = self.testbed.broker(self.testbed.require(), b.id).pid
            log.info("broker %d started (pid %s); waiting until it serves", b.id, pid)
            pod = self._patch_status(name, self._status_body(pod, ready=False, pid=pid))
            serving = self._serves(b, timeout=self.start_timeout)
        except TestbedError as exc:
            log.error("broker %d did not start: %s", b.id, exc)
            serving = False
        if self.stopping.is_set():
            return  # shutting down mid-start: the next stand-in's probe reports the truth
        if not serving:
            log.error("broker %d does not serve; pod %s stays not Ready", b.id, name)
            self._patch_status(name, self._status_body(pod, ready=False, pid=None, waiting="BrokerDown"))
            return
        pid = self.testbed.broker(self.testbed.require(), b.id).pid
        self._patch_status(name, self._status_body(pod, ready=True, pid=pid))
        log.info(
            "pod %s Ready (broker %d, pid %s) %.1fs after recreation", name, b.id, pid, time.monotonic() - t0
        )

    def _serves(self, b: BrokerState, *, timeout: float) -> bool:
        """Registered in the cluster metadata, polled in short slices so a SIGTERM is not held up."""
        deadline = time.monotonic() + timeout
        while not self.stopping.is_set():
            try:
                self.testbed.wait_serving(self.testbed.require(), [b.id], timeout=min(2.0, timeout))
                return True
            except TestbedError:
                if self.testbed.process_state(self.testbed.broker(self.testbed.require(), b.id)) == "down":
                    return False  # exited: it will not come up by waiting
                if time.monotonic() > deadline:
                    return False
        return False

    def _create_pod(self, b: BrokerState) -> Any | None:
        sts = self._set_of(b)
        name = sts.pod(b.id)
        labels = sts.pod_labels(b.id)
        if sts.owner is None:
            owner: dict[str, Any] = {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": sts.name,
                "uid": self._sts_uid.get(sts.name),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        else:  # no such object: a stable made-up uid (there is no garbage collector to act on it)
            uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.namespace}/{sts.name}"))
            owner = {**sts.owner, "uid": uid, "controller": True, "blockOwnerDeletion": False}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "ownerReferences": [owner]},
            "spec": self._pod_spec(b) | {"nodeName": NODE_NAME, "hostname": name, "subdomain": sts.name},
        }
        try:
            pod = self.core.create_namespaced_pod(self.namespace, body)
        except ApiException as exc:
            if exc.status == 409:
                log.info("pod %s still exists; waiting for it to go", name)
                return None
            raise
        self._known[name] = pod.metadata.uid
        log.info("pod %s created (uid %s)", name, pod.metadata.uid)
        return pod

    def _pod_spec(self, b: BrokerState | None) -> dict[str, Any]:
        port = (b.port or b.controller_port) if b else 9092
        return {
            "containers": [
                {
                    "name": CONTAINER,
                    "image": f"apache/kafka:{self.testbed.require_version()}",
                    "ports": [{"name": "kafka", "containerPort": port}],
                }
            ],
            "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        }

    def _ensure_namespace(self) -> None:
        with contextlib.suppress(ApiException):
            self.core.read_namespace(self.namespace)
            return
        try:
            self.core.create_namespace({"metadata": {"name": self.namespace}})
        except ApiException as exc:
            if exc.status != 409:
                raise

    def _ensure_statefulset(self, which: PodSet, replicas: int) -> None:
        if which.name in self._sts_uid or which.owner is not None:
            return
        try:
            sts = self.apps.read_namespaced_stateful_set(which.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {
                    "name": which.name,
                    "labels": which.labels,
                    "annotations": {
                        "kafkahealth.io/testbed": "pods kept by the kafka-health testbed stand-in (no controller-manager)"
                    },
                },
                "spec": {
                    "replicas": replicas,
                    "podManagementPolicy": "Parallel",
                    "serviceName": which.name,
                    "selector": {"matchLabels": which.labels},
                    "template": {"metadata": {"labels": which.labels}, "spec": self._pod_spec(None)},
                },
            }
            sts = self.apps.create_namespaced_stateful_set(self.namespace, body)
            log.info("StatefulSet %s/%s created", self.namespace, which.name)
        self._sts_uid[which.name] = sts.metadata.uid

    def _update_statefulset_status(self, which: PodSet, replicas: int) -> None:
        if which.owner is not None:
            return  # a Strimzi pool: no StrimziPodSet object to keep
        pods = self.core.list_namespaced_pod(
            self.namespace, label_selector=which.selector, _request_timeout=10
        ).items
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        ready = sum(1 for p in live if is_ready(p))
        status = {
            "replicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": len(live),
            "updatedReplicas": len(live),
        }
        if status == self._sts_status.get(which.name):
            return
        sts = self.apps.read_namespaced_stateful_set(which.name, self.namespace)
        body = {"status": {**status, "observedGeneration": sts.metadata.generation}}
        self.apps.patch_namespaced_stateful_set_status(
            which.name, self.namespace, body, _content_type="application/merge-patch+json"
        )
        self._sts_status[which.name] = status

    # ---------------------------------------------------------------- pod status
    def _patch_status(self, name: str, status: dict[str, Any]) -> Any:
        # A merge patch replaces the lists whole, which is what we want: the status is rewritten entire.
        return self.core.patch_namespaced_pod_status(
            name, self.namespace, {"status": status}, _content_type="application/merge-patch+json"
        )

    def _status_body(self, pod: Any, **kw: Any) -> dict[str, Any]:
        return status_body(pod, image=f"apache/kafka:{self.testbed.require_version()}", **kw)


def _container_id(pod: Any) -> str | None:
    c = container_status(pod)
    return c.container_id if c is not None else None


def run_forever(
    state_dir: Path,
    kubeconfig: Path,
    *,
    probe_period: float = 2.0,
    start_timeout: float = 120.0,
    layout: PodLayout = DEFAULT_LAYOUT,
) -> None:
    """The `testbed standin` process: log to the state dir, stop cleanly on SIGTERM/SIGINT."""
    testbed = Testbed(state_dir)
    (testbed.state_dir / "logs").mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(testbed.state_dir / "logs" / "standin.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

    def api() -> client.ApiClient:
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        return client.ApiClient(cfg)

    standin = PodStandIn(
        testbed,
        api(),
        watch_client=api(),
        probe_period=probe_period,
        start_timeout=start_timeout,
        layout=layout,
    )

    def on_signal(signum: int, _frame: object) -> None:
        standin.stopping.set()
        standin._wake.put("stop")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "stand-in started (pid %d) for %s, API %s, %s pods in namespace %s",
        os.getpid(),
        state_dir,
        kubeconfig,
        layout.kind,
        layout.namespace,
    )
    standin.run()
