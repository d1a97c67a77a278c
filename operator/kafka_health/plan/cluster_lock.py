"""One action in flight per Kafka cluster, across policies: a lock record names the policy acting.

The executor stores the record (e.g. a Lease named `lock_name(cluster_key(...))`) with a
compare-and-swap, renews it after every step, and deletes it when the action ends. These
functions only decide: free, ours, stale (its holder stopped renewing), or held by another
policy — a conflict, which the second policy reports.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.policy import ActionType, ClusterSpec, WithheldReason
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.hold import Hold, iso

DEFAULT_LOCK_TTL = timedelta(minutes=10)


class ClusterLock(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(description="cluster_key() of the cluster.")
    holder: str = Field(description="The policy acting: namespace/name.")
    action: ActionType
    id: str | None = None
    plan_id: str | None = None
    acquired_at: datetime
    renewed_at: datetime


def cluster_key(cluster: ClusterSpec, snapshot: ClusterSnapshot | None = None) -> str:
    """The Kafka cluster id when known (two policies with different bootstrap lists still
    collide), else the sorted bootstrap servers."""
    if snapshot is not None and snapshot.cluster_id:
        return f"id:{snapshot.cluster_id}"
    return "bootstrap:" + ",".join(sorted(s.lower() for s in cluster.bootstrap_servers))


def lock_name(key: str) -> str:
    """A valid Kubernetes object name for the lock of `key`."""
    return "khp-lock-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def lock_is_stale(lock: ClusterLock, now: datetime, ttl: timedelta = DEFAULT_LOCK_TTL) -> bool:
    return now - lock.renewed_at > ttl


def check_cluster_lock(
    lock: ClusterLock | None, holder: str, now: datetime, ttl: timedelta = DEFAULT_LOCK_TTL
) -> Hold | None:
    """None when the lock is free, ours, or stale; a conflict Hold when another policy holds it."""
    if lock is None or lock.holder == holder or lock_is_stale(lock, now, ttl):
        return None
    what = f"{lock.action}" + (f" {lock.id}" if lock.id else "")
    return Hold(
        WithheldReason.CLUSTER_LOCKED,
        f"conflict: policy {lock.holder} is acting on this Kafka cluster ({what} since {iso(lock.acquired_at)}); "
        "one action per cluster at a time — two policies name the same cluster",
        lock.renewed_at + ttl,
    )
