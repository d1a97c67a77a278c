"""`kafka-health restart`, step 2 of 4 (options → plan → run → print): read the cluster and the
pods, and judge each node of the roll as the cluster is now.

The Kafka client's snapshot code, the Kubernetes client and the pod lookup are imported when a
roll is planned, not when `kafka-health` starts: together they load kafka-python and the
kubernetes package (about 2 s measured with `python -X importtime`), which `--help` and the
other commands never need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_health.cli import kafka_options
from kafka_health.cli.restart_options import RestartOptions, fail, now
from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.results import ZOOKEEPER_MODE
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.restart_safety import check_restart_safety, controller_only_nodes, roll_plan
from kafka_health.plan.roll_batches import BatchPlan, plan_batches
from kafka_health.remediate import access

if TYPE_CHECKING:
    from kafka_health.k8s.client import K8s
    from kafka_health.remediate.broker_pods import BrokerPod


@dataclass(frozen=True)
class NodeRow:
    """One node of the roll: where it stands and why, its pod, and the safety verdict now."""

    node: int
    role: str
    why: str
    pod: str
    ready: bool
    safe_now: bool
    blockers: list[dict[str, Any]]
    skipped: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "role": self.role,
            "why": self.why,
            "pod": self.pod,
            "ready": self.ready,
            "safeNow": self.safe_now,
            "blockers": self.blockers,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class RollPlan:
    """The roll as planned: the snapshot it was judged on, the order, and each node's row."""

    snapshot: ClusterSnapshot
    order: list[int]
    rows: list[NodeRow]
    batches: BatchPlan | None = None  # --max-concurrent > 1: the batches planned now

    @property
    def first_safe(self) -> bool:
        """The first node may restart now (a dry run's exit 0)."""
        return bool(self.rows) and self.rows[0].safe_now


def kubernetes(kubeconfig: str | None) -> K8s:
    """The Kubernetes API client (exit 3 when there is none)."""
    from kafka_health.k8s.client import K8s, load_config

    try:
        return K8s(load_config(kubeconfig))
    except Exception as exc:
        raise fail(f"no Kubernetes API: {exc}") from None


def admin(opts: RestartOptions) -> KafkaAdmin:
    return KafkaAdmin(kafka_options.connection(opts.args.bootstrap_servers, opts.args.command_config))


def plan_roll(opts: RestartOptions, k8s: K8s, kafka: KafkaAdmin) -> RollPlan:
    """Read the cluster, pick the nodes and their pods, and judge each in roll order; exit 3
    for anything that makes the roll impossible to plan honestly."""
    snapshot = _read(opts, kafka)
    wanted = _wanted(opts, snapshot)
    pods = _pods(opts, k8s, wanted)
    return _judge(opts, snapshot, wanted, pods)


def _read(opts: RestartOptions, kafka: KafkaAdmin) -> ClusterSnapshot:
    from kafka_health.collect.snapshot import collect_snapshot, zookeeper_mode

    bootstrap = opts.args.bootstrap_servers
    snapshot = collect_snapshot(kafka, bootstrap, now)
    if not snapshot.reachable:
        reason = snapshot.missing[0].reason
        # A security refusal (authentication, TLS, protocol) is a setting to fix, not an outage.
        what = "refused the connection" if security_errors.kind_of(reason) else "unreachable"
        raise fail(f"cluster {bootstrap} {what}: {reason}")
    if zookeeper_mode(snapshot):
        raise fail(f"cannot roll {bootstrap}: {ZOOKEEPER_MODE}")
    # The safety rules judge only the partitions the principal sees: with any hidden (or the
    # totals unchecked), a broker could be called safe while it leads what nobody checked.
    alive = [b.id for b in snapshot.brokers if b.alive]
    if (hidden := access.hidden_in(kafka, {p.topic for p in snapshot.partitions}, alive)) is not None:
        raise fail(f"cannot roll {bootstrap}: {hidden}; nothing restarted")
    return snapshot


def _wanted(opts: RestartOptions, snapshot: ClusterSnapshot) -> list[int]:
    """The nodes to restart: --brokers, or every broker (and the dedicated controllers when
    their pods are given)."""
    controllers = sorted(controller_only_nodes(snapshot))
    known = sorted(b.id for b in snapshot.brokers)
    default = known + (controllers if opts.controller_spec is not None else [])
    wanted = opts.ids if opts.ids is not None else default
    unknown = [b for b in wanted if b not in known and b not in controllers]
    if unknown:
        raise fail(
            f"node(s) {', '.join(map(str, unknown))} not in the cluster "
            f"(brokers: {known}; dedicated controllers: {controllers})"
        )
    if opts.controller_spec is None and any(b in controllers for b in wanted):
        raise fail(
            "dedicated controller(s) in --brokers: give their pods with --controller-statefulset "
            "or --controller-selector"
        )
    return wanted


def _pods(opts: RestartOptions, k8s: K8s, wanted: list[int]) -> dict[int, BrokerPod]:
    from kafka_health.k8s.client import K8sError
    from kafka_health.remediate.broker_pods import BrokerPodsError, find_node_pods

    try:
        pods = find_node_pods(k8s, opts.spec, opts.controller_spec, opts.args.namespace)
    except (BrokerPodsError, K8sError) as exc:
        raise fail(str(exc)) from None
    no_pod = [b for b in wanted if b not in pods]
    if no_pod:
        raise fail(f"no pod found for node(s) {', '.join(map(str, no_pod))}")
    return pods


def _judge(
    opts: RestartOptions, snapshot: ClusterSnapshot, wanted: list[int], pods: dict[int, BrokerPod]
) -> RollPlan:
    from kafka_health.remediate.roll_checks import pods_one_at_a_time, pods_recovering

    plan = roll_plan(snapshot, wanted)
    order = [slot.node for slot in plan]
    rows: list[NodeRow] = []
    for i, slot in enumerate(plan):
        safety = pods_one_at_a_time(
            check_restart_safety(snapshot, slot.node, remaining=order[i:], refuse_never_safe=opts.refuse),
            pods,
        )
        safety = pods_recovering(safety, snapshot, pods)
        pod = pods[slot.node].pod
        rows.append(
            NodeRow(
                node=slot.node,
                role=slot.role,
                why=slot.why,
                pod=pod.name,
                ready=pod.ready,
                safe_now=safety.safe,
                blockers=[b.model_dump(mode="json") for b in safety.blockers],
                skipped=[f"{x.topic}-{x.partition}" for x in safety.skipped],
            )
        )
    batches = None
    if opts.args.max_concurrent > 1:
        batches = plan_batches(
            snapshot, order, max_concurrent=opts.args.max_concurrent, batch_by=opts.batch_by
        )
    return RollPlan(snapshot, order, rows, batches)
