"""One actor per Kafka cluster, across policies, replicas and operator installs: the lock record.

The record lives in a `coordination.k8s.io/v1` Lease named `lock_name(cluster_key(...))` (see
`controller/cluster_lease.py`, which takes it with a resourceVersion compare-and-swap, renews it
while the action runs, and deletes it when the action ends). These functions only decide, from
the record and the clock:

- free: no record;
- expired: its holder stopped renewing for longer than the record's TTL (a crashed or frozen
  replica): anyone may take it;
- ours: this policy on this replica;
- handed over: this policy, left by a replica that stopped acting (paused by peering, shut
  down) with the action still in flight: the policy's next replica may take it at once;
- conflict: anyone else (another policy, or this policy on another replica still renewing) —
  the action is withheld with `ClusterLocked` naming the holder.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.policy import ActionType, ClusterSpec, WithheldReason
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.hold import Hold, iso

DEFAULT_LOCK_TTL = timedelta(seconds=30)
"""How long a lock stays valid without renewal. Shorter than Kopf's peering lifetime (60 s), so
when the active replica freezes, its lock has expired by the time a standby takes over."""


class ClusterLock(BaseModel):
    """The lock record: who acts on the cluster, and what."""

    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(description="cluster_key() of the cluster.")
    holder: str = Field(description="The policy acting: namespace/name.")
    replica: str | None = Field(
        None, description="The operator replica acting (Kopf's peering id); None: handed over."
    )
    action: ActionType
    id: str | None = None
    plan_id: str | None = None
    acquired_at: datetime
    renewed_at: datetime
    ttl_seconds: int | None = Field(None, ge=1, description="The record's own TTL (the Lease's duration).")

    def ttl(self, default: timedelta = DEFAULT_LOCK_TTL) -> timedelta:
        return timedelta(seconds=self.ttl_seconds) if self.ttl_seconds else default

    def describe(self) -> str:
        """`<namespace>/<policy> (<action> <id>) on replica <replica>`: who holds it, for messages."""
        what = f"{self.action}" + (f" {self.id}" if self.id else "")
        where = f"on replica {self.replica}" if self.replica else "handed over by its replica"
        return f"{self.holder} ({what}) {where}"


class LockVerdict(StrEnum):
    FREE = "Free"
    EXPIRED = "Expired"
    OURS = "Ours"
    HANDED_OVER = "HandedOver"
    CONFLICT = "Conflict"

    @property
    def takeable(self) -> bool:
        return self is not LockVerdict.CONFLICT


def cluster_key(cluster: ClusterSpec, snapshot: ClusterSnapshot | None = None) -> str:
    """The Kafka cluster id when known (two policies with different bootstrap lists still
    collide), else the sorted bootstrap servers."""
    if snapshot is not None and snapshot.cluster_id:
        return cluster_id_key(snapshot.cluster_id)
    return "bootstrap:" + ",".join(sorted(s.lower() for s in cluster.bootstrap_servers))


def cluster_id_key(cluster_id: str) -> str:
    """The key of a cluster whose id was read from Kafka (what the CLI's roll locks too)."""
    return f"id:{cluster_id}"


def lock_name(key: str) -> str:
    """A valid Kubernetes object name for the lock of `key`."""
    return "khp-lock-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def lock_is_stale(lock: ClusterLock, now: datetime, ttl: timedelta = DEFAULT_LOCK_TTL) -> bool:
    return now - lock.renewed_at > lock.ttl(ttl)


def lock_verdict(
    lock: ClusterLock | None,
    holder: str,
    now: datetime,
    *,
    replica: str | None = None,
    ttl: timedelta = DEFAULT_LOCK_TTL,
) -> LockVerdict:
    """What `holder` (namespace/policy) on `replica` may do with the record `lock`.

    `replica=None` (the planner, which does not know replicas) counts any replica of the same
    policy as ours; the executor's take (`controller/cluster_lease.py`) passes its replica."""
    if lock is None:
        return LockVerdict.FREE
    if lock_is_stale(lock, now, ttl):
        return LockVerdict.EXPIRED
    if lock.holder != holder:
        return LockVerdict.CONFLICT
    if lock.replica is None:
        return LockVerdict.HANDED_OVER
    if replica is None or lock.replica == replica:
        return LockVerdict.OURS
    return LockVerdict.CONFLICT


def check_cluster_lock(
    lock: ClusterLock | None,
    holder: str,
    now: datetime,
    ttl: timedelta = DEFAULT_LOCK_TTL,
    *,
    replica: str | None = None,
) -> Hold | None:
    """None when `holder` may take the lock; else a ClusterLocked Hold naming who holds it."""
    if lock is None or lock_verdict(lock, holder, now, replica=replica, ttl=ttl).takeable:
        return None
    return Hold(
        WithheldReason.CLUSTER_LOCKED,
        f"ClusterLocked by {lock.describe()} since {iso(lock.acquired_at)}: one action per Kafka cluster "
        f"at a time (the lock is taken when it is released or not renewed for {int(lock.ttl(ttl).total_seconds())}s)",
        lock.renewed_at + lock.ttl(ttl),
    )
