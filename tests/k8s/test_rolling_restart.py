"""The rolling-restart executor on the real testbed: 3 KRaft brokers, their pods kept by the stand-in.

Design §4 to the letter: one broker at a time, safety re-checked live before each, waits for
pod Ready / broker registered / URP 0, halts on failure, resumes without restarting twice.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kubernetes import client

from kafka_health._kits.waiting import wait_for
from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.k8s.client import K8s
from kafka_health.models.policy import BrokerPods, CurrentRemediation, RequestState, RestartTimeouts
from kafka_health.remediate.rolling_restart import Step, next_step, restart_broker, run_roll
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.pod_layout import APP_SELECTOR, NAMESPACE
from kafka_health.testbed.standin import StandIn

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

PODS = BrokerPods(namespace=NAMESPACE, stateful_set="kafka")
TIMEOUTS = RestartTimeouts(pod_ready="3m", broker_registered="2m", urp_zero="3m")


def _utc() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _quiet_conf(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "logger": faults._QUIET}


def pids(testbed: Testbed) -> dict[int, int | None]:
    state = testbed.require()
    return {b.id: (b.pid if testbed.process_state(b) != "down" else None) for b in state.brokers}


def pod_uids(core: Any) -> dict[str, str]:
    return {
        p.metadata.name: p.metadata.uid
        for p in core.list_namespaced_pod(NAMESPACE, label_selector=APP_SELECTOR).items
    }


def ready_pods(core: Any) -> set[str]:
    out = set()
    for p in core.list_namespaced_pod(NAMESPACE, label_selector=APP_SELECTOR, _request_timeout=5).items:
        conds = (p.status.conditions if p.status else None) or []
        if p.metadata.deletion_timestamp is None and any(
            c.type == "Ready" and c.status == "True" for c in conds
        ):
            out.add(p.metadata.name)
    return out


@pytest.fixture
def k8s(k8s_api: client.ApiClient) -> K8s:
    return K8s(k8s_api)


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdmin]:
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as a:
        yield a


@pytest.fixture
def healthy_pods(broker_pods: StandIn, kafka: Testbed) -> Iterator[StandIn]:
    """Every broker serving and every pod Ready before and after the test."""
    faults.heal(kafka)
    broker_pods.wait_pods_ready(timeout=180)
    yield broker_pods
    faults.heal(kafka)
    broker_pods.wait_pods_ready(timeout=180)


def create_topic(bootstrap: str, name: str, partitions: int = 6) -> None:
    faults.create_topic(bootstrap, name, partitions, config={"min.insync.replicas": "2"})


def orders(admin: KafkaAdmin, topic: str) -> dict[int, list[int]]:
    """Each partition's replica order, as the metadata gives it."""
    snap = collect_snapshot(admin, "kafka", _utc, safety_only=True)
    return {p.partition: list(p.replicas) for p in snap.partitions if p.topic == topic}


def leaders(admin: KafkaAdmin, topic: str) -> dict[int, int | None]:
    snap = collect_snapshot(admin, "kafka", _utc, safety_only=True)
    return {p.partition: p.leader for p in snap.partitions if p.topic == topic}


def restart_on_testbed(
    step: Any, k8s: K8s, admin: KafkaAdmin, *, current: CurrentRemediation | None, **kw: Any
) -> Any:
    """`restart_broker` with the testbed's pods and the tests' timeouts (the rest as given)."""
    return restart_broker(
        step,
        k8s=k8s,
        admin=admin,
        pods_spec=PODS,
        namespace=NAMESPACE,
        timeouts=TIMEOUTS,
        current=current,
        **kw,
    )


def as_read_back(saved: CurrentRemediation) -> CurrentRemediation:
    """status.currentRemediation as a new operator reads it (round-trip through JSON)."""
    return CurrentRemediation.model_validate(saved.model_dump(mode="json", by_alias=True))


