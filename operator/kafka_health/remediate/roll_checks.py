"""What a roll reads live between its steps: the broker pods in Kubernetes, the broker in Kafka.

Each is a predicate the step table of `broker_restart.py` polls (or a check before the pod delete);
none changes anything. Split from `rolling_restart.py` so the executor reads as its steps.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.k8s.client import K8s, K8sError
from kafka_health.models.policy import BrokerPods, CurrentRemediation, RemediationStep, RestartBegun
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.reassignment_safety import being_added, only_added_out_of_sync
from kafka_health.plan.restart_resume import resume_step
from kafka_health.plan.restart_safety import RestartSafety, rule_4_recovering, voter_rejoined
from kafka_health.plan.safety_model import Blocker
from kafka_health.remediate.broker_pods import BrokerPod, BrokerPodsError, find_broker_pods, find_node_pods


def pod_uid_of(current: CurrentRemediation | None) -> str | None:
    """The uid of the pod being restarted (`current.podUid`; a roll persisted by an older version
    is migrated when its status is read: `models.policy.CurrentRemediation`)."""
    return current.pod_uid if current is not None else None


def pod_of(
    k8s: K8s, spec: BrokerPods, controller_spec: BrokerPods | None, namespace: str, broker: int
) -> BrokerPod | None:
    """The pod of `broker` now; None when there is none (e.g. all being recreated)."""
    try:
        return find_node_pods(k8s, spec, controller_spec, namespace).get(broker)
    except BrokerPodsError:
        return None


def restart_happened(
    begun: RestartBegun | None,
    broker: int,
    k8s: K8s,
    spec: BrokerPods,
    controller_spec: BrokerPods | None,
    namespace: str,
) -> bool:
    """Whether an earlier roll's restart of `broker` happened (`resume_step` on its pod now)."""
    if begun is None or begun.broker != broker:
        return False
    pod = pod_of(k8s, spec, controller_spec, namespace, broker)
    uid, terminating = (pod.pod.uid, pod.pod.deleting) if pod is not None else (None, False)
    return resume_step(begun, broker, uid, pod_terminating=terminating) is RemediationStep.WAITING_POD_READY


def is_controller(k8s: K8s, controller_pods: BrokerPods | None, namespace: str, node: int) -> bool:
    """Whether `node` is one of the dedicated controllers (its pod is among controllerPods'), so
    progress messages name it as such; False when they cannot be read (the messages say broker)."""
    if controller_pods is None:
        return False
    try:
        return node in find_broker_pods(k8s, controller_pods, namespace)
    except (BrokerPodsError, K8sError):
        return False


def pods_one_at_a_time(safety: RestartSafety, pods: Mapping[int, BrokerPod]) -> RestartSafety:
    """Rule 4 seen from Kubernetes as well: every OTHER broker pod is Ready and not terminating.

    Kafka's view lags (a killed broker stays registered for broker.session.timeout.ms and in
    the ISRs for replica.lag.time.max.ms); a pod not Ready means a restart is in flight or a
    broker is down, so this one waits.
    """
    busy = sorted(
        f"{bp.pod.name} (broker {bid})"
        for bid, bp in pods.items()
        if bid != safety.broker and (not bp.pod.ready or bp.pod.deleting)
    )
    if not busy:
        return safety
    blocker = Blocker(
        rule="one_at_a_time",
        message=f"broker pod(s) not Ready or terminating: {', '.join(busy)}: one broker at a time",
    )
    return safety.model_copy(update={"safe": False, "blockers": [*safety.blockers, blocker]})


def pods_recovering(
    safety: RestartSafety, snapshot: ClusterSnapshot, pods: Mapping[int, BrokerPod]
) -> RestartSafety:
    """Rule 4's `recovering` blocker (`rule_4_recovering`): another broker is fenced while its
    pod's containers run. Pure: the snapshot and the pods are read by the caller."""
    running = {bid for bid, bp in pods.items() if bp.pod.running and not bp.pod.deleting}
    blockers = rule_4_recovering(snapshot, safety.broker, running)
    if not blockers:
        return safety
    return safety.model_copy(update={"safe": False, "blockers": [*safety.blockers, *blockers]})


def broker_registered(admin: KafkaAdmin, broker: int) -> bool:
    """The broker is in the cluster metadata (KRaft lists only registered, unfenced brokers)."""
    return any(b.id == broker for b in admin.metadata().brokers)


def node_back(admin: KafkaAdmin, node: int, *, since_ms: int, max_voter_lag: int) -> bool:
    """A restarted node is back: a dedicated controller (a voter that is not a registered broker,
    fenced ones included) has rejoined the quorum caught up since `since_ms` (`voter_rejoined`);
    a broker is registered and unfenced again (`broker_registered`; a broker's check makes no
    other call once it is registered)."""
    if broker_registered(admin, node):
        return True
    quorum = admin.describe_quorum()
    if not any(v.id == node for v in quorum.voters) or node in {b.id for b in admin.describe_cluster()}:
        return False  # a broker (combined or not) not registered again yet
    return voter_rejoined(quorum, node, since_ms=since_ms, max_lag=max_voter_lag)


def fully_replicated(admin: KafkaAdmin) -> bool:
    """Cluster-wide: every partition has a leader and its full replica set in the ISR, but for
    the replicas a reassignment in flight is adding (out of sync on purpose, restart safety
    rule 1): a roll never waits on them as if the restarted broker had not caught up."""
    md = admin.metadata()
    if md.topic_errors or any(p.leader is None for p in md.partitions):
        return False
    behind = [p for p in md.partitions if len(p.isr) < len(p.replicas)]
    if not behind:
        return True
    adding = being_added(admin.reassignments())
    return all(only_added_out_of_sync(p, adding) for p in behind)
