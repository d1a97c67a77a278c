"""Rolling-restart bench: a full roll against the sum of its brokers' individual restarts.

    .venv/bin/kafka-health testbed up --k8s --state-dir /tmp/tb-bench --base-port 46092
    .venv/bin/python bench/roll_bench.py --state-dir /tmp/tb-bench
    .venv/bin/python bench/roll_bench.py --state-dir /tmp/tb-bench --data-mb 100 --rate 1000 --pause 0s

Needs the testbed with its Kubernetes control plane and broker-pod stand-in (`testbed up --k8s`).
The bench fills a topic (RF 3, min ISR 2) with --data-mb of data and keeps a producer writing
--rate messages/s of 1 KiB (so every restarted broker has something to catch up), then:

1. individually: each broker alone, through the executor (`restart_broker`), timed from the
   pod delete to URP 0 (phases: pod Ready, broker registered, URP 0); the cluster settles and
   leaders are put back between brokers (not timed);
2. the full roll (`run_roll`): from its start to the last broker's URP 0, with the safety
   re-check before each broker and --pause between brokers; the post-roll preferred election
   is timed on its own.

Both are printed side by side; "overhead" = roll - sum of individual restarts (safety checks,
pauses, ordering).
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.k8s.client import K8s, load_config
from kafka_health.models.policy import BrokerPods, CurrentRemediation, RestartTimeouts, parse_duration
from kafka_health.remediate.rolling_restart import Step, next_step, restart_broker, run_roll
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.podstandin import NAMESPACE, STATEFULSET, StandIn

TOPIC = "roll-bench"
PODS = BrokerPods(namespace=NAMESPACE, stateful_set=STATEFULSET)
TIMEOUTS = RestartTimeouts(pod_ready="5m", broker_registered="5m", urp_zero="10m")


def _now() -> datetime:
    return datetime.now(UTC)


class Phases:
    """`persist` that stamps each step with time.monotonic()."""

    def __init__(self) -> None:
        self.marks: list[tuple[int | None, str, float]] = []

    def __call__(self, c: CurrentRemediation) -> None:
        broker = c.current_broker
        if broker is None and c.step == Step.DONE and c.brokers_done:
            broker = c.brokers_done[-1]
        self.marks.append((broker, c.step, time.monotonic()))

    def of(self, broker: int) -> dict[str, float]:
        return {step: t for b, step, t in self.marks if b == broker}


def fill(bootstrap: str, partitions: int, data_mb: int) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap})
    if TOPIC not in a.list_topics(timeout=10).topics:
        a.create_topics([NewTopic(TOPIC, partitions, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(
            60
        )
        p = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "compression.type": "none"}
        )
        payload = b"x" * 1024
        for i in range(data_mb * 1024):
            while True:
                try:
                    p.produce(TOPIC, key=str(i).encode(), value=payload)
                    break
                except BufferError:
                    p.poll(0.1)
            if i % 1000 == 0:
                p.poll(0)
        p.flush(120)


class Load(threading.Thread):
    def __init__(self, bootstrap: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.rate = rate
        self.stop = threading.Event()
        self.p = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 10}
        )
        self.acked = 0
        self.failed = 0

    def _cb(self, err: Any, _msg: Any) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed += 1

    def run(self) -> None:
        payload = b"y" * 1024
        tick = 0.05
        per_tick = max(1, int(self.rate * tick))
        while not self.stop.is_set():
            t0 = time.monotonic()
            for _ in range(per_tick):
                with contextlib.suppress(BufferError):
                    self.p.produce(TOPIC, value=payload, on_delivery=self._cb)
            self.p.poll(0)
            self.stop.wait(max(0.0, tick - (time.monotonic() - t0)))
        self.p.flush(60)


def settle(testbed: Testbed, standin: StandIn) -> None:
    faults.heal(testbed)
    standin.wait_pods_ready(timeout=300)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state-dir", type=Path, required=True, help="State dir of `testbed up --k8s`.")
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--data-mb", type=int, default=50, help="Data written to the bench topic first.")
    ap.add_argument("--rate", type=int, default=500, help="Messages/s (1 KiB) written during the bench.")
    ap.add_argument("--pause", default="0s", help="pauseBetweenBrokers for the roll (Go duration).")
    args = ap.parse_args()

    testbed = Testbed(args.state_dir)
    state = testbed.require()
    standin = StandIn(testbed.state_dir)
    if not standin.running():
        raise SystemExit(
            f"no broker-pod stand-in for {args.state_dir}: run `kafka-health testbed up --k8s` first"
        )
    bootstrap = state.bootstrap_servers
    k8s = K8s(load_config(str(standin.kubeconfig)))
    settle(testbed, standin)
    print(
        f"cluster {bootstrap}: {len(state.brokers)} brokers; filling {TOPIC} with {args.data_mb} MiB …",
        flush=True,
    )
    fill(bootstrap, args.partitions, args.data_mb)
    load = Load(bootstrap, args.rate)
    load.start()
    individual: dict[int, dict[str, float]] = {}
    try:
        with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
            brokers = sorted(b.id for b in state.brokers)
            # 1. Each broker alone.
            for broker in brokers:
                settle(testbed, standin)
                snapshot = collect_snapshot(admin, "bench", _now)
                step = next_step(snapshot, f"bench-{broker}", [broker], [])
                assert step is not None
                phases = Phases()
                out = restart_broker(
                    step,
                    k8s=k8s,
                    admin=admin,
                    pods_spec=PODS,
                    namespace=NAMESPACE,
                    timeouts=TIMEOUTS,
                    current=None,
                    persist=phases,
                    plan_id=f"bench-{broker}",
                )
                if not out.ok:
                    raise SystemExit(f"broker {broker} alone: {out.result}: {out.message}")
                individual[broker] = _phases(phases.of(broker))
                print(f"  broker {broker} alone: {individual[broker]['total']:.1f}s", flush=True)
            # 2. The full roll.
            settle(testbed, standin)
            phases = Phases()
            t0 = time.monotonic()
            report = run_roll(
                "bench-roll",
                None,
                k8s=k8s,
                admin=admin,
                pods_spec=PODS,
                namespace=NAMESPACE,
                timeouts=TIMEOUTS,
                pause=parse_duration(args.pause),
                post_roll_election=False,
                persist=phases,
            )
            t_roll = time.monotonic() - t0
            if not report.ok:
                raise SystemExit(f"roll: {report.result.message}")
            e0 = time.monotonic()
            from kafka_health.remediate.post_roll_election import elect_preferred_for

            election = elect_preferred_for(admin, brokers)
            t_elect = time.monotonic() - e0
            in_roll = {b: _phases(phases.of(b)) for b in brokers}
            order = [o.broker for o in report.outcomes]
    finally:
        load.stop.set()
        load.join(90)

    total_alone = sum(v["total"] for v in individual.values())
    print()
    print(
        f"Rolling restart bench — {len(brokers)} brokers, {args.partitions} partitions RF3/minISR2, "
        f"{args.data_mb} MiB preloaded, {args.rate} msg/s of 1 KiB during the bench, pause {args.pause}"
    )
    print(
        f"{'broker':<8}{'alone: ready / registered / URP 0 = total':<46}{'in the roll: ready / registered / URP 0 = total'}"
    )
    for b in order:
        a, r = individual[b], in_roll[b]
        print(
            f"{b:<8}{a['ready']:>6.1f} / {a['registered']:>5.1f} / {a['urp0']:>5.1f} = {a['total']:>6.1f}s"
            f"{'':<11}{r['ready']:>6.1f} / {r['registered']:>5.1f} / {r['urp0']:>5.1f} = {r['total']:>6.1f}s"
        )
    print(f"sum of individual restarts (pod delete → URP 0): {total_alone:7.1f}s")
    print(f"full roll (start → last broker's URP 0):          {t_roll:7.1f}s")
    print(f"overhead (safety checks, pauses, ordering):       {t_roll - total_alone:7.1f}s")
    print(f"post-roll preferred election: {t_elect:.1f}s ({election.summary()})")
    print(f"producer during the bench: {load.acked} acked, {load.failed} failed")


def _phases(marks: dict[str, float]) -> dict[str, float]:
    """Seconds from the pod delete (DeletingPod) to each wait's end."""
    t0 = marks[Step.DELETING_POD]
    ready = marks[Step.WAITING_BROKER_REGISTERED] - t0
    registered = marks[Step.WAITING_URP_ZERO] - marks[Step.WAITING_BROKER_REGISTERED]
    urp0 = marks[Step.DONE] - marks[Step.WAITING_URP_ZERO]
    return {"ready": ready, "registered": registered, "urp0": urp0, "total": marks[Step.DONE] - t0}


if __name__ == "__main__":
    main()
