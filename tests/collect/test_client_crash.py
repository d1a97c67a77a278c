"""A native crash in a Kafka client library never takes the operator down (issue 14).

librdkafka dies with SIGSEGV in `rd_kafka_cgrp_op(rkcg=NULL)` when an OffsetFetch sent by
`list_consumer_group_offsets` is answered NOT_COORDINATOR, i.e. while the group's coordinator
broker restarts (confluentinc/librdkafka#5040). The first test keeps that crash reproduced with
the raw library in a child process, so an upgrade that fixes it is noticed; the others prove
that `KafkaAdmin` (whose client calls run in the client host process) survives it on the real
testbed and still reads what it was reading.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from kafka_health._kits.waiting import wait_for
from kafka_health.collect.client_host import SUPERVISOR, ClientHost, exit_reason
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin, Timeouts
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.report import metrics
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed

PARTITIONS = 3
COMMITTED = {0: 4, 1: 5, 2: 6}

# The library alone, as the report had it: a loop of ListConsumerGroupOffsets for a group with
# committed offsets. It prints once the first answer came back, then loops until killed.
REPRO = """
import resource, sys
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient

resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
bootstrap, group = sys.argv[1], sys.argv[2]
admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
first = True
while True:
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=10)
    try:
        futures[group].result(timeout=12)
    except Exception:
        pass
    if first:
        print("looping", flush=True)
        first = False
"""


def now() -> datetime:
    return datetime.now(UTC)


def java_hash(text: str) -> int:
    """Java's String.hashCode (Kafka picks a group's __consumer_offsets partition with it)."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator(admin: KafkaAdmin, group: str) -> int:
    """The group's coordinator: the leader of __consumer_offsets partition abs(hash) % count
    (read with a Metadata request through the client host, never a coordinator-routed call)."""
    offsets = {p.partition: p.leader for p in admin.metadata().partitions if p.topic == "__consumer_offsets"}
    leader = offsets[abs(java_hash(group)) % len(offsets)]
    assert leader is not None, f"__consumer_offsets partition of {group} has no leader"
    return leader


def group_with_offsets(admin: KafkaAdmin, bootstrap: str, name: str) -> None:
    """Topic `name` with 10 records per partition, and group `name` (Empty) committed at COMMITTED."""
    faults.create_topic(bootstrap, name, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for p in range(PARTITIONS):
        for i in range(10):
            producer.produce(name, value=f"m{i}".encode(), partition=p)
    assert producer.flush(30) == 0
    # On a fresh cluster the first group call creates __consumer_offsets: its coordinators load
    # for a while (COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS), so commit until
    # every partition is accepted.
    errors: dict[Any, str] = {}

    def commit() -> bool:
        done = admin.alter_group_offsets(name, {(name, p): o for p, o in COMMITTED.items()})
        errors.clear()
        errors.update(done.errors)
        return not done.errors and len(done.values) == PARTITIONS

    try:
        wait_for(commit, timeout=90, interval=1.0, what=f"group {name} committed")
    except TimeoutError:
        raise AssertionError(f"group {name} could not be committed: {errors}") from None


def committed(snap: ClusterSnapshot, group: str) -> dict[int, int | None] | None:
    g = next((g for g in snap.groups if g.group_id == group), None)
    return None if g is None else {o.partition: o.committed_offset for o in g.offsets}


def restarts_counted() -> float:
    return sum(
        s.value
        for m in metrics.CLIENT_PROCESS_RESTARTS.collect()
        for s in m.samples
        if s.name.endswith("_total")
    )


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdmin]:
    with KafkaAdmin({"bootstrap.servers": bootstrap}) as a:
        yield a


