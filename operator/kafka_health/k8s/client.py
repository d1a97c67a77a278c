"""Blocking Kubernetes calls, one method per call, on the official `kubernetes` client.

Callers on the event loop wrap them in `asyncio.to_thread`. Errors come back as
`K8sError` with the object named and no payload echoed (a Secret's data never leaks
into a message).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

GROUP = "kafkahealth.io"
VERSION = "v1alpha1"
PLURAL = "kafkahealthpolicies"


class K8sError(RuntimeError):
    """A Kubernetes call failed; `status` is the HTTP status (404 = not found)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _wrap(what: str, exc: ApiException) -> K8sError:
    # The exception body may echo the object (a Secret!): keep only status and reason.
    return K8sError(f"{what}: {exc.status} {exc.reason}", status=exc.status)


@dataclass(frozen=True)
class PodInfo:
    name: str
    namespace: str
    uid: str
    labels: dict[str, str]
    ready: bool
    phase: str | None
    deleting: bool
    # Every container of the pod is running (its process is up, whether or not it is Ready): a
    # fenced broker whose container runs is recovering its logs or catching up, not down.
    running: bool = False
    # How its containers last ended inside this pod (lastState.terminated; the kubelet restarted
    # them in place), and its spec.terminationGracePeriodSeconds: an unclean stop is told by them.
    terminations: tuple[ContainerTermination, ...] = ()
    grace_period_seconds: int | None = None


@dataclass(frozen=True)
class ContainerTermination:
    """One container's lastState.terminated: how it last ended before the kubelet restarted it."""

    container: str
    exit_code: int
    reason: str | None
    finished_at: datetime | None
    restart_count: int


@dataclass(frozen=True)
class LeaseRecord:
    """A `coordination.k8s.io/v1` Lease as the operator uses it (the cluster action lock).

    `resource_version` is what a compare-and-swap replace must carry; `annotations` hold the
    holder's typed fields (see `controller/cluster_lease.py`)."""

    name: str
    namespace: str
    holder_identity: str | None
    lease_duration_seconds: int | None
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int = 0
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    resource_version: str | None = None


