"""The roll driver: carries a rolling restart in flight at the cluster's pace, beside the cycles.

A roll used to advance one broker per diagnosis cycle. Now, once a roll is in flight (or the
cycle decides to start one), the policy's worker hands it to this driver: a thread of its own
that loops "read live state → plan → act" until the roll ends. Each turn reads a safety-only
snapshot and the broker pods' readiness right before the planner decides, so the next broker
goes as soon as the live safety rules pass (pod Ready, broker registered, URP 0, the
per-partition and quorum rules), while diagnosis cycles keep running beside it.

While the planner says the roll waits for safety, the driver re-reads every `POLL_SECONDS`;
for a pause between brokers it sleeps until the pause ends. For any other hold (paused,
window closed, mode changed, cluster locked) it stops, and the next cycle starts it again.

Status: the driver and the cycle share one lock per policy; the driver writes only the
remediation fields (`merge_remediation`) over the status as stored, so the cycle's diagnosis
and the driver's roll progress never overwrite each other.

One actor per cluster: each turn first takes (or renews) the cluster's Lease, and the driver
writes status and acts only while it holds it. Another replica of this policy holding it (a
hand-over in progress: it is finishing its step) → the driver writes nothing and waits for the
Lease to be handed over or to expire; another policy holding it → ClusterLocked in status, and
the driver waits. When the driver stops with the roll still in flight (peering paused this
replica, shutdown, a hold by choice) it hands the Lease over to the policy's next replica;
when it finds the Lease lost (`LeaseLost`: this process was frozen longer than the TTL and
another replica took over) it stops at once and writes nothing more.

The Lease check and the write are two calls: a process frozen between them (SIGSTOP, a long GC
pause) would, on waking, lay its old progress over the new holder's (a broker resumed and
reported twice). So each roll write is also fenced on the status itself: it goes through only
when the stored `currentRemediation` is still the one this driver last read or wrote, on a
compare-and-swap of the version read; anyone else's progress there → `LeaseLost`.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from kafka_health.collect.kafka_admin import KafkaAdmin
from kafka_health.collect.snapshot import collect_snapshot
from kafka_health.controller.act_context import ActContext, OnEvent, Stopped
from kafka_health.controller.cluster_lease import ClusterLease, LeaseLost
from kafka_health.controller.remediation import act, decide, locked_status
from kafka_health.controller.runtime import Runtime
from kafka_health.k8s.client import K8sError
from kafka_health.models.findings import Diagnosis
from kafka_health.models.policy import (
    ActionType,
    CurrentRemediation,
    KafkaHealthPolicySpec,
    KafkaHealthPolicyStatus,
    PolicyError,
    WithheldReason,
    parse_spec,
    parse_status,
)
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan import Decision, PolicyRef, Verdict, cluster_key
from kafka_health.remediate.rolling_restart import Step
from kafka_health.report.status import merge_remediation, status_patch

__all__ = ["POLL_SECONDS", "RollDriver", "RollHost", "Stopped"]

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0
"""How often a roll waiting for safety re-reads the cluster."""

# Holds the driver keeps waiting on (re-reading live state); any other hold ends its turn.
_WAITS = frozenset(
    {
        WithheldReason.UNSAFE_TO_RESTART,
        WithheldReason.BROKER_NOT_READY,
        WithheldReason.OFFLINE_PARTITIONS,
        WithheldReason.NO_QUORUM_LEADER,
        WithheldReason.PAUSING_BETWEEN_BROKERS,
        WithheldReason.SNAPSHOT_UNREADABLE,
        WithheldReason.SNAPSHOT_INCOMPLETE,
        WithheldReason.SNAPSHOT_STALE,
    }
)


class RollHost(Protocol):
    """What the driver needs of the policy it rolls for (the policy's worker between cycles):
    the clients, the lock its status writes share with the cycles, the last diagnosis, and the
    broker pods' readiness read live."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def cluster_name(self) -> str: ...
    @property
    def admin(self) -> KafkaAdmin | None: ...
    @property
    def last_snapshot(self) -> ClusterSnapshot | None: ...
    @property
    def last_diagnosis(self) -> Diagnosis | None: ...
    @property
    def status_lock(self) -> threading.RLock: ...

    def broker_pods_ready(self, spec: KafkaHealthPolicySpec) -> dict[int, bool] | None: ...


class RollDriver:
    """One policy's roll in flight, driven in its own thread until it ends or is held."""

    def __init__(self, worker: RollHost, on_event: OnEvent, clock: Callable[[], datetime] | None = None):
        self.worker = worker
        self.on_event = on_event
        self.clock = clock or (lambda: datetime.now(UTC))
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.lease: ClusterLease | None = None
        """The cluster's Lease while this driver holds it (for the whole roll)."""
        self.base: CurrentRemediation | None = None
        """status.currentRemediation as this driver last read or wrote it (the write fence)."""

    # ------------------------------------------------------------------ lifecycle
    def start(self, first: tuple[Decision, KafkaHealthPolicyStatus] | None = None) -> None:
        """Run in a new thread; `first`: a decision the cycle just made on live state (a roll to
        start), acted on before the driver plans by itself. Event posting needs the caller's
        context (Kopf's), so the thread runs in a copy of it."""
        context = contextvars.copy_context()
        ns, name = self.worker.namespace, self.worker.name
        self._thread = threading.Thread(
            target=context.run, args=(self._run, first), name=f"roll-{ns}/{name}", daemon=True
        )
        self._thread.start()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the driver to stop and wait for it: it leaves at its next wait or between steps
        (a step in flight is persisted first, so the next driver resumes it)."""
        self.stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def sleep(self, seconds: float) -> None:
        if self.stopping.wait(max(0.0, seconds)):
            raise Stopped

    def guard(self) -> None:
        """Before a step that touches the cluster: the policy's work has not stopped (a replica
        paused by peering takes no further step; the Lease check follows it)."""
        if self.stopping.is_set():
            raise Stopped

    # ------------------------------------------------------------------ the lease
    def _lease_for(
        self,
        spec: KafkaHealthPolicySpec,
        snapshot: ClusterSnapshot | None,
        policy: PolicyRef,
        action: ActionType,
        id: str | None,
        plan_id: str | None,
    ) -> ClusterLease:
        """The driver's Lease object for this cluster (held or not yet). A snapshot without the
        cluster id (Kafka unreadable for a moment) keeps the Lease already held."""
        if self.lease is not None and self.lease.held and (snapshot is None or not snapshot.cluster_id):
            return self.lease
        key = cluster_key(spec.cluster, snapshot)
        if self.lease is None or self.lease.cluster != key or not self.lease.held:
            if self.lease is not None and self.lease.held:
                self.lease.hand_over()
            self.lease = ClusterLease(
                self.worker.runtime.k8s,
                self.worker.runtime.settings.lock,
                cluster=key,
                policy=policy.key,
                action=action,
                id=id,
                plan_id=plan_id,
                clock=self.clock,
            )
        return self.lease

    def _let_go(self) -> None:
        """Leaving with the roll still in flight: hand the Lease over (released already when the
        roll ended: `act` deletes it)."""
        if self.lease is not None and self.lease.held:
            self.lease.hand_over()
        self.lease = None

    # ------------------------------------------------------------------ status
    def persist(self, status: KafkaHealthPolicyStatus) -> None:
        """Write the roll's fields over the status as stored now (under the policy's lock), only
        while this driver holds the cluster's Lease (LeaseLost otherwise)."""
        if self.lease is None:
            raise LeaseLost("the roll driver writes status only while it holds the cluster lock")
        self.lease.ensure(fresh=False)
        self._write(status, fenced=True)

    def read(self) -> dict[str, Any] | None:
        """The policy as stored now; its currentRemediation becomes the base the next writes
        are fenced on."""
        w = self.worker
        stored = w.runtime.k8s.read_policy(w.namespace, w.name)
        if stored is not None:
            self.base = parse_status(stored.get("status")).current_remediation
        return stored

    def _write(self, status: KafkaHealthPolicyStatus, *, fenced: bool = False) -> None:
        """`fenced`: only over the remediation this driver last read or wrote (LeaseLost when
        another writer's progress is there)."""
        w = self.worker
        k8s = w.runtime.k8s
        with w.status_lock:
            for _ in range(3):  # compare-and-swap on the version read; again when someone wrote meanwhile
                try:
                    stored = k8s.read_policy(w.namespace, w.name)
                    if stored is None:
                        return
                    now = parse_status(stored.get("status"))
                    if fenced and now.current_remediation != self.base:
                        log.warning(
                            "roll of %s/%s: another replica's progress is in status; not written",
                            w.namespace,
                            w.name,
                        )
                        raise LeaseLost("another replica wrote roll progress since this driver's last write")
                    merged = merge_remediation(now, status)
                    version = (stored.get("metadata") or {}).get("resourceVersion")
                    k8s.patch_policy_status(w.namespace, w.name, status_patch(merged), version)
                    self.base = merged.current_remediation
                    return
                except K8sError as exc:
                    if exc.status == 409:
                        continue
                    if exc.status != 404:
                        log.warning("status of %s/%s not written: %s", w.namespace, w.name, exc)
                    return
            log.warning("status of %s/%s not written: it kept changing", w.namespace, w.name)

    # ------------------------------------------------------------------ the loop
    def _run(self, first: tuple[Decision, KafkaHealthPolicyStatus] | None) -> None:
        w = self.worker
        try:
            if first is not None:
                stored = self.read()
                if stored is None:
                    return
                self._act(
                    *first,
                    metadata=dict(stored.get("metadata") or {}),
                    spec=parse_spec(stored.get("spec") or {}),
                    snapshot=w.last_snapshot,
                )
            while not self.stopping.is_set() and self._turn():
                pass
        except Stopped:
            log.info("roll of %s/%s: stopped; the next start resumes it from status", w.namespace, w.name)
        except LeaseLost as exc:
            log.warning(
                "roll of %s/%s: stopped, %s; its holder carries it on from status", w.namespace, w.name, exc
            )
        except Exception:
            log.exception("roll of %s/%s failed; the next cycle takes it up from status", w.namespace, w.name)
        finally:
            try:
                self._let_go()
            except Exception:
                log.exception("roll of %s/%s: the cluster lock was not handed over", w.namespace, w.name)

    def _turn(self) -> bool:
        """One decision on live state and what it calls for; False when the driver is done."""
        w = self.worker
        stored = self.read()
        if stored is None:
            return False
        status = parse_status(stored.get("status"))
        current = status.current_remediation
        if current is None or current.action is not ActionType.ROLLING_RESTART:
            return False
        try:
            spec = parse_spec(stored.get("spec") or {})
        except PolicyError:
            return False  # the cycle reports InvalidSpec
        admin = w.admin
        if admin is None:
            return False
        snapshot = collect_snapshot(admin, w.cluster_name, self.clock, safety_only=True)
        metadata = dict(stored.get("metadata") or {})
        if not self._hold(spec, snapshot, metadata, status, current):
            self.sleep(POLL_SECONDS)  # someone else holds the cluster: wait for its Lease
            return True
        pods_ready = w.broker_pods_ready(spec)
        decision, new_status = decide(
            metadata=metadata,
            spec=spec,
            status=status,
            snapshot=snapshot,
            diagnosis=w.last_diagnosis,
            now=self.clock(),
            broker_pods_ready=pods_ready,
        )
        wait = decision.roll_wait
        if wait is not None and wait.started and decision.verdict is Verdict.NONE:
            self.on_event("Warning", wait.reason.value, f"{current.id}: {wait.message}")
        if not decision.acts:
            self.persist(new_status)
            holds = {h.reason for h in decision.withheld if h.id == current.id}
            if not holds or not holds <= _WAITS:
                return False  # held by a choice (paused, window, mode): the cycles take it from here
            retry = [h.retry_at for h in decision.withheld if h.id == current.id and h.retry_at is not None]
            pause = (min(retry) - self.clock()).total_seconds() if retry else POLL_SECONDS
            self.sleep(min(max(pause, 0.0), 60.0) if retry else POLL_SECONDS)
            return True
        after = self._act(
            decision,
            new_status,
            metadata=metadata,
            spec=spec,
            snapshot=snapshot,
        )
        current_after = after.current_remediation
        if (
            current_after is not None
            and current_after.step == Step.WAITING_FOR_SAFETY
            and current_after.brokers_done == current.brokers_done
        ):
            self.sleep(POLL_SECONDS)  # the executor's own re-check refused (no broker done): do not spin
        return True

    def _hold(
        self,
        spec: KafkaHealthPolicySpec,
        snapshot: ClusterSnapshot,
        metadata: dict[str, Any],
        status: KafkaHealthPolicyStatus,
        current: CurrentRemediation,
    ) -> bool:
        """Take or renew the cluster's Lease for this roll; False when someone else holds it
        (another policy: ClusterLocked in status; another replica of this policy: nothing written)."""
        policy = PolicyRef.from_metadata(metadata)
        lease = self._lease_for(spec, snapshot, policy, current.action, current.id, current.plan_id)
        held = lease.acquire()
        if held is None:
            return True
        if held.holder != policy.key:
            lock = self.worker.runtime.settings.lock
            self._write(
                locked_status(status, current.action, current.id, held, self.clock(), lock, policy.key)
            )
        return False

    def _act(
        self,
        decision: Decision,
        status: KafkaHealthPolicyStatus,
        *,
        metadata: dict[str, Any],
        spec: KafkaHealthPolicySpec,
        snapshot: ClusterSnapshot | None,
    ) -> KafkaHealthPolicyStatus:
        w = self.worker
        admin = w.admin
        if admin is None:
            return status
        policy = PolicyRef.from_metadata(metadata)
        what = decision.action or status.current_remediation
        assert what is not None
        lease = self._lease_for(spec, snapshot, policy, what.action, what.id, what.plan_id)
        ctx = ActContext(
            metadata=metadata,
            spec=spec,
            snapshot=snapshot,
            admin=admin,
            k8s=w.runtime.k8s,
            persist=self.persist,
            clock=self.clock,
            on_event=self.on_event,
            lock=w.runtime.settings.lock,
            sleep=self.sleep,
            lease=lease,
            guard=self.guard,
        )
        after = act(decision, status, ctx)
        if ctx.conflict is not None:
            if ctx.conflict.holder != policy.key:
                self._write(after)  # ClusterLocked by another policy, in our status
            return after
        if lease.held:
            self.persist(after)
        else:
            self._write(after)  # the roll ended and act released the Lease: its final status
        return after
