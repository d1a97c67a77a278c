"""A cycle's status writes: compare-and-swap on the version the cycle read, never laid over
another writer's newer remediation progress.

One `StatusWriter` per read-modify-write (a cycle, a plan between cycles); the caller holds the
policy's status lock for its whole life (the roll driver takes the same lock for its writes).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kafka_health.k8s.client import K8s, K8sError
from kafka_health.models.policy import CurrentRemediation, KafkaHealthPolicyStatus, parse_status
from kafka_health.report.status import status_patch

log = logging.getLogger(__name__)


@dataclass
class StatusWriter:
    """Writes one policy's status over the version read (`read_from`)."""

    k8s: K8s
    namespace: str
    name: str
    version: str | None = None
    """resourceVersion of the status read (the writes are compare-and-swap on it)."""
    base: CurrentRemediation | None = None
    """status.currentRemediation as read or last written."""
    stale: bool = False
    """Another process wrote remediation progress since the read: nothing more is written."""

    def read_from(self, stored: dict[str, Any]) -> KafkaHealthPolicyStatus:
        """The stored policy these writes build on; its status, parsed."""
        status = parse_status(stored.get("status"))
        self.version = (stored.get("metadata") or {}).get("resourceVersion")
        self.base = status.current_remediation
        self.stale = False
        return status

    def write(self, status: KafkaHealthPolicyStatus) -> None:
        """Write status now (inline executors call this after every step). When the policy
        changed since the read: written again over the new version if the remediation in flight
        is still the one read (a spec edit, Kopf's own annotations); dropped, with the later
        writes, when another replica's remediation progress is there (two replicas briefly
        active around a peering change): never laid over newer progress. The next cycle reads
        again."""
        if self.stale:
            return
        for _ in range(3):
            try:
                self.version = self.k8s.patch_policy_status(
                    self.namespace, self.name, status_patch(status), self.version
                )
                self.base = status.current_remediation
                return
            except K8sError as exc:
                if exc.status != 409:
                    if exc.status != 404:
                        log.warning("status of %s/%s not written: %s", self.namespace, self.name, exc)
                    return
            ours = self._still_ours()
            if ours is None:
                return
            if not ours:
                break
        self.stale = True
        log.info(
            "status of %s/%s: another writer's remediation progress is newer; not written this cycle",
            self.namespace,
            self.name,
        )

    def _still_ours(self) -> bool | None:
        """After a conflict: True when the remediation in flight is still the one read (the new
        version is taken), False when another writer's progress is there, None when the policy
        cannot be read or is gone (this write is given up)."""
        try:
            stored = self.k8s.read_policy(self.namespace, self.name)
        except K8sError as exc:
            log.warning("status of %s/%s not written: %s", self.namespace, self.name, exc)
            return None
        if stored is None:
            return None
        if parse_status(stored.get("status")).current_remediation != self.base:
            return False
        self.version = (stored.get("metadata") or {}).get("resourceVersion")
        return True