def _micro_time(value: datetime | None) -> str | None:
    """A Lease MicroTime: RFC 3339 with exactly six fraction digits, in UTC (the API server's format;
    `datetime.isoformat()` drops the fraction when it is zero, which the server refuses)."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lease_body(lease: LeaseRecord) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": lease.name,
        "namespace": lease.namespace,
        "labels": dict(lease.labels),
        "annotations": dict(lease.annotations),
    }
    if lease.resource_version is not None:
        metadata["resourceVersion"] = lease.resource_version
    spec = {
        "holderIdentity": lease.holder_identity,
        "leaseDurationSeconds": lease.lease_duration_seconds,
        "acquireTime": _micro_time(lease.acquire_time),
        "renewTime": _micro_time(lease.renew_time),
        "leaseTransitions": lease.lease_transitions,
    }
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {k: v for k, v in spec.items() if v is not None},
    }


def _lease_record(obj: Any) -> LeaseRecord:
    spec = obj.spec
    return LeaseRecord(
        name=obj.metadata.name,
        namespace=obj.metadata.namespace,
        holder_identity=spec.holder_identity if spec else None,
        lease_duration_seconds=spec.lease_duration_seconds if spec else None,
        acquire_time=spec.acquire_time if spec else None,
        renew_time=spec.renew_time if spec else None,
        lease_transitions=(spec.lease_transitions or 0) if spec else 0,
        annotations=dict(obj.metadata.annotations or {}),
        labels=dict(obj.metadata.labels or {}),
        resource_version=obj.metadata.resource_version,
    )


def load_config(kubeconfig: str | None = None) -> client.ApiClient:
    """In-cluster config when running in a pod, else the kubeconfig (KUBECONFIG or the given path)."""
    try:
        if kubeconfig:
            raise config.ConfigException("explicit kubeconfig")
        config.load_incluster_config()
        return client.ApiClient()
    except config.ConfigException:
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        return client.ApiClient(cfg)


class K8s:
    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)

    # ---------------------------------------------------------------- leases (the cluster lock)
    # Every write is a compare-and-swap: create fails with 409 when the Lease exists; replace
    # carries the resourceVersion read and fails with 409 when anyone wrote it since. Leases are
    # never deleted: the API server creates a Lease on update when it is missing, so only an
    # existing one makes a stale replace fail.
    def read_lease(self, namespace: str, name: str) -> LeaseRecord | None:
        try:
            return _lease_record(self.coordination.read_namespaced_lease(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _wrap(f"Lease {namespace}/{name}", exc) from None

    def create_lease(self, lease: LeaseRecord) -> LeaseRecord:
        """Create `lease` (409 K8sError when it exists already)."""
        body: Any = _lease_body(lease)  # a plain dict: MicroTime strings exactly as the server wants them
        body["metadata"].pop("resourceVersion", None)
        try:
            return _lease_record(self.coordination.create_namespaced_lease(lease.namespace, body))
        except ApiException as exc:
            raise _wrap(f"create Lease {lease.namespace}/{lease.name}", exc) from None

    def replace_lease(self, lease: LeaseRecord) -> LeaseRecord:
        """Replace the Lease if it is still at `lease.resource_version` (409 K8sError when not)."""
        if lease.resource_version is None:
            raise ValueError("replace_lease needs the resourceVersion read (compare-and-swap)")
        try:
            body: Any = _lease_body(lease)
            return _lease_record(
                self.coordination.replace_namespaced_lease(lease.name, lease.namespace, body)
            )
        except ApiException as exc:
            raise _wrap(f"replace Lease {lease.namespace}/{lease.name}", exc) from None

    # ---------------------------------------------------------------- secrets
    def read_secret_value(self, namespace: str, name: str, key: str) -> str:
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as exc:
            raise _wrap(f"Secret {namespace}/{name}", exc) from None
        data = secret.data or {}
        if key not in data:
            raise K8sError(f"Secret {namespace}/{name} has no key {key!r}", status=404)
        return base64.b64decode(data[key]).decode()

    # ---------------------------------------------------------------- pods
    def list_pods(self, namespace: str, label_selector: str) -> list[PodInfo]:
        try:
            pods = self.core.list_namespaced_pod(namespace, label_selector=label_selector)
        except ApiException as exc:
            raise _wrap(f"pods in {namespace} ({label_selector})", exc) from None
        return [_pod_info(p) for p in pods.items]

    def read_pod(self, namespace: str, name: str) -> PodInfo | None:
        try:
            return _pod_info(self.core.read_namespaced_pod(name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _wrap(f"pod {namespace}/{name}", exc) from None

    def delete_pod(self, namespace: str, name: str, uid: str | None = None) -> None:
        """Delete a pod; with `uid`, only that incarnation (a recreated pod is never deleted by mistake)."""
        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid) if uid else None)
        try:
            self.core.delete_namespaced_pod(name, namespace, body=body)
        except ApiException as exc:
            raise _wrap(f"delete pod {namespace}/{name}", exc) from None

    def statefulset_selector(self, namespace: str, name: str) -> dict[str, str] | None:
        """The matchLabels of a StatefulSet's pod selector; None when there is no such StatefulSet."""
        try:
            sts = self.apps.read_namespaced_stateful_set(name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _wrap(f"StatefulSet {namespace}/{name}", exc) from None
        return dict(sts.spec.selector.match_labels or {})

    # ---------------------------------------------------------------- configmaps
    def read_configmap(self, namespace: str, name: str) -> dict[str, str] | None:
        try:
            cm = self.core.read_namespaced_config_map(name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _wrap(f"ConfigMap {namespace}/{name}", exc) from None
        return dict(cm.data or {})

    def create_configmap(
        self,
        namespace: str,
        name: str,
        data: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: dict[str, Any] | None = None,
    ) -> str | None:
        """Create (never replace) a ConfigMap; returns its uid (as the API server answered)."""
        meta = client.V1ObjectMeta(name=name, namespace=namespace, labels=labels or {})
        if owner:
            meta.owner_references = [client.V1OwnerReference(**owner)]
        try:
            created = self.core.create_namespaced_config_map(
                namespace, client.V1ConfigMap(metadata=meta, data=data)
            )
        except ApiException as exc:
            raise _wrap(f"create ConfigMap {namespace}/{name}", exc) from None
        return created.metadata.uid if created.metadata is not None else None

    def delete_configmap(self, namespace: str, name: str, uid: str) -> None:
        """Delete exactly the ConfigMap incarnation `uid` (one this process created); gone is fine."""
        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        try:
            self.core.delete_namespaced_config_map(name, namespace, body=body)
        except ApiException as exc:
            if exc.status == 404:
                return
            raise _wrap(f"delete ConfigMap {namespace}/{name}", exc) from None

    # ---------------------------------------------------------------- policies
    def patch_policy_status(
        self, namespace: str, name: str, status: dict[str, Any], resource_version: str | None = None
    ) -> str | None:
        """Merge-patch the status subresource; returns the policy's new resourceVersion. With
        `resource_version` the patch is a compare-and-swap: 409 K8sError when anyone wrote the
        policy since that version (another replica's progress is never overwritten by a stale read)."""
        body: dict[str, Any] = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        try:
            obj: Any = self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, PLURAL, name, body
            )
        except ApiException as exc:
            raise _wrap(f"status of KafkaHealthPolicy {namespace}/{name}", exc) from None
        return ((obj or {}).get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None

    def remove_policy_finalizer(
        self, namespace: str, name: str, finalizer: str, finalizers: list[str]
    ) -> bool:
        """Remove `finalizer` from the policy, as long as it still sits where `finalizers` (the list
        last seen) has it: a JSON patch with a test, so a concurrent change of the list is never
        overwritten. False when the policy is gone or its list changed (the next event retries)."""
        index = finalizers.index(finalizer)
        body = [
            {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
            {"op": "remove", "path": f"/metadata/finalizers/{index}"},
        ]
        try:
            self.custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, body, _content_type="application/json-patch+json"
            )
        except ApiException as exc:
            if exc.status in (404, 409, 422):
                return False
            raise _wrap(f"finalizers of KafkaHealthPolicy {namespace}/{name}", exc) from None
        return True

    def read_policy(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The policy as stored now (None when deleted): the freshest status, newer than a watch event."""
        try:
            obj: Any = self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise _wrap(f"KafkaHealthPolicy {namespace}/{name}", exc) from None
        return dict(obj)

    def list_policies(self, namespace: str | None = None) -> list[dict[str, Any]]:
        res: Any
        try:
            if namespace:
                res = self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
            else:
                res = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        except ApiException as exc:
            raise _wrap("list KafkaHealthPolicies", exc) from None
        return list(res.get("items", []))


def _pod_info(pod: Any) -> PodInfo:
    conditions = (pod.status.conditions if pod.status else None) or []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    return PodInfo(
        name=pod.metadata.name,
        namespace=pod.metadata.namespace,
        uid=pod.metadata.uid,
        labels=dict(pod.metadata.labels or {}),
        ready=ready,
        phase=pod.status.phase if pod.status else None,
        deleting=pod.metadata.deletion_timestamp is not None,
        running=_containers_running(pod),
        terminations=_terminations(pod),
        grace_period_seconds=pod.spec.termination_grace_period_seconds if pod.spec else None,
    )


def _terminations(pod: Any) -> tuple[ContainerTermination, ...]:
    statuses = (pod.status.container_statuses if pod.status else None) or []
    out = []
    for s in statuses:
        t = s.last_state.terminated if s.last_state is not None else None
        if t is not None:
            out.append(
                ContainerTermination(s.name, t.exit_code, t.reason, t.finished_at, s.restart_count or 0)
            )
    return tuple(out)


def _containers_running(pod: Any) -> bool:
    """Every container status of the pod says `running` (none listed: not running)."""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    return bool(statuses) and all(s.state is not None and s.state.running is not None for s in statuses)