@pytest.mark.kafka
def test_librdkafka_still_crashes_when_the_group_coordinator_restarts(
    kafka: Testbed, bootstrap: str, unique_name: str, admin: KafkaAdmin
) -> None:
    """The library bug itself, in a child process (librdkafka#5040). If this fails because the
    child survived, the installed librdkafka may have fixed it: see docs/kafka-client.md."""
    group_with_offsets(admin, bootstrap, unique_name)
    broker = coordinator(admin, unique_name)
    child = subprocess.Popen(
        [sys.executable, "-c", REPRO, bootstrap, unique_name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "looping"
        kafka.stop(broker)  # controlled shutdown: the coordinator answers NOT_COORDINATOR, then goes
        try:
            code = child.wait(20)
        except subprocess.TimeoutExpired:  # not on the way down: try the way back (another move)
            faults.heal(kafka)
            try:
                code = child.wait(20)
            except subprocess.TimeoutExpired:
                code = None
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
    import confluent_kafka

    assert code is not None and code in (-signal.SIGSEGV, -signal.SIGABRT), (
        f"a ListConsumerGroupOffsets loop survived its group coordinator's restart (exit {code}) with "
        f"confluent-kafka {confluent_kafka.version()[0]} / librdkafka {confluent_kafka.libversion()[0]}: "
        "librdkafka may have fixed #5040 (and #5397); the client host isolation could be revisited "
        "(docs/kafka-client.md)"
    )


@pytest.mark.kafka
def test_collection_survives_the_group_coordinator_restarting(
    kafka: Testbed, bootstrap: str, unique_name: str, admin: KafkaAdmin, caplog: pytest.LogCaptureFixture
) -> None:
    """collect_snapshot in a loop (in this process) while the group's coordinator is bounced: the
    client host dies and is replaced, and every cycle reads the group or names it missing (or,
    rarely, Kafka's ListGroups leaves it out without an error while its coordinator moves)."""
    started = time.monotonic()
    group_with_offsets(admin, bootstrap, unique_name)
    expected = dict(COMMITTED)
    restarts_before, counted_before = admin.restarts, restarts_counted()

    cycles: list[tuple[str, str]] = []  # (full | partial | unlisted | wrong, detail)
    stop = threading.Event()

    def collect() -> None:
        while not stop.is_set():
            try:
                snap = collect_snapshot(admin, "crash", now)
            except BaseException as exc:  # collect_snapshot must never raise
                cycles.append(("wrong", f"raised {exc!r}"))
                continue
            missing = {m.part for m in snap.missing}
            read = committed(snap, unique_name)
            if read == expected:
                cycles.append(("full", ""))
            elif not snap.reachable or {"groups", f"group:{unique_name}"} & missing:
                cycles.append(("partial", ", ".join(sorted(missing))))
            elif read is None:
                # Kafka's own gap, not a client crash: while a __consumer_offsets shard moves,
                # the brokers answer ListGroups without its groups and without an error
                # (GroupCoordinatorService.listGroups maps NOT_COORDINATOR to an empty list).
                cycles.append(("unlisted", ", ".join(sorted(missing))))
            else:
                cycles.append(("wrong", f"read {read}, missing {sorted(missing)}"))

    reader = threading.Thread(target=collect, name="collect-loop")
    reader.start()
    bounces = []
    try:
        # Each bounce moves the coordinator twice: away on the stop, back on heal's preferred
        # leader election. Two bounces at least, more (up to 4) until a crash has been seen.
        while (
            len(bounces) < 2 or len(cycles) < 50 or (admin.restarts == restarts_before and len(bounces) < 4)
        ):
            time.sleep(1.0)
            broker = coordinator(admin, unique_name)
            kafka.stop(broker)
            kafka.start(broker)
            faults.heal(kafka)
            bounces.append(broker)
    finally:
        stop.set()
        reader.join(120)

    wrong = [detail for kind, detail in cycles if kind == "wrong"]
    partial = [detail for kind, detail in cycles if kind == "partial"]
    unlisted = [detail for kind, detail in cycles if kind == "unlisted"]
    assert not wrong, wrong[:5]
    assert len(cycles) >= 50
    assert len(unlisted) <= len(cycles) // 10, (
        f"{len(unlisted)} of {len(cycles)} cycles did not list the group"
    )
    deaths = admin.restarts - restarts_before
    assert deaths >= 1, (
        f"no client process death in {len(bounces)} coordinator restarts ({len(cycles)} cycles)"
    )
    assert restarts_counted() - counted_before >= deaths
    warnings = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("Kafka client process died")
    ]
    assert any("SIGSEGV" in w or "SIGABRT" in w for w in warnings), warnings
    assert all(w.endswith("; restarted") for w in warnings), warnings

    # After the bounces (once the coordinator has loaded the group): read exactly as committed.
    def settled() -> ClusterSnapshot | None:
        snap = collect_snapshot(admin, "crash", now)
        return None if {"groups", f"group:{unique_name}"} & {m.part for m in snap.missing} else snap

    final = wait_for(settled, timeout=60, what=f"group {unique_name} readable again")
    assert committed(final, unique_name) == expected
    print(
        f"\n{len(cycles)} cycles ({len(partial)} partial, {len(unlisted)} unlisted) over {len(bounces)} coordinator restarts "
        f"(brokers {bounces}); {deaths} client process deaths: {warnings}; "
        f"{time.monotonic() - started:.0f}s"
    )


