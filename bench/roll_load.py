"""What producers feel during a roll: per-send latency under acks=all idempotent load, and an audit.

Used by `roll_bench.py --mode latency`: the same roll (executor loop, post-roll election on, as
users get it) is run once with `drainLeadership` off — leaderships move only by each broker's
controlled shutdown — and once with it on, each on its own fresh topic (12 partitions, RF 3,
min ISR 2), under the same steady load. Each send's latency is librdkafka's own measure for the
message (`Message.latency()`: from `produce()` to its delivery report, retries included), so a
send that waited for a new leader counts all of its wait. Afterwards the topic is read back
from the beginning: every acknowledged sequence number must be there exactly once (lost: acked
but absent; duplicated: read more than once).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 12
PAYLOAD = 1024


class LatencyLoad(threading.Thread):
    """A steady acks=all idempotent producer whose values are sequence numbers; every send's latency kept."""

    def __init__(self, bootstrap: str, topic: str, rate: int, extra: dict[str, str] | None = None) -> None:
        super().__init__(daemon=True)
        self.topic, self.rate = topic, rate
        self.stop = threading.Event()
        self.p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                **(extra or {}),
            }
        )
        self.sends: list[tuple[float, float, int]] = []  # (time of produce(), latency s, partition), acked
        self.acked: set[int] = set()
        self.failed = 0
        self._seq = 0

    def _cb(self, sent_at: float, seq: int) -> Callable[[Any, Any], None]:
        def done(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.add(seq)
                self.sends.append((sent_at, msg.latency() or 0.0, msg.partition()))
            else:
                self.failed += 1

        return done

    def run(self) -> None:
        tick = 0.02
        per_tick = max(1, int(self.rate * tick))
        while not self.stop.is_set():
            t0 = time.monotonic()
            for _ in range(per_tick):
                self._seq += 1
                value = str(self._seq).encode().ljust(PAYLOAD, b" ")
                try:
                    self.p.produce(self.topic, value=value, on_delivery=self._cb(time.monotonic(), self._seq))
                except BufferError:
                    self.failed += 1
            self.p.poll(0)
            self.stop.wait(max(0.0, tick - (time.monotonic() - t0)))
        self.p.flush(60)

    def between(self, t0: float, t1: float) -> list[float]:
        """Latencies (s) of the acknowledged sends produced between t0 and t1 (monotonic)."""
        return [lat for at, lat, _ in self.sends if t0 <= at <= t1]


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])
    fut[topic].result(60)
    time.sleep(2)  # every broker knows the topic before the load starts


def read_back(bootstrap: str, topic: str) -> Counter[int]:
    """How many times each sequence number is in the topic (read from the beginning to the end)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"audit-{topic}-{time.time()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    ends = {}
    for p in range(PARTITIONS):
        _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        ends[p] = high
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: Counter[int] = Counter()
    positions = dict.fromkeys(ends, 0)
    deadline = time.monotonic() + 300
    while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
        for msg in c.consume(1000, timeout=1.0):
            if msg.error() is None:
                seen[int(msg.value().decode().strip())] += 1
                positions[msg.partition()] = msg.offset() + 1
    c.close()
    return seen


@dataclass
class Felt:
    """What the producer felt during one roll."""

    label: str
    roll_seconds: float
    latencies: list[float] = field(default_factory=list)
    acked: int = 0
    failed: int = 0
    lost: int = 0
    duplicated: int = 0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    def row(self) -> str:
        p50 = statistics.median(self.latencies) * 1000 if self.latencies else float("nan")
        return (
            f"{self.label:<46}{self.roll_seconds:>7.1f}s{len(self.latencies):>9}{p50:>9.1f}"
            f"{self.pct(0.99):>9.1f}{self.pct(0.999):>9.1f}{max(self.latencies, default=0) * 1000:>9.1f}"
            f"{self.failed:>8}{self.lost:>6}{self.duplicated:>6}"
        )


HEADER = (
    f"{'roll':<46}{'time':>8}{'sends':>9}{'p50 ms':>9}{'p99 ms':>9}{'p99.9':>9}{'max ms':>9}"
    f"{'failed':>8}{'lost':>6}{'dup':>6}"
)


def felt_during(
    bootstrap: str, topic: str, rate: int, label: str, roll: Callable[[], None], extra: dict[str, str] | None
) -> Felt:
    """Run `roll()` under a fresh load on `topic` (producer settings `extra` on top of the bench's);
    the latencies of the sends made during it, audited."""
    create_topic(bootstrap, topic)
    load = LatencyLoad(bootstrap, topic, rate, extra)
    load.start()
    time.sleep(5)  # the producer connected and steady before the roll
    t0 = time.monotonic()
    try:
        roll()
    finally:
        t1 = time.monotonic()
        time.sleep(3)
        load.stop.set()
        load.join(90)
    seen = read_back(bootstrap, topic)
    return Felt(
        label=label,
        roll_seconds=t1 - t0,
        latencies=load.between(t0, t1),
        acked=len(load.acked),
        failed=load.failed,
        lost=sum(1 for s in load.acked if seen[s] == 0),
        duplicated=sum(1 for n in seen.values() if n > 1),
    )
