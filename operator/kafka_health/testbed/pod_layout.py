"""Where the stand-in puts the testbed's nodes as pods: names, labels, and the pod sets.

The default layout is a StatefulSet `kafka` (and `kafka-controller` with dedicated controllers) in
namespace `kafka`. The **Strimzi layout** (`testbed up --k8s --pod-layout strimzi`): the pods are named and labelled the
way Strimzi's Cluster Operator names them for a Kafka cluster `my-cluster` with node pools,
`<cluster>-<pool>-<node id>` in namespace `strimzi` (`--pod-namespace` changes it): pool
`dual-role` for combined nodes (`my-cluster-dual-role-0` …), or pools `broker` and `controller`
with dedicated controllers (`my-cluster-broker-0`, `my-cluster-controller-100` …); labels
`strimzi.io/cluster`, `strimzi.io/kind=Kafka`, `strimzi.io/name=<cluster>-kafka`,
`strimzi.io/pool-name`, `strimzi.io/broker-role` and `strimzi.io/controller-role` ("true" or
"false"), `strimzi.io/pod-name`, `app.kubernetes.io/name=kafka`, and no broker-id label (the
node id is the name's suffix). Each pod's owner reference names a StrimziPodSet
`<cluster>-<pool>`; no such object exists (the testbed's API server has no Strimzi CRDs), so
no set status is kept. The kubelet and controller parts are the same.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from kafka_health.testbed.broker_config import CONTROLLER_ID_BASE
from kafka_health.testbed.state import BrokerState

NAMESPACE = "kafka"
STATEFULSET = "kafka"
CONTAINER = "kafka"
NODE_NAME = (
    "kafka-testbed"  # a pretend node: with nodeName set, deletion waits for the "kubelet", as in a cluster
)
APP_LABELS = {"app.kubernetes.io/name": "kafka"}
APP_SELECTOR = "app.kubernetes.io/name=kafka"
BROKER_ID_LABEL = "kafkahealth.io/broker-id"
CONTROLLER_STATEFULSET = "kafka-controller"
CONTROLLER_LABELS = {"app.kubernetes.io/name": "kafka-controller"}
CONTROLLER_SELECTOR = "app.kubernetes.io/name=kafka-controller"
NODE_ID_LABEL = "kafkahealth.io/node-id"
TERMINATION_GRACE_SECONDS = 60

STRIMZI_CLUSTER = "my-cluster"  # the name Strimzi's examples give the Kafka resource
STRIMZI_NAMESPACE = "strimzi"
STRIMZI_POD_SET = {"apiVersion": "core.strimzi.io/v1beta2", "kind": "StrimziPodSet"}
LAYOUTS = ("statefulset", "strimzi")


def pod_name(broker_id: int) -> str:
    return f"{STATEFULSET}-{broker_id}"


class PodSet:
    """One pod set the stand-in keeps (a StatefulSet, or a Strimzi node pool): its name, labels,
    and which testbed nodes it holds."""

    def __init__(
        self,
        name: str,
        labels: dict[str, str],
        selector: str,
        id_base: int,
        id_label: str | None,
        owner: dict[str, str] | None = None,
    ) -> None:
        self.name, self.labels, self.selector = name, labels, selector
        self.id_base, self.id_label = id_base, id_label
        self.owner = owner  # None: a StatefulSet the stand-in creates; else the owner's kind (no object)

    def pod(self, node_id: int) -> str:
        return f"{self.name}-{node_id - self.id_base}"

    def pod_labels(self, node_id: int) -> dict[str, str]:
        name = self.pod(node_id)
        if self.owner is not None:  # Strimzi: the pod's own name, no id label
            return {**self.labels, "strimzi.io/pod-name": name}
        assert self.id_label is not None
        return {
            **self.labels,
            self.id_label: str(node_id),
            "statefulset.kubernetes.io/pod-name": name,
            "apps.kubernetes.io/pod-index": str(node_id - self.id_base),
        }


BROKER_SET = PodSet(STATEFULSET, APP_LABELS, APP_SELECTOR, 0, BROKER_ID_LABEL)
CONTROLLER_SET = PodSet(
    CONTROLLER_STATEFULSET, CONTROLLER_LABELS, CONTROLLER_SELECTOR, CONTROLLER_ID_BASE, NODE_ID_LABEL
)


def _strimzi_pool(cluster: str, pool: str, *, broker: bool, controller: bool) -> PodSet:
    name = f"{cluster}-{pool}"
    labels = {
        "app.kubernetes.io/name": "kafka",
        "app.kubernetes.io/instance": cluster,
        "app.kubernetes.io/part-of": f"strimzi-{cluster}",
        "app.kubernetes.io/managed-by": "strimzi-cluster-operator",
        "strimzi.io/cluster": cluster,
        "strimzi.io/kind": "Kafka",
        "strimzi.io/name": f"{cluster}-kafka",
        "strimzi.io/component-type": "kafka",
        "strimzi.io/controller": "strimzipodset",
        "strimzi.io/controller-name": name,
        "strimzi.io/pool-name": pool,
        "strimzi.io/broker-role": str(broker).lower(),
        "strimzi.io/controller-role": str(controller).lower(),
    }
    selector = f"strimzi.io/cluster={cluster},strimzi.io/pool-name={pool}"
    return PodSet(name, labels, selector, 0, None, owner={**STRIMZI_POD_SET, "name": name})


@dataclass(frozen=True)
class PodLayout:
    """Where the stand-in keeps the pods and how it names them: `statefulset` (StatefulSets `kafka`
    and `kafka-controller`) or `strimzi` (Strimzi's node-pool names and labels, cluster `my-cluster`)."""

    kind: str = "statefulset"
    namespace: str = NAMESPACE

    def __post_init__(self) -> None:
        if self.kind not in LAYOUTS:
            raise ValueError(f"pod layout {self.kind!r}: one of {', '.join(LAYOUTS)}")

    @classmethod
    def strimzi(cls, namespace: str = STRIMZI_NAMESPACE) -> PodLayout:
        return cls("strimzi", namespace)

    def sets(self, dedicated_controllers: bool) -> tuple[PodSet, PodSet]:
        """(the brokers' set, the dedicated controllers' set)."""
        if self.kind == "statefulset":
            return BROKER_SET, CONTROLLER_SET
        pool = "broker" if dedicated_controllers else "dual-role"
        return (
            _strimzi_pool(STRIMZI_CLUSTER, pool, broker=True, controller=not dedicated_controllers),
            _strimzi_pool(STRIMZI_CLUSTER, "controller", broker=False, controller=True),
        )

    @property
    def watch_selector(self) -> str:
        if self.kind == "strimzi":
            return f"strimzi.io/cluster={STRIMZI_CLUSTER}"
        return "app.kubernetes.io/name in (kafka,kafka-controller)"

    def set_of(self, b: BrokerState, dedicated_controllers: bool) -> PodSet:
        brokers, controllers = self.sets(dedicated_controllers)
        return controllers if b.role == "controller" else brokers


DEFAULT_LAYOUT = PodLayout()


def rfc3339(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    return rfc3339(dt.datetime.now(dt.UTC))


def is_ready(pod: Any) -> bool:
    conditions = (pod.status.conditions if pod.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)