def _host() -> ClientHost:
    host = SUPERVISOR.host()
    assert host is not None
    return host


@pytest.mark.kafka
def test_a_killed_client_process_is_replaced_and_reads_are_retried(
    kafka: Testbed, bootstrap: str, unique_name: str, admin: KafkaAdmin, caplog: pytest.LogCaptureFixture
) -> None:
    faults.create_topic(bootstrap, unique_name, partitions=PARTITIONS)
    assert admin.metadata().partitions
    before, pid, host_restarts = admin.restarts, _host().pid, SUPERVISOR.restarts

    # Between calls: the next call finds the process gone and starts another. The kernel ends a
    # process on SIGSEGV when one of its threads takes the signal; until then its other threads
    # still run and may answer a call (seen once on a loaded machine), so wait for the death.
    os.kill(pid, signal.SIGSEGV)
    wait_for(lambda: not _running(pid), timeout=10, what="the client process to die")
    md = admin.metadata()
    assert {p.partition for p in md.partitions if p.topic == unique_name} == set(range(PARTITIONS))
    assert admin.restarts == before + 1 and _host().pid != pid
    assert any("died with SIGSEGV" in r.getMessage() for r in caplog.records)
    assert not Path(f"/proc/{pid}").exists()  # reaped, no zombie left

    # During calls: threads read in a loop while the process is killed under them, three times.
    # Each kill waits until the previous replacement has served reads, so each death meets
    # calls in flight on a serving process however slow a start is on a loaded machine (a kill
    # during the replacement's start would be a second death of the same call: refused by design).
    errors: list[str] = []
    reads = 0
    keys = [(unique_name, p) for p in range(PARTITIONS)]
    stop = threading.Event()

    def read_loop() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                got = admin.list_offsets(keys)
                if got.errors or len(got.values) != PARTITIONS:
                    errors.append(f"list_offsets: {got.errors}")
                admin.metadata()
                reads += 1
            except AdminCallError as exc:
                errors.append(str(exc))

    def served_after(restarts: int) -> None:
        """The replacement for death number `restarts` is up and has served a few reads."""
        deadline = time.monotonic() + 60
        while admin.restarts < restarts and time.monotonic() < deadline:
            time.sleep(0.05)
        served = reads
        while reads < served + 3 and time.monotonic() < deadline:
            time.sleep(0.05)

    threads = [threading.Thread(target=read_loop) for _ in range(3)]
    for t in threads:
        t.start()
    killed = 0
    for sig in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT):
        served_after(before + 1 + killed)
        time.sleep(1.5)
        os.kill(_host().pid, sig)
        killed += 1
    served_after(before + 1 + killed)
    stop.set()
    for t in threads:
        t.join(60)
    assert not errors, errors[:5]
    assert reads > 10
    assert admin.restarts == before + 1 + killed
    assert SUPERVISOR.restarts == host_restarts + 1 + killed  # once per death, though 3 threads saw each
    assert admin.metadata().partitions


