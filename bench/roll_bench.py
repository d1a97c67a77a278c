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
2. the full roll (`run_roll`, --mode executor): from its start to the last broker's URP 0,
   with the safety re-check before each broker and --pause between brokers; the post-roll
   preferred election is timed on its own;
3. the roll through the operator (--mode operator), as users get it: a `kafka-health operator`
   process (diagnosing the cluster every 10 s beside the roll) serves namespace bench-roll; the
   bench applies a KafkaHealthPolicy, waits until it is Ready, then adds a new rolling restart
   request (as a GitOps commit would) and times it from that apply to
   `status.rollingRestarts[id].state: Succeeded` (pickup = apply → the roll's startedAt). The post-roll election is off there too, so both rolls do the same work.

--mode batches rolls the brokers one at a time, then `--max-concurrent` at a time by rack, each
under its own load (a testbed with racks: `testbed up --k8s --controllers 3 --brokers 6
--racks 3`), and prints both rolls' time, what producers felt and what was lost.

--mode both (the default) runs 2 and 3 in one run. --mode latency runs instead what producers
feel (`roll_load.py`): the same roll with drainLeadership off, then on, each under acks=all
idempotent load on its own topic, first with the client's defaults, then with its retry backoff
capped (retry.backoff.max.ms 100): per-send latency p50/p99/p99.9/max, failed, lost, duplicated.

    .venv/bin/python bench/roll_bench.py --state-dir /tmp/tb-bench --mode latency --rate 500 Everything is printed side by side with
the machine's load (`uptime`); "ratio" = roll / sum of individual restarts (1.0: no overhead).

    .venv/bin/python bench/roll_bench.py --state-dir /tmp/tb-bench --mode operator
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
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
from kafka_health.testbed.controlplane import find_binaries
from kafka_health.testbed.pod_layout import NAMESPACE, STATEFULSET
from kafka_health.testbed.standin import StandIn

REPO = Path(__file__).resolve().parents[1]
POLICY_NS = "bench-roll"

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
        broker, step = c.current_broker, c.step
        if broker is None and step in (Step.DONE, Step.WAITING_FOR_SAFETY) and c.brokers_done:
            # A broker finished: Done after the last one, WaitingForSafety while others are left
            # (stamped once: a later WaitingForSafety is the wait for the next broker).
            broker, step = c.brokers_done[-1], Step.DONE
            if any(b == broker and s == Step.DONE for b, s, _ in self.marks):
                return
        self.marks.append((broker, step, time.monotonic()))

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


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    out = subprocess.run(
        [str(find_binaries() / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if out.returncode != 0 and "AlreadyExists" not in out.stderr:
        raise SystemExit(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


class OperatorRun:
    """A `kafka-health operator` process serving POLICY_NS against the testbed's control plane."""

    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        self.kubeconfig, self.workdir = kubeconfig, workdir
        self.health = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> OperatorRun:
        for crd in sorted((REPO / "crds").glob("*.yaml")):
            _kubectl(self.kubeconfig, "apply", "--server-side", "-f", str(crd))
        _kubectl(
            self.kubeconfig, "wait", "--for=condition=Established", "crd/kafkahealthpolicies.kafkahealth.io"
        )
        _kubectl(self.kubeconfig, "create", "namespace", POLICY_NS)
        # A CRD just created answers 429 ("storage is (re)initializing") for a while; an operator
        # started meanwhile backs off its watch. Start it once the resource can be listed.
        deadline = time.monotonic() + 120
        while subprocess.run(
            [
                str(find_binaries() / "kubectl"),
                "--kubeconfig",
                str(self.kubeconfig),
                "get",
                "khp",
                "-n",
                POLICY_NS,
            ],
            capture_output=True,
            check=False,
        ).returncode:
            if time.monotonic() > deadline:
                raise SystemExit("kafkahealthpolicies cannot be listed 120 s after the CRD was applied")
            time.sleep(1)
        args = [
            sys.executable,
            "-m",
            "kafka_health.cli.main",
            "operator",
            "--namespace",
            POLICY_NS,
            "--standalone",
        ]
        args += ["--metrics-port", str(_free_port()), "--health-port", str(self.health)]
        args += ["--history-dir", str(self.workdir / "history"), "--log-format", "json"]
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KAFKA_HEALTH_WORK_DIR": str(self.workdir)}
        log = open(self.workdir / "operator.log", "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(
                    f"the operator exited with {self.proc.returncode}: see {self.workdir}/operator.log"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as r,
            ):
                if r.status == 200:
                    return self
            time.sleep(1)
        raise SystemExit("the operator did not become ready in 300 s")

    def __exit__(self, *exc: object) -> None:
        _kubectl(self.kubeconfig, "delete", "khp", "--all", "-n", POLICY_NS, "--wait=true", "--timeout=100s")
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(60)

    def apply(self, body: dict[str, Any]) -> None:
        _kubectl(
            self.kubeconfig,
            "apply",
            "--server-side",
            "--field-manager=bench",
            "-f",
            "-",
            stdin=json.dumps(body),
        )

    def status(self, name: str) -> dict[str, Any]:
        out = _kubectl(self.kubeconfig, "get", "khp", "-n", POLICY_NS, name, "-o", "json")
        return dict(json.loads(out).get("status") or {})

    def roll(self, bootstrap: str, request: str, pause: str, diagnosis_interval: str) -> dict[str, float]:
        """Apply a policy with a new roll request; seconds from the apply to Succeeded, and pickup."""
        body = {
            "apiVersion": "kafkahealth.io/v1alpha1",
            "kind": "KafkaHealthPolicy",
            "metadata": {"name": "bench", "namespace": POLICY_NS},
            "spec": {
                "cluster": {
                    "bootstrapServers": bootstrap.split(","),
                    "brokerPods": {"namespace": NAMESPACE, "statefulSet": STATEFULSET},
                },
                "diagnostics": {"interval": "10s"},
                "remediation": {
                    "mode": "Enforce",
                    "preferredLeaderElection": {"enabled": False},
                    "rollingRestart": {
                        "requireMaintenanceWindow": False,
                        "pauseBetweenBrokers": pause,
                        "diagnosisInterval": diagnosis_interval,
                        "postRollPreferredElection": False,
                        "neverSafePartitions": "Proceed",
                        "timeouts": {"podReady": "5m", "brokerRegistered": "5m", "urpZero": "10m"},
                        "requests": [{"id": request}],
                    },
                },
            },
        }
        # As users do: the policy exists (diagnosed, Ready) before a commit adds the request id.
        rolling = body["spec"]["remediation"]["rollingRestart"]
        requests = rolling.pop("requests")
        self.apply(body)
        deadline = time.monotonic() + 600
        while not any(
            c["type"] == "Ready" and c["status"] == "True" for c in self.status("bench").get("conditions", [])
        ):
            if time.monotonic() > deadline:
                raise SystemExit(f"the policy never became Ready: {json.dumps(self.status('bench'))[:2000]}")
            time.sleep(1)
        rolling["requests"] = requests
        applied = datetime.now(UTC)
        t0 = time.monotonic()
        self.apply(body)
        self.steps: list[tuple[float, int | None, str]] = []  # (seconds since apply, broker, step)
        self.deleted: dict[int, datetime] = {}
        self.healthy: dict[int, datetime] = {}
        while True:
            status = self.status("bench")
            current = status.get("currentRemediation") or {}
            mark = (
                current.get("currentBroker"),
                str(current.get("step") or current.get("waitingReason") or "-"),
            )
            if not self.steps or self.steps[-1][1:] != mark:
                self.steps.append((time.monotonic() - t0, *mark))
            # Exact times from status: the pod delete (WaitingPodReady starts right after it) and
            # the broker healthy again (lastBrokerFinishedAt, with the broker last in brokersDone).
            if current.get("step") == "WaitingPodReady" and current.get("stepStartedAt"):
                self.deleted.setdefault(current["currentBroker"], _ts(current["stepStartedAt"]))
            if current.get("lastBrokerFinishedAt") and current.get("brokersDone"):
                self.healthy.setdefault(current["brokersDone"][-1], _ts(current["lastBrokerFinishedAt"]))
            result = next((r for r in status.get("rollingRestarts") or [] if r["id"] == request), {})
            if result.get("state") in ("Succeeded", "Failed", "Blocked"):
                break
            if time.monotonic() - t0 > 1200:
                raise SystemExit(f"the roll through the operator did not finish: {json.dumps(status)[:2000]}")
            time.sleep(0.5)
        total = time.monotonic() - t0
        if result["state"] != "Succeeded":
            raise SystemExit(
                f"the roll through the operator ended {result['state']}: {result.get('message')}"
            )
        started, finished = _ts(result["startedAt"]), _ts(result["finishedAt"])
        for broker in result.get("brokersDone") or []:
            self.healthy.setdefault(broker, finished)  # the last broker: the roll ends as it is healthy
        return {
            "total": total,
            "pickup": (started - applied).total_seconds(),
            "roll": (finished - started).total_seconds(),
        }


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
    ap.add_argument(
        "--mode",
        choices=("executor", "operator", "both", "latency", "batches"),
        default="both",
        help="Roll with the executor loop, through the operator, or both in one run.",
    )
    ap.add_argument("--max-concurrent", type=int, default=2, help="--mode batches: the batch size beside 1.")
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
    if args.mode == "latency":
        latency_bench(testbed, standin, k8s, bootstrap, args.rate, args.pause)
        return
    if args.mode == "batches":
        batch_bench(testbed, standin, k8s, bootstrap, args.rate, args.pause, args.max_concurrent)
        return
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
            # 2. The full roll, with the executor loop.
            t_roll = t_elect = None
            in_roll: dict[int, dict[str, float]] = {}
            order = brokers
            election_summary = ""
            if args.mode in ("executor", "both"):
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

                election_summary = elect_preferred_for(admin, brokers).summary()
                t_elect = time.monotonic() - e0
                in_roll = {b: _phases(phases.of(b)) for b in brokers}
                order = [o.broker for o in report.outcomes]
            # 3. The roll through the operator.
            # Twice: diagnosing every 10 s through the roll (as before diagnosisInterval), then
            # with the default diagnosisInterval (2m: at most one full diagnosis during the roll).
            through_all: dict[str, dict[str, float]] = {}
            through: dict[str, float] | None = None
            op_steps: list[tuple[float, int | None, str]] = []
            op_deleted: dict[int, datetime] = {}
            op_healthy: dict[int, datetime] = {}
            if args.mode in ("operator", "both"):
                for every in ("10s", "2m"):
                    settle(testbed, standin)
                    with (
                        tempfile.TemporaryDirectory(prefix="roll-bench-op-") as tmp,
                        OperatorRun(standin.kubeconfig, Path(tmp)) as op,
                    ):
                        print(
                            f"  operator ready; requesting the roll (diagnosisInterval {every}) …", flush=True
                        )
                        through = op.roll(bootstrap, f"bench-{int(time.time())}", args.pause, every)
                        op_steps, op_deleted, op_healthy = op.steps, op.deleted, op.healthy
                        through_all[every] = {
                            **through,
                            "restarts": sum(
                                (op_healthy[b] - op_deleted[b]).total_seconds()
                                for b in op_deleted
                                if b in op_healthy
                            ),
                        }
    finally:
        load.stop.set()
        load.join(90)

    total_alone = sum(v["total"] for v in individual.values())
    print()
    print(
        f"Rolling restart bench — {len(brokers)} brokers, {args.partitions} partitions RF3/minISR2, "
        f"{args.data_mb} MiB preloaded, {args.rate} msg/s of 1 KiB during the bench, pause {args.pause}"
    )
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    if in_roll:
        print(
            f"{'broker':<8}{'alone: ready / registered / URP 0 = total':<46}"
            "in the roll (executor): ready / registered / URP 0 = total"
        )
        for b in order:
            a, r = individual[b], in_roll[b]
            print(
                f"{b:<8}{a['ready']:>6.1f} / {a['registered']:>5.1f} / {a['urp0']:>5.1f} = {a['total']:>6.1f}s"
                f"{'':<11}{r['ready']:>6.1f} / {r['registered']:>5.1f} / {r['urp0']:>5.1f} = {r['total']:>6.1f}s"
            )
    else:
        for b in brokers:
            a = individual[b]
            print(
                f"{b:<8}alone: {a['ready']:.1f} / {a['registered']:.1f} / {a['urp0']:.1f} = {a['total']:.1f}s"
            )
    print(f"{'sum of individual restarts (pod delete → URP 0):':<58}{total_alone:8.1f}s")
    if t_roll is not None:
        print(
            f"{'roll, executor loop (start → last URP 0):':<58}{t_roll:8.1f}s  ratio {t_roll / total_alone:.2f}"
        )
        print(f"  post-roll preferred election, timed apart: {t_elect:.1f}s ({election_summary})")
    for every, run in through_all.items():
        pauses = parse_duration(args.pause).total_seconds() * (len(brokers) - 1)
        print(
            f"{f'roll through the operator, diagnosisInterval {every}:':<58}{run['total']:8.1f}s  "
            f"ratio to the restarts alone + pauses {run['total'] / (total_alone + pauses):.2f}; "
            f"its own restarts {run['restarts']:.1f}s"
        )
    if through is not None:
        print("  the last of them in detail:")
        print(
            f"{'roll, through the operator (apply → Succeeded):':<58}{through['total']:8.1f}s  "
            f"ratio {through['total'] / total_alone:.2f}"
        )
        print(
            f"  of which pickup (apply → roll started) {through['pickup']:.1f}s, "
            f"roll (started → finished, from status) {through['roll']:.1f}s"
        )
        in_op = {b: (op_healthy[b] - op_deleted[b]).total_seconds() for b in op_deleted if b in op_healthy}
        if in_op:
            each = ", ".join(f"{b}: {t:.1f}s" for b, t in in_op.items())
            print(
                f"  per broker in this roll (pod delete → healthy, from status): {each}; "
                f"sum {sum(in_op.values()):.1f}s; ratio apply → Succeeded / sum {through['total'] / sum(in_op.values()):.2f}"
            )
        print("  steps seen in status (s after the apply: broker step):")
        print("    " + "; ".join(f"{t:.1f}: {b if b is not None else '-'} {step}" for t, b, step in op_steps))
    print(f"producer during the bench: {load.acked} acked, {load.failed} failed")


def rolls_under_load(
    testbed: Testbed,
    standin: StandIn,
    k8s: K8s,
    bootstrap: str,
    rate: int,
    pause: str,
    runs: list[tuple[str, dict[str, Any], dict[str, str] | None]],
) -> list[Any]:
    """Each run (label, run_roll's extra arguments, producer settings): the whole roll of the
    brokers under its own load on its own topic (`roll_load.felt_during`); what each felt."""
    import roll_load

    rows: list[roll_load.Felt] = []
    stamp = int(time.time())
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as admin:
        for label, options, extra in runs:
            settle(testbed, standin)
            outcome: list[Any] = []

            def roll(options: dict[str, Any] = options, outcome: list[Any] = outcome) -> None:
                outcome.append(
                    run_roll(
                        f"bench-{stamp}-{len(rows)}",
                        None,
                        k8s=k8s,
                        admin=admin,
                        pods_spec=PODS,
                        namespace=NAMESPACE,
                        timeouts=TIMEOUTS,
                        pause=parse_duration(pause),
                        **options,
                    )
                )

            felt = roll_load.felt_during(
                bootstrap, f"roll-bench-{stamp}-{len(rows)}", rate, label, roll, extra
            )
            if not outcome or not outcome[0].ok:
                raise SystemExit(
                    f"{label}: the roll did not succeed: {outcome[0].result.message if outcome else '-'}"
                )
            rows.append(felt)
            print(
                f"  {label}: {felt.roll_seconds:.1f}s, max {max(felt.latencies, default=0) * 1000:.0f} ms",
                flush=True,
            )
    return rows


def _table(title: str, rows: list[Any]) -> None:
    import roll_load

    print()
    print(title)
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print(roll_load.HEADER)
    for felt in rows:
        print(felt.row())


def latency_bench(
    testbed: Testbed, standin: StandIn, k8s: K8s, bootstrap: str, rate: int, pause: str
) -> None:
    """The same roll, drainLeadership off then on, each under its own load, with the client's
    defaults and then with its retry backoff capped at 100 ms: what producers felt."""
    import roll_load

    tuned = {"retry.backoff.ms": "20", "retry.backoff.max.ms": "100"}
    runs = [
        (
            f"drain {'on ' if drain else 'off'}, client {'retry.backoff.max.ms 100' if extra else 'defaults'}",
            {"post_roll_election": True, "drain_leadership": drain},
            extra,
        )
        for extra in (None, tuned)
        for drain in (False, True)
    ]
    rows = rolls_under_load(testbed, standin, k8s, bootstrap, rate, pause, runs)
    _table(
        f"What producers feel during a roll — {len(testbed.require().brokers)} brokers, one roll each way, "
        f"{rate} msg/s of 1 KiB, acks=all, idempotent, linger.ms 5, {roll_load.PARTITIONS} partitions "
        f"RF3/minISR2, pause {pause}, post-roll election on",
        rows,
    )
    print(
        "(latency of each send made during the roll, produce() → delivery report, as librdkafka measures it)"
    )


def batch_bench(
    testbed: Testbed, standin: StandIn, k8s: K8s, bootstrap: str, rate: int, pause: str, batch: int
) -> None:
    """The same brokers rolled one at a time, then in batches by rack, each under its own load."""
    runs = [
        (
            "one broker at a time" if size == 1 else f"maxConcurrent {size}, batchBy Rack",
            {"post_roll_election": False, "max_concurrent": size, "batch_by": "Rack"},
            None,
        )
        for size in (1, batch)
    ]
    rows = rolls_under_load(testbed, standin, k8s, bootstrap, rate, pause, runs)
    state = testbed.require()
    racks = len({b.rack for b in state.brokers})
    _table(
        f"Batched rolls — {len(state.brokers)} brokers in {racks} rack(s), {len(state.controllers)} dedicated "
        f"controllers (not rolled), {rate} msg/s of 1 KiB, acks=all, idempotent, pause {pause}, no election",
        rows,
    )
    print(f"ratio batched / one at a time: {rows[1].roll_seconds / rows[0].roll_seconds:.2f}")


def _phases(marks: dict[str, float]) -> dict[str, float]:
    """Seconds from the pod delete (DeletingPod) to each wait's end."""
    t0 = marks[Step.DELETING_POD]
    ready = marks[Step.WAITING_BROKER_REGISTERED] - t0
    registered = marks[Step.WAITING_URP_ZERO] - marks[Step.WAITING_BROKER_REGISTERED]
    urp0 = marks[Step.DONE] - marks[Step.WAITING_URP_ZERO]
    return {"ready": ready, "registered": registered, "urp0": urp0, "total": marks[Step.DONE] - t0}


if __name__ == "__main__":
    main()
