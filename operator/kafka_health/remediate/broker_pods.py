"""Which pod runs which broker: the policy's `spec.cluster.brokerPods` applied to the pods found.

Production clusters run brokers as a StatefulSet (broker id = ordinal + offset) or as pods
with a broker-id label; both are read the same way here so the restart executor and the
operator's fact checks agree on the mapping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_health.k8s.client import K8s, PodInfo
from kafka_health.models.policy import BrokerIdSource, BrokerPods
from kafka_health.models.reasons import DegradedReason

_ORDINAL = re.compile(r"-(\d+)$")


class BrokerPodsError(RuntimeError):
    """The broker pods cannot be found or mapped; `reason` is the Degraded condition reason."""

    def __init__(self, reason: DegradedReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class BrokerPod:
    broker_id: int
    pod: PodInfo


def selector_of(k8s: K8s, spec: BrokerPods, namespace: str) -> str:
    """The label selector of the broker pods, as a string for the list call."""
    if spec.pod_selector is not None:
        labels = spec.pod_selector.match_labels
    else:
        assert spec.stateful_set is not None
        found = k8s.statefulset_selector(namespace, spec.stateful_set)
        if found is None:
            raise BrokerPodsError(
                DegradedReason.STATEFUL_SET_NOT_FOUND,
                f"spec.cluster.brokerPods.statefulSet: no StatefulSet {namespace}/{spec.stateful_set}",
            )
        labels = found
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def broker_id_of(pod: PodInfo, spec: BrokerPods) -> int | None:
    """The broker id a pod runs, or None when the pod does not say."""
    mapping = spec.broker_id
    if mapping.source is BrokerIdSource.LABEL:
        assert mapping.label is not None
        value = pod.labels.get(mapping.label)
        return int(value) if value is not None and value.lstrip("-").isdigit() else None
    match = _ORDINAL.search(pod.name)
    return int(match.group(1)) + mapping.ordinal_offset if match else None


def find_broker_pods(
    k8s: K8s, spec: BrokerPods, policy_namespace: str, *, field: str = "spec.cluster.brokerPods"
) -> dict[int, BrokerPod]:
    """Node id → pod. Raises BrokerPodsError when none is found (a fact the policy must report,
    naming `field`, the spec field that points at them)."""
    namespace = spec.namespace or policy_namespace
    selector = selector_of(k8s, spec, namespace)
    pods = k8s.list_pods(namespace, selector)
    found: dict[int, BrokerPod] = {}
    for pod in pods:
        bid = broker_id_of(pod, spec)
        if bid is not None:
            found[bid] = BrokerPod(bid, pod)
    if not found:
        raise BrokerPodsError(
            DegradedReason.BROKER_PODS_NOT_FOUND,
            f"{field}: no pods in namespace {namespace} match {selector}",
        )
    return found


def find_node_pods(
    k8s: K8s, spec: BrokerPods, controller_spec: BrokerPods | None, namespace: str
) -> dict[int, BrokerPod]:
    """Node id → pod: the broker pods, and the dedicated controllers' pods when `controller_spec`
    is given (raises BrokerPodsError when either set has none)."""
    pods = find_broker_pods(k8s, spec, namespace)
    if controller_spec is not None:
        controllers = find_broker_pods(k8s, controller_spec, namespace, field="spec.cluster.controllerPods")
        pods = {**controllers, **pods}
    return pods