@pytest.mark.kafka
def test_a_write_whose_client_process_dies_reports_an_unknown_outcome(
    kafka: Testbed, bootstrap: str, unique_name: str
) -> None:
    """The group's coordinator is frozen so the commit is in flight when the process is killed."""
    with KafkaAdmin({"bootstrap.servers": bootstrap}, timeouts=Timeouts(metadata=6, request=8)) as admin:
        group_with_offsets(admin, bootstrap, unique_name)
        broker = coordinator(admin, unique_name)
        outcome: list[BaseException | object] = []

        def write() -> None:
            try:
                outcome.append(admin.alter_group_offsets(unique_name, {(unique_name, 0): 1}))
            except BaseException as exc:
                outcome.append(exc)

        kafka.pause(broker)
        try:
            writer = threading.Thread(target=write)
            writer.start()
            time.sleep(2)
            assert writer.is_alive(), outcome  # still waiting on the frozen coordinator
            os.kill(_host().pid, signal.SIGKILL)
            writer.join(30)
        finally:
            faults.heal(kafka)
        assert len(outcome) == 1 and isinstance(outcome[0], AdminCallError), outcome
        assert outcome[0].call == "alter_consumer_group_offsets"
        assert "SIGKILL" in outcome[0].reason and "outcome is unknown" in outcome[0].reason
        # Unknown indeed: the frozen broker may still process the request it received. Re-read.
        assert admin.group_offsets([unique_name]).values[unique_name][0].committed_offset in (1, COMMITTED[0])


# ------------------------------------------------------------------ no Kafka needed
UNREACHABLE = {"bootstrap.servers": "127.0.0.1:1"}
QUICK = Timeouts(metadata=0.5, request=0.5)


def test_exit_reasons_name_the_signal() -> None:
    assert [exit_reason(c) for c in (-signal.SIGSEGV, -signal.SIGABRT, 1, None)] == [
        "SIGSEGV",
        "SIGABRT",
        "exit_1",
        "lost",
    ]


def test_the_client_process_ignores_sigint_and_librdkafka_stays_out_of_this_process() -> None:
    with KafkaAdmin(UNREACHABLE, timeouts=QUICK) as admin:
        with pytest.raises(AdminCallError):
            admin.metadata()
        host = _host()
        os.kill(host.pid, signal.SIGINT)  # a terminal's Ctrl-C is for the operator
        time.sleep(0.5)
        assert host.poll() is None
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from kafka_health.collect.kafka_admin import KafkaAdmin, AdminCallError, Timeouts\n"
            "from kafka_health.collect.snapshot import collect_snapshot\n"
            "from datetime import UTC, datetime\n"
            "with KafkaAdmin({'bootstrap.servers': '127.0.0.1:1'}, timeouts=Timeouts(0.5, 0.5)) as a:\n"
            "    collect_snapshot(a, 'x', lambda: datetime.now(UTC))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'confluent_kafka'))\n",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"  # librdkafka was not even loaded in this process


def test_the_client_process_exits_when_the_operator_dies() -> None:
    script = (
        "import time\n"
        "from kafka_health.collect.kafka_admin import KafkaAdmin, AdminCallError, Timeouts\n"
        "from kafka_health.collect.client_host import SUPERVISOR\n"
        "a = KafkaAdmin({'bootstrap.servers': '127.0.0.1:1'}, timeouts=Timeouts(0.5, 0.5))\n"
        "try:\n"
        "    a.metadata()\n"
        "except AdminCallError:\n"
        "    pass\n"
        "print(SUPERVISOR.host().pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    operator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert operator.stdout is not None
        host_pid = int(operator.stdout.readline())
        assert _running(host_pid)
        operator.kill()  # SIGKILL: no atexit, no cleanup; only the pipe closing tells the child
        operator.wait(10)
        wait_for(lambda: not _running(host_pid), timeout=10, what="the client process to exit")
    finally:
        if operator.poll() is None:
            operator.kill()


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan is reaped by whatever adopted it, maybe not at once)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat.split(") ", 1)[1].startswith(("Z", "X"))


