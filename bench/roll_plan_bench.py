"""Roll plan bench (issue 36): how long the planner takes to plan a batched roll of a big cluster.

    .venv/bin/python bench/roll_plan_bench.py [--brokers 100] [--partitions 100000] [--repeat 3]

A synthetic cluster (no Kafka): `--brokers` brokers in 3 racks (a, b, c), `--partitions`
partitions in topics of 50, RF 3 rack-aware (one replica per rack, each drawn at random in its
rack; seeded, so every run plans the same cluster), every ISR full, min.insync.replicas 2, and 3
dedicated KRaft controllers. For each (maxConcurrent, batchBy) it times what a roll's planner
computes for a roll of every node (batches: `kafka-health restart --max-concurrent`): the order (`order_brokers`), the batches
(`plan_batches`), the never-safe partitions (`never_safe_partitions`) and, last, the executor's
live check of the first broker batch (`check_batch`); then the drain moves of one broker and
their restore (`drain_plan`, `restore_plan`: drainLeadership). Best of `--repeat` runs, wall seconds, the
cluster's size on every line; `uptime` before and after (a loaded machine is slower). Issue 36's
bound: order + batches + never-safe within 2 s at 100 brokers and 100k partitions.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kafka_health.models.snapshot import Broker, ClusterSnapshot, Partition, Quorum, QuorumVoter, TopicConfig
from kafka_health.plan.leadership_drain import drain_plan, restore_plan
from kafka_health.plan.restart_safety import never_safe_partitions, order_brokers
from kafka_health.plan.roll_batches import BatchBy, check_batch, plan_batches

RACKS = ("a", "b", "c")
CONTROLLERS = (1000, 1001, 1002)
PARTITIONS_PER_TOPIC = 50
BOUND_S = 2.0
CONFIGS: list[tuple[int, BatchBy]] = [(1, "Rack"), (10, "Rack"), (34, "Rack"), (10, "None"), (34, "None")]


def cluster(brokers: int, partitions: int, seed: int = 36) -> ClusterSnapshot:
    """The synthetic cluster of the module docstring."""
    rng = random.Random(seed)
    by_rack = [[b for b in range(brokers) if b % len(RACKS) == r] for r in range(len(RACKS))]
    parts = []
    for i in range(partitions):
        shift = i % len(RACKS)
        replicas = [rng.choice(by_rack[(shift + k) % len(RACKS)]) for k in range(len(RACKS))]
        topic, number = divmod(i, PARTITIONS_PER_TOPIC)
        parts.append(
            Partition(
                topic=f"t{topic}", partition=number, leader=replicas[0], replicas=replicas, isr=replicas
            )
        )
    topics = sorted({p.topic for p in parts})
    return ClusterSnapshot(
        cluster="roll-plan-bench",
        taken_at=datetime(2026, 12, 1, tzinfo=UTC),
        brokers=[
            Broker(id=b, host="127.0.0.1", port=9092, rack=RACKS[b % len(RACKS)], alive=True)
            for b in range(brokers)
        ],
        quorum=Quorum(leader_id=CONTROLLERS[1], voters=[QuorumVoter(id=c, lag=0) for c in CONTROLLERS]),
        partitions=parts,
        topic_configs=[TopicConfig(topic=t, min_insync_replicas=2) for t in topics],
    )


def best(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    """The value of `fn` and its best wall time over `repeat` runs."""
    times = []
    value = None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return value, min(times)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"uptime before: {uptime()}")
    start = time.perf_counter()
    snap = cluster(args.brokers, args.partitions)
    nodes = [*CONTROLLERS, *range(args.brokers)]
    size = f"{args.brokers} brokers + {len(CONTROLLERS)} controllers, {len(RACKS)} racks, {args.partitions:,} partitions RF 3"
    print(f"cluster built in {time.perf_counter() - start:.2f} s: {size}, min.insync.replicas 2")
    head = (
        f"{'maxConcurrent':>13} {'batchBy':>7} {'batches':>7} {'largest':>7} {'order s':>8} "
        f"{'batches s':>9} {'never-safe s':>12} {'plan s':>7} {'≤ 2 s':>5} {'check 1st s':>11}  cluster"
    )
    print(head)
    for limit, batch_by in CONFIGS:
        _, order_s = best(lambda: order_brokers(snap, nodes), args.repeat)
        plan, batches_s = best(
            lambda limit=limit, batch_by=batch_by: plan_batches(  # type: ignore[misc]
                snap, nodes, max_concurrent=limit, batch_by=batch_by
            ),
            args.repeat,
        )
        _, never_s = best(lambda: never_safe_partitions(snap, nodes), args.repeat)
        first = next(b.nodes for b in plan.batches if b.nodes[0] < CONTROLLERS[0])
        check, check_s = best(lambda first=first: check_batch(snap, first), args.repeat)  # type: ignore[misc]
        assert check.safe, check.summary()
        total = order_s + batches_s + never_s
        largest = max(len(b.nodes) for b in plan.batches)
        print(
            f"{limit:>13} {batch_by:>7} {len(plan.batches):>7} {largest:>7} {order_s:>8.3f} {batches_s:>9.3f} "
            f"{never_s:>12.3f} {total:>7.3f} {'yes' if total <= BOUND_S else 'NO':>5} {check_s:>11.3f}  {size}"
        )
    # The drain moves (drainLeadership): planned per broker, right before its restart.
    drain, drain_s = best(lambda: drain_plan(snap, 0), args.repeat)
    drained = snap.model_copy(
        update={
            "partitions": [
                p.model_copy(update={"replicas": drain.reorder[(p.topic, p.partition)]})
                if (p.topic, p.partition) in drain.reorder
                else p
                for p in snap.partitions
            ]
        }
    )
    restore, restore_s = best(lambda: restore_plan(drained, 0, drain.original), args.repeat)
    print(
        f"drain moves of one broker: {drain_s:.3f} s ({len(drain.elect)} elections, {len(drain.reorder)} reorders); "
        f"their restore: {restore_s:.3f} s ({len(restore.reorder)} orders); {size}"
    )
    print(f"uptime after:  {uptime()}")


if __name__ == "__main__":
    main()