# ---------------------------------------------------------------------------------- samplers
@dataclass
class Samples:
    offline: list[tuple[float, list[str]]] = field(default_factory=list)
    metadata_errors: int = 0
    max_down: int = 0
    max_not_ready: int = 0
    pid_history: dict[int, list[int]] = field(default_factory=dict)
    samples: int = 0


class Sampler:
    """Every ~0.5 s: offline partitions (metadata), brokers down (processes), pods not Ready, pids."""

    def __init__(self, testbed: Testbed, core: Any, bootstrap: str) -> None:
        self.testbed, self.core, self.bootstrap = testbed, core, bootstrap
        self.out = Samples()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self) -> Samples:
        self.thread.start()
        return self.out

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)

    def run(self) -> None:
        a = AdminClient({**_quiet_conf(self.bootstrap), "socket.timeout.ms": 3000})
        names = {f"kafka-{b.id}" for b in self.testbed.require().brokers}
        while not self.stop.is_set():
            self.out.samples += 1
            try:
                md = a.list_topics(timeout=3)
                off = [
                    f"{t}-{p.id}"
                    for t, tm in md.topics.items()
                    for p in tm.partitions.values()
                    if p.leader < 0
                ]
                if off:
                    self.out.offline.append((time.time(), off))
            except Exception:
                self.out.metadata_errors += 1
            with contextlib.suppress(Exception):
                current = pids(self.testbed)
                self.out.max_down = max(self.out.max_down, sum(1 for p in current.values() if p is None))
                for bid, pid in current.items():
                    hist = self.out.pid_history.setdefault(bid, [])
                    if pid is not None and (not hist or hist[-1] != pid):
                        hist.append(pid)
            with contextlib.suppress(Exception):
                self.out.max_not_ready = max(self.out.max_not_ready, len(names - ready_pods(self.core)))
            self.stop.wait(0.5)


@dataclass
class Load:
    acked: set[int] = field(default_factory=set)
    failed: int = 0
    consumed: list[int] = field(default_factory=list)
    positions: dict[int, set[tuple[int, int]]] = field(default_factory=dict)
    """value → the (partition, offset) it was read at: two positions = a duplicate in the data."""
    redelivered: int = 0
    """Records the consumer was handed twice at the same offset (client redelivery, not data)."""

    def seen(self, value: int, partition: int, offset: int) -> None:
        at = self.positions.setdefault(value, set())
        if (partition, offset) in at:
            self.redelivered += 1
            return
        at.add((partition, offset))
        self.consumed.append(value)

    produced: int = 0


class ProducerThread(threading.Thread):
    """An idempotent acks=all producer, ~200 messages/s, value = a unique sequence number. Sent in
    batches (linger 100 ms): the same records and acknowledgements, a tenth of the requests, so a
    roll test's brokers do not take a core between them away from the other tests."""

    def __init__(self, bootstrap: str, topic: str, load: Load) -> None:
        super().__init__(daemon=True)
        self.topic, self.load = topic, load
        self.stopping = threading.Event()
        self.producer = Producer(
            {
                **_quiet_conf(bootstrap),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 100,
                "message.timeout.ms": 120_000,
            }
        )
        self.lock = threading.Lock()

    def _cb(self, err: KafkaError | None, msg: Any) -> None:
        with self.lock:
            if err is None:
                self.load.acked.add(int(msg.value()))
            else:
                self.load.failed += 1

    def run(self) -> None:
        seq = 0
        while not self.stopping.is_set():
            for _ in range(10):
                try:
                    self.producer.produce(
                        self.topic, key=str(seq).encode(), value=str(seq).encode(), on_delivery=self._cb
                    )
                    seq += 1
                except BufferError:
                    break
            self.load.produced = seq
            self.producer.poll(0.05)
        self.producer.flush(150)