def test_client_log_records_reach_this_process_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python logs its whole configuration (SASL password included) at DEBUG, in the client
    process: the record reaches this process's loggers (and so its handlers), without the secret."""
    conf = {**UNREACHABLE, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    conf |= {"sasl.username": "ops", "sasl.password": "pa55-w0rd-in-child"}
    with caplog.at_level(logging.DEBUG), KafkaAdmin(conf, timeouts=QUICK) as admin:
        with pytest.raises(AdminCallError):
            admin.describe_cluster()
        host_pid = _host().pid
    dumps = [
        r for r in caplog.records if r.name == "kafka.admin.client" and "configuration" in r.getMessage()
    ]
    assert dumps and all(r.process == host_pid for r in dumps)  # logged in the client process
    assert not any("pa55-w0rd-in-child" in r.getMessage() for r in caplog.records)


def _kill_each_new_host(times: int, sig: signal.Signals) -> threading.Thread:
    """Kill the client process `times` times, each one 0.5 s after it is up (mid-call)."""

    def run() -> None:
        killed: set[int] = set()
        deadline = time.monotonic() + 30
        while len(killed) < times and time.monotonic() < deadline:
            host = SUPERVISOR.host()
            if host is not None and host.pid not in killed and host.poll() is None:
                time.sleep(0.5)
                killed.add(host.pid)
                os.kill(host.pid, sig)
            time.sleep(0.02)

    killer = threading.Thread(target=run)
    killer.start()
    return killer


def test_a_read_whose_retry_dies_too_fails_like_any_failed_read() -> None:
    """Both attempts killed mid-call (an unreachable cluster keeps each call waiting 3 s): a whole
    call raises AdminCallError, a call over items reports every item; nothing raises past that."""
    with KafkaAdmin(UNREACHABLE, timeouts=Timeouts(metadata=3, request=3)) as admin:
        with pytest.raises(AdminCallError):
            admin.metadata()  # the process is up
        killer = _kill_each_new_host(2, signal.SIGSEGV)
        with pytest.raises(AdminCallError) as whole:
            admin.metadata()
        killer.join()
        assert whole.value.call == "metadata"
        assert whole.value.reason.startswith("the Kafka client process crashed (SIGSEGV) twice")

        killer = _kill_each_new_host(2, signal.SIGABRT)
        partial = admin.group_offsets(["g1", "g2"])
        killer.join()
        assert partial.values == {}
        assert set(partial.errors) == {"g1", "g2"}
        assert all(
            e.startswith("the Kafka client process crashed (SIGABRT) twice") for e in partial.errors.values()
        )
        with pytest.raises(AdminCallError) as normal:
            admin.metadata()  # the next call runs on a fresh process as usual
        assert "crashed" not in normal.value.reason


def test_a_client_process_that_stops_answering_is_killed_and_replaced(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A frozen client process (SIGSTOP here; a deadlock alike) would hold the calls waiting on
    it forever: the watchdog kills it once a call outlives its budget, and the read is retried."""
    monkeypatch.setattr(KafkaAdmin, "HANG_MARGIN", 1.0)  # budget: 2 * (0.5 + 0.5) + 1 = 3 s
    with KafkaAdmin(UNREACHABLE, timeouts=QUICK) as admin:
        with pytest.raises(AdminCallError):
            admin.metadata()
        dropped = KafkaAdmin(UNREACHABLE, timeouts=QUICK)  # left to the garbage collector, never closed
        with pytest.raises(AdminCallError):
            dropped.metadata()
        before, frozen = admin.restarts, _host()
        os.kill(frozen.pid, signal.SIGSTOP)

        # Dropping a proxy talks to no process (a finalizer waiting on the frozen one would block
        # whichever thread the garbage collector ran in).
        del dropped
        collector = threading.Thread(target=gc.collect)
        collector.start()
        collector.join(5)
        assert not collector.is_alive()
        started = time.monotonic()
        with pytest.raises(AdminCallError) as err:
            admin.metadata()  # retried on a fresh process: fails as an unreachable cluster does
        elapsed = time.monotonic() - started
        assert "crashed" not in err.value.reason
        assert 3 <= elapsed < 15, elapsed
        assert admin.restarts == before + 1 and frozen.poll() == -signal.SIGKILL
    messages = [r.getMessage() for r in caplog.records]
    assert "Kafka client process stopped answering during metadata; restarted" in messages
