"""The per-Kafka-cluster action lock, held in a `coordination.k8s.io/v1` Lease.

One Lease per Kafka cluster identity (`plan.cluster_lock.cluster_key`: the cluster id read from
Kafka), named `lock_name(key)`, in the lock namespace (`--lock-namespace`, the chart's
`lockNamespace`, default the operator's namespace). Every operator install that may act on the
cluster must use the same lock namespace: that is what makes two installs see each other.

- take (`acquire`): read the Lease; when it is free, expired, ours, or handed over by another
  replica of the same policy, write it with the resourceVersion read (create when absent): the
  API server refuses the write (409) when anyone else wrote in between, and the take is
  retried on the new record. Anyone else's live Lease is a conflict: the action is withheld
  with ClusterLocked.
- renew: a thread rewrites the Lease (compare-and-swap on the resourceVersion we last wrote)
  every TTL/3 while the action runs.
- check (`ensure`): before each step that touches the cluster (a pod delete, an ElectLeaders
  request, an offset commit) the executor renews by compare-and-swap; a refused write means
  someone else took the Lease (ours had expired: this process was frozen, or cut off from the
  API server, for longer than the TTL) and raises `LeaseLost`: the executor stops before the
  step. Status writes check it too, from a local clock when the last renewal is recent
  (younger than TTL/3), by a compare-and-swap otherwise.
- hand over (`hand_over`): a replica that stops acting with the action still in flight (paused
  by peering, shutting down) clears its replica from the Lease: the policy's next replica takes
  it at once, other policies still see it held until it expires.
- release (`release`): when the action ends, the Lease is emptied (no holder) by
  compare-and-swap; a Lease someone else took meanwhile is left alone. It is never deleted:
  Leases allow create-on-update, so a frozen holder's late compare-and-swap renewal would
  silently recreate a deleted one (found by the hand-over e2e test); an existing Lease always
  refuses a stale resourceVersion.

The holder's fields are typed annotations on the Lease (`kafkahealth.io/lock-*`), and
`holderIdentity` is `<replica>/<namespace>/<policy>/<action>` for people and kubectl.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kafka_health.k8s.client import K8s, K8sError, LeaseRecord
from kafka_health.models.policy import ActionType
from kafka_health.plan.cluster_lock import (
    DEFAULT_LOCK_TTL,
    ClusterLock,
    LockVerdict,
    lock_name,
    lock_verdict,
)

log = logging.getLogger(__name__)

PREFIX = "kafkahealth.io/lock-"
A_CLUSTER = PREFIX + "cluster"
A_POLICY = PREFIX + "policy"
A_REPLICA = PREFIX + "replica"
A_ACTION = PREFIX + "action"
A_ID = PREFIX + "request-id"
A_PLAN = PREFIX + "plan-id"
LABELS = {"app.kubernetes.io/managed-by": "kafka-health-operator", "kafkahealth.io/lock": "cluster"}


class LeaseLost(Exception):
    """This replica no longer holds (or cannot confirm) the cluster's Lease: stop before the
    next step, write nothing more; whoever holds it now carries the action on from status."""


def default_replica() -> str:
    """This process's replica name: Kopf's peering id (`POD_ID`, the pod name in the chart),
    else host and pid."""
    return os.environ.get("POD_ID") or f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class LockSettings:
    """Where the Leases live and how long they last (from the operator's flags)."""

    namespace: str
    replica: str
    ttl: timedelta = DEFAULT_LOCK_TTL


def to_lock(lease: LeaseRecord) -> ClusterLock | None:
    """The lock record a Lease holds; None when it holds none (no holder, or not ours to read)."""
    a = lease.annotations
    if not lease.holder_identity or A_POLICY not in a or A_ACTION not in a:
        return None
    try:
        action = ActionType(a[A_ACTION])
    except ValueError:
        return None
    renewed = lease.renew_time or lease.acquire_time
    if renewed is None:
        return None
    return ClusterLock(
        cluster=a.get(A_CLUSTER, ""),
        holder=a[A_POLICY],
        replica=a.get(A_REPLICA) or None,
        action=action,
        id=a.get(A_ID) or None,
        plan_id=a.get(A_PLAN) or None,
        acquired_at=lease.acquire_time or renewed,
        renewed_at=renewed,
        ttl_seconds=lease.lease_duration_seconds or None,
    )


def to_lease(
    lock: ClusterLock, namespace: str, *, transitions: int, resource_version: str | None
) -> LeaseRecord:
    annotations = {A_CLUSTER: lock.cluster, A_POLICY: lock.holder, A_ACTION: str(lock.action)}
    if lock.replica:
        annotations[A_REPLICA] = lock.replica
    if lock.id:
        annotations[A_ID] = lock.id
    if lock.plan_id:
        annotations[A_PLAN] = lock.plan_id
    return LeaseRecord(
        name=lock_name(lock.cluster),
        namespace=namespace,
        holder_identity=f"{lock.replica or '-'}/{lock.holder}/{lock.action}",
        lease_duration_seconds=lock.ttl_seconds,
        acquire_time=lock.acquired_at,
        renew_time=lock.renewed_at,
        lease_transitions=transitions,
        annotations=annotations,
        labels=dict(LABELS),
        resource_version=resource_version,
    )


def read_lock(k8s: K8s, settings: LockSettings, key: str) -> ClusterLock | None:
    """The cluster's lock as stored now (None: free). A read error propagates: no action is
    planned on a lock nobody could read."""
    lease = k8s.read_lease(settings.namespace, lock_name(key))
    return to_lock(lease) if lease is not None else None


Clock = Callable[[], datetime]


class ClusterLease:
    """This replica's hold on one cluster's Lease, for one action of one policy."""

    def __init__(
        self,
        k8s: K8s,
        settings: LockSettings,
        *,
        cluster: str,
        policy: str,
        action: ActionType,
        id: str | None = None,
        plan_id: str | None = None,
        clock: Clock = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.k8s = k8s
        self.settings = settings
        self.cluster = cluster
        self.policy = policy
        self.action = action
        self.id = id
        self.plan_id = plan_id
        self.clock = clock
        self.monotonic = monotonic
        self.name = lock_name(cluster)
        self._guard = threading.RLock()
        self._lease: LeaseRecord | None = None
        self._confirmed_at: float | None = None  # monotonic time of the last successful write
        self._lost = False
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    # ------------------------------------------------------------------ state
    @property
    def held(self) -> bool:
        return self._lease is not None and not self._lost

    @property
    def ttl_seconds(self) -> int:
        return max(1, int(self.settings.ttl.total_seconds()))

    def _record(self, acquired_at: datetime, now: datetime, replica: str | None) -> ClusterLock:
        return ClusterLock(
            cluster=self.cluster,
            holder=self.policy,
            replica=replica,
            action=self.action,
            id=self.id,
            plan_id=self.plan_id,
            acquired_at=acquired_at,
            renewed_at=now,
            ttl_seconds=self.ttl_seconds,
        )

    # ------------------------------------------------------------------ take
    def acquire(self) -> ClusterLock | None:
        """Take the Lease (or keep it, when this object holds it): None when held now, else the
        lock record of whoever holds it (a conflict: the caller withholds the action)."""
        with self._guard:
            if self.held:
                self.ensure(fresh=True)
                return None
            for _ in range(5):
                stored = self.k8s.read_lease(self.settings.namespace, self.name)
                now = self.clock()
                current = to_lock(stored) if stored is not None else None
                verdict = lock_verdict(
                    current, self.policy, now, replica=self.settings.replica, ttl=self.settings.ttl
                )
                if verdict is LockVerdict.CONFLICT:
                    assert current is not None
                    return current
                same = verdict in (LockVerdict.OURS, LockVerdict.HANDED_OVER) and current is not None
                acquired_at = current.acquired_at if same and current is not None else now
                transitions = stored.lease_transitions if stored is not None else 0
                if not (same and current is not None and current.replica == self.settings.replica):
                    transitions += 1 if stored is not None else 0
                record = to_lease(
                    self._record(acquired_at, now, self.settings.replica),
                    self.settings.namespace,
                    transitions=transitions,
                    resource_version=stored.resource_version if stored is not None else None,
                )
                try:
                    written = (
                        self.k8s.replace_lease(record)
                        if stored is not None
                        else self.k8s.create_lease(record)
                    )
                except K8sError as exc:
                    if exc.status in (404, 409):
                        continue  # written (or deleted) by someone else since the read: decide again
                    raise
                self._lease, self._confirmed_at, self._lost = written, self.monotonic(), False
                log.info(
                    "cluster lock %s/%s taken (%s) by %s for %s %s",
                    self.settings.namespace,
                    self.name,
                    verdict.value,
                    self.settings.replica,
                    self.policy,
                    self.action,
                )
                self._start_renewer()
                return None
            raise K8sError(f"Lease {self.settings.namespace}/{self.name}: kept changing while taking it", 409)

    # ------------------------------------------------------------------ renew / check
    def ensure(self, *, fresh: bool = True) -> None:
        """Raise LeaseLost unless this replica still holds the Lease. `fresh`: prove it with a
        compare-and-swap renewal now (before a step that touches the cluster); else a renewal
        younger than TTL/3 on the local monotonic clock is proof enough (status writes)."""
        with self._guard:
            if self._lease is None or self._lost:
                raise LeaseLost(f"the cluster lock {self.name} is not held by this replica")
            age = self.monotonic() - (self._confirmed_at or 0.0)
            if not fresh and age < self.ttl_seconds / 3:
                return
            self._renew()

    def _renew(self) -> None:
        assert self._lease is not None
        now = self.clock()
        lock = to_lock(self._lease)
        acquired_at = lock.acquired_at if lock is not None else now
        record = to_lease(
            self._record(acquired_at, now, self.settings.replica),
            self.settings.namespace,
            transitions=self._lease.lease_transitions,
            resource_version=self._lease.resource_version,
        )
        try:
            self._lease = self.k8s.replace_lease(record)
        except K8sError as exc:
            if exc.status in (404, 409):
                self._lost = True
                self._stop.set()
                log.warning(
                    "cluster lock %s/%s lost: another holder wrote it (ours had not been renewed for %.0fs)",
                    self.settings.namespace,
                    self.name,
                    self.monotonic() - (self._confirmed_at or 0.0),
                )
                raise LeaseLost(f"the cluster lock {self.name} was taken by another holder") from None
            raise LeaseLost(f"the cluster lock {self.name} could not be renewed: {exc}") from None
        self._confirmed_at = self.monotonic()

    def _start_renewer(self) -> None:
        if self._renewer is not None and self._renewer.is_alive():
            return
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew_loop, name=f"lease-{self.name}", daemon=True)
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.ttl_seconds / 3):
            try:
                with self._guard:
                    if self._lease is None or self._lost:
                        return
                    self._renew()
            except LeaseLost as exc:
                if self._lost:
                    return
                log.warning("%s; retrying", exc)  # the API server did not answer: try again

    # ------------------------------------------------------------------ let go
    def _stop_renewer(self) -> None:
        self._stop.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join(5)

    def hand_over(self) -> None:
        """Stop acting with the action still in flight: leave the Lease to this policy's next
        replica (replica cleared, not renewed: other policies wait until it expires)."""
        self._stop_renewer()
        with self._guard:
            if self._lease is None or self._lost:
                self._lease = None
                return
            lock = to_lock(self._lease)
            now = self.clock()
            record = to_lease(
                self._record(lock.acquired_at if lock else now, now, None),
                self.settings.namespace,
                transitions=self._lease.lease_transitions,
                resource_version=self._lease.resource_version,
            )
            try:
                self.k8s.replace_lease(record)
                log.info(
                    "cluster lock %s/%s handed over by %s",
                    self.settings.namespace,
                    self.name,
                    self.settings.replica,
                )
            except K8sError as exc:
                log.info(
                    "cluster lock %s/%s not handed over (%s): it expires on its own",
                    self.settings.namespace,
                    self.name,
                    exc,
                )
            self._lease = None

    def release(self) -> None:
        """The action ended: empty the Lease (no holder), by compare-and-swap; a Lease someone
        else wrote meanwhile is left alone. The Lease object itself is kept: a replace with a stale
        resourceVersion must always meet it (Leases allow create-on-update, so a deleted one would
        be silently recreated by a frozen holder's late renewal)."""
        self._stop_renewer()
        with self._guard:
            lease, self._lease = self._lease, None
            if lease is None or self._lost or lease.resource_version is None:
                return
            empty = LeaseRecord(
                name=self.name,
                namespace=self.settings.namespace,
                holder_identity=None,
                lease_duration_seconds=self.ttl_seconds,
                renew_time=self.clock(),
                lease_transitions=lease.lease_transitions,
                annotations={A_CLUSTER: self.cluster},
                labels=dict(LABELS),
                resource_version=lease.resource_version,
            )
            try:
                self.k8s.replace_lease(empty)
                log.info(
                    "cluster lock %s/%s released by %s",
                    self.settings.namespace,
                    self.name,
                    self.settings.replica,
                )
            except K8sError as exc:
                log.warning(
                    "cluster lock %s/%s not released (%s): someone else wrote it meanwhile, or it expires on its own",
                    self.settings.namespace,
                    self.name,
                    exc,
                )


__all__ = [
    "ClusterLease",
    "LeaseLost",
    "LockSettings",
    "default_replica",
    "read_lock",
    "to_lease",
    "to_lock",
]