class ConsumerThread(threading.Thread):
    """Reads every partition of the topic from the start (assigned, no group rebalances)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, load: Load) -> None:
        super().__init__(daemon=True)
        self.load = load
        self.stopping = threading.Event()
        self.consumer = Consumer(
            {
                **_quiet_conf(bootstrap),
                "group.id": f"{topic}-reader",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                # Let each fetch wait for a batch (up to Kafka's default 500 ms) rather than answer
                # every 100 ms batch on its own.
                "fetch.min.bytes": 64 * 1024,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])

    def run(self) -> None:
        while not self.stopping.is_set():
            msgs: list[Any] = self.consumer.consume(500, timeout=0.5)
            for m in msgs:
                if m.error() is None:
                    self.load.seen(int(m.value()), m.partition(), m.offset())
        self.consumer.close()


def read_all(bootstrap: str, topic: str, partitions: int) -> list[int]:
    c = Consumer({**_quiet_conf(bootstrap), "group.id": f"{topic}-final", "enable.auto.commit": False})
    ends = {}
    for p in range(partitions):
        _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        ends[p] = hi
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[tuple[int, int], int] = {}  # (partition, offset) → value
    pos = dict.fromkeys(range(partitions), 0)
    deadline = time.monotonic() + 60
    while any(pos[p] < ends[p] for p in pos) and time.monotonic() < deadline:
        batch: list[Any] = c.consume(1000, timeout=1)
        for m in batch:
            if m.error() is None:
                out[(m.partition(), m.offset())] = int(m.value())
                pos[m.partition()] = m.offset() + 1
    c.close()
    return list(out.values())


# ---------------------------------------------------------------------------------- (a)
def test_full_roll_under_load_loses_nothing_and_restarts_each_broker_once(
    healthy_pods: StandIn, kafka: Testbed, bootstrap: str, k8s: K8s, admin: KafkaAdmin, unique_name: str
) -> None:
    core: Any = client.CoreV1Api(k8s.api_client)
    topic, partitions = unique_name, 6
    create_topic(bootstrap, topic, partitions)
    before = pids(kafka)
    uids_before = pod_uids(core)
    orders_before = orders(admin, topic)
    load = Load()
    producer = ProducerThread(bootstrap, topic, load)
    consumer = ConsumerThread(bootstrap, topic, partitions, load)
    persisted: list[CurrentRemediation] = []
    with Sampler(kafka, core, bootstrap) as samples:
        producer.start()
        consumer.start()
        wait_for(lambda: len(load.acked) > 500, timeout=60, what="the producer running")
        report = run_roll(
            "roll-under-load",
            None,
            k8s=k8s,
            admin=admin,
            pods_spec=PODS,
            namespace=NAMESPACE,
            timeouts=TIMEOUTS,
            pause=timedelta(seconds=2),
            post_roll_election=True,
            persist=persisted.append,
            drain_leadership=True,
        )
        acked_at_roll_end = len(load.acked)
        time.sleep(2)
        producer.stopping.set()
        producer.join(180)
        wait_for(
            lambda: load.acked <= set(load.consumed),
            timeout=120,
            what="the consumer seeing every acknowledged message",
        )
        consumer.stopping.set()
        consumer.join(30)
    after = pids(kafka)

    assert report.ok, report.result.message
    assert report.result.state is RequestState.SUCCEEDED
    assert sorted(report.result.brokers_done or []) == [0, 1, 2]
    assert [o.result for o in report.outcomes] == ["done"] * 3
    # Each step persisted, in order, for each broker.
    for o in report.outcomes:
        steps = [c.step for c in persisted if c.current_broker == o.broker]
        assert steps == [
            "CheckingSafety",
            "DrainingLeadership",
            "DeletingPod",
            "WaitingPodReady",
            "WaitingBrokerRegistered",
            "WaitingUrpZero",
            "RestoringLeadership",
        ]
        # Its leaderships moved off it before its pod was deleted, and came back after.
        assert o.drain is not None and o.drain.elected >= 1 and o.drain.left == [], o.drain
        assert o.restore is not None and o.restore.left == [] and o.restore.problem is None, o.restore
    assert orders(admin, topic) == orders_before, "every replica order restored"
    # Zero acknowledged messages lost, zero duplicates (live consumer and the whole log).
    assert acked_at_roll_end > 1000
    assert load.acked <= set(load.consumed)
    duplicates = {v: at for v, at in load.positions.items() if len(at) > 1}
    assert duplicates == {}, "the same message written twice"
    assert len(load.consumed) == len(set(load.consumed))
    log_values = read_all(bootstrap, topic, partitions)
    assert len(log_values) == len(set(log_values)), "duplicates in the log"
    assert load.acked <= set(log_values)
    # No partition offline at any sample; never two brokers down at once.
    assert samples.samples > 20
    assert samples.offline == []
    assert samples.max_down <= 1
    assert samples.max_not_ready <= 1
    # Every broker's pid changed exactly once; every pod replaced once.
    for bid, pid in before.items():
        assert after[bid] != pid
        assert samples.pid_history[bid] == [pid, after[bid]], samples.pid_history
    uids_after = pod_uids(core)
    assert all(uids_after[n] != uids_before[n] for n in uids_before)
    assert report.election is not None
    assert report.election.succeeded, report.election.summary()


# ---------------------------------------------------------------------------------- (b)
def test_a_broker_that_cannot_come_back_halts_the_roll(
    healthy_pods: StandIn, kafka: Testbed, bootstrap: str, k8s: K8s, admin: KafkaAdmin
) -> None:
    core: Any = client.CoreV1Api(k8s.api_client)
    snapshot = collect_snapshot(admin, "kafka", _utc)
    step = next_step(snapshot, "roll-halt", [0, 1, 2], [])
    assert step is not None
    first = step.next_broker
    before, uids_before = pids(kafka), pod_uids(core)
    meta = kafka.data_dir(first) / "meta.properties"
    original = meta.read_text()
    # A node id that does not match its config: Kafka refuses to start (read at start-up only).
    meta.write_text(original.replace(f"node.id={first}", "node.id=7"))
    try:
        report = run_roll(
            "roll-halt",
            None,
            k8s=k8s,
            admin=admin,
            pods_spec=PODS,
            namespace=NAMESPACE,
            timeouts=RestartTimeouts(pod_ready="40s", broker_registered="30s", urp_zero="30s"),
            pause=timedelta(seconds=1),
        )
        after, uids_after = pids(kafka), pod_uids(core)
    finally:
        meta.write_text(original)
    assert report.result.state is RequestState.FAILED
    assert len(report.outcomes) == 1
    out = report.outcomes[0]
    assert (out.broker, out.result, out.step) == (first, "failed", Step.WAITING_POD_READY)
    assert f"halted at broker {first}" in (report.result.message or "")
    assert report.result.brokers_done == []
    # Nothing else restarted: the other brokers kept their processes and pods.
    for bid in before:
        if bid != first:
            assert after[bid] == before[bid]
            assert uids_after[f"kafka-{bid}"] == uids_before[f"kafka-{bid}"]
    assert after[first] is None
    assert f"kafka-{first}" not in ready_pods(core)
    # Heal: the stand-in does not restart a broker on its own; deleting the pod again does.
    core.delete_namespaced_pod(f"kafka-{first}", NAMESPACE)
    healthy_pods.wait_pods_ready(timeout=180)


# ---------------------------------------------------------------------------------- (c)
class _Crash(Exception):
    """The operator dies right here."""


@pytest.mark.parametrize("crash", ["after_delete", "before_delete"])
def test_resume_after_a_crash_in_deleting_pod_restarts_the_broker_exactly_once(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s: K8s,
    admin: KafkaAdmin,
    crash: str,
    unique_name: str,
) -> None:
    """The operator dies in DeletingPod: after the delete went out (resume must not delete the
    new pod), or after DeletingPod was persisted but before the delete (resume deletes once)."""
    core: Any = client.CoreV1Api(k8s.api_client)
    create_topic(bootstrap, unique_name)  # every broker preferred for 2 of its partitions
    orders_before = orders(admin, unique_name)
    snapshot = collect_snapshot(admin, "kafka", _utc)
    step = next_step(snapshot, "roll-resume", [0, 1, 2], [])
    assert step is not None and step.safety.safe
    broker = step.next_broker
    before, uids_before = pids(kafka), pod_uids(core)
    persisted: list[CurrentRemediation] = []

    def persist_then_crash(c: CurrentRemediation) -> None:
        if crash == "after_delete" and c.step == Step.WAITING_POD_READY:
            raise _Crash  # the delete went out; this step was never written
        persisted.append(c)
        if crash == "before_delete" and c.step == Step.DELETING_POD:
            raise _Crash  # DeletingPod (with the pod uid) written; the delete never sent

    with Sampler(kafka, core, bootstrap) as samples:
        with pytest.raises(_Crash):
            restart_on_testbed(
                step,
                k8s,
                admin,
                current=None,
                persist=persist_then_crash,
                plan_id="p-resume",
                drain_leadership=True,
            )
        saved = persisted[-1]
        assert saved.step == "DeletingPod" and saved.current_broker == broker
        assert saved.pod_uid == uids_before[f"kafka-{broker}"]  # a typed field, not message text
        if crash == "before_delete":
            assert pod_uids(core)[f"kafka-{broker}"] == uids_before[f"kafka-{broker}"]
            assert pids(kafka)[broker] == before[broker]
        # A new operator: reads status.currentRemediation (round-trip through JSON) and resumes.
        restored = as_read_back(saved)
        resumed: list[CurrentRemediation] = []
        out = restart_on_testbed(
            None,
            k8s,
            admin,
            current=restored,
            persist=resumed.append,
            drain_leadership=True,
        )
        time.sleep(2)
    after, uids_after = pids(kafka), pod_uids(core)
    assert out.result == "done", out.message
    assert out.deleted_pod is (crash == "before_delete")
    assert out.old_pod_uid == uids_before[f"kafka-{broker}"]
    assert out.new_pod_uid == uids_after[f"kafka-{broker}"]
    assert [c.step for c in resumed] == [
        "WaitingPodReady",
        "WaitingBrokerRegistered",
        "WaitingUrpZero",
        "RestoringLeadership",  # the orders its drain changed, kept in status, given back
        "WaitingForSafety",  # between brokers (two are left); Done only after the last
    ]
    assert saved.drained, "the original orders were persisted before the delete"
    assert out.current.drained is None
    assert orders(admin, unique_name) == orders_before
    assert out.current.brokers_done == [broker] and out.current.current_broker is None
    assert out.current.last_broker_finished_at is not None
    # That broker restarted exactly once; the others not at all.
    assert samples.pid_history[broker] == [before[broker], after[broker]]
    assert before[broker] != after[broker]
    for bid in before:
        if bid != broker:
            assert after[bid] == before[bid]
            assert uids_after[f"kafka-{bid}"] == uids_before[f"kafka-{bid}"]


def test_an_operator_killed_mid_drain_restores_the_orders_when_it_resumes(
    healthy_pods: StandIn,
    kafka: Testbed,
    bootstrap: str,
    k8s: K8s,
    admin: KafkaAdmin,
    unique_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed after the reorder went out and before the election: the live orders are the
    demoted ones, the originals only in status. The resumed roll drains from those, restarts
    the broker once, and puts every original order back."""
    create_topic(bootstrap, unique_name)
    orders_before = orders(admin, unique_name)
    snapshot = collect_snapshot(admin, "kafka", _utc)
    step = next_step(snapshot, "roll-mid-drain", [0, 1, 2], [])
    assert step is not None and step.safety.safe
    broker = step.next_broker
    before = pids(kafka)

    def killed(_partitions: object) -> object:
        raise _Crash  # the reorder was applied; the election never sent

    persisted: list[CurrentRemediation] = []
    with monkeypatch.context() as m:
        m.setattr(admin, "elect_preferred", killed)
        with pytest.raises(_Crash):
            restart_on_testbed(
                step,
                k8s,
                admin,
                current=None,
                persist=persisted.append,
                plan_id="p-mid-drain",
                drain_leadership=True,
            )
    saved = persisted[-1]
    assert saved.step == "DrainingLeadership" and saved.pod_uid
    kept = {(d.topic, d.partition): d.replicas for d in saved.drained or []}
    mine = {p: o for p, o in orders_before.items() if o[0] == broker}
    assert mine and all(kept[(unique_name, p)] == o for p, o in mine.items())
    # A reassignment is accepted by the controller and reaches the brokers' metadata a moment
    # later: the reorder went out when every broker's view shows it, not at the call's return.
    wait_for(
        lambda: all(orders(admin, unique_name)[p][-1] == broker for p in mine),
        timeout=30,
        what="the reorder that went out before the kill",
    )
    assert pids(kafka)[broker] == before[broker], "nothing restarted yet"
    restored_state = as_read_back(saved)
    resumed: list[CurrentRemediation] = []
    out = restart_on_testbed(
        None,
        k8s,
        admin,
        current=restored_state,
        persist=resumed.append,
        drain_leadership=True,
    )
    assert out.result == "done", out.message
    assert out.deleted_pod and pids(kafka)[broker] != before[broker]
    assert [c.step for c in resumed][:2] == ["DrainingLeadership", "DeletingPod"]
    assert out.drain is not None and out.drain.left == [] and out.drain.reordered == 0  # already demoted
    assert orders(admin, unique_name) == orders_before
    wait_for(
        # Its preferred leaderships back (others' leaders depend on earlier tests' restarts).
        lambda: all(leaders(admin, unique_name)[p] == broker for p in mine),
        timeout=60,
        what="its preferred leaderships back",
    )


# ---------------------------------------------------------------------------------- (d)
def test_unsafe_when_another_broker_is_down_and_nothing_is_deleted(
    healthy_pods: StandIn, kafka: Testbed, bootstrap: str, k8s: K8s, admin: KafkaAdmin, unique_name: str
) -> None:
    core: Any = client.CoreV1Api(k8s.api_client)
    create_topic(bootstrap, unique_name, 3)
    snapshot = collect_snapshot(admin, "kafka", _utc)
    step = next_step(snapshot, "roll-unsafe", [0, 1, 2], [])
    assert step is not None and step.safety.safe  # safe when planned...
    victim = next(b for b in (0, 1, 2) if b != step.next_broker)
    kafka.stop(victim)  # ...then another broker goes down before the executor acts
    wait_for(
        lambda: victim not in faults.registered_brokers(bootstrap), timeout=60, what=f"broker {victim} gone"
    )
    before, uids_before = pids(kafka), pod_uids(core)
    persisted: list[CurrentRemediation] = []
    out = restart_on_testbed(
        step,
        k8s,
        admin,
        current=None,
        persist=persisted.append,
        plan_id="p-unsafe",
    )
    assert out.result == "unsafe"
    assert out.safety is not None and not out.safety.safe
    rules = {b.rule for b in out.safety.blockers}
    assert "one_at_a_time" in rules and "under_replicated" in rules
    assert out.deleted_pod is False and out.old_pod_uid is None
    assert [c.step for c in persisted] == ["CheckingSafety", "WaitingForSafety"]
    assert out.current.current_broker is None  # back between brokers: the planner re-checks
    assert pod_uids(core) == uids_before
    assert pids(kafka) == before
