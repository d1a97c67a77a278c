"""Approval: plans get a deterministic id; a plan runs once that exact id is approved.

The id is a digest of what the plan does, so the same plan keeps its id across cycles (an
approval stays valid) and a changed plan gets a new one (an approval never covers something
the approver did not see). An id already in the action history gets a suffix (-2, -3, ...):
each approval is used once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_health.models.policy import (
    ANNOTATION_APPROVE_PLAN,
    ActionRecord,
    RemediationSpec,
    WithheldReason,
)
from kafka_health.plan.hold import Hold


def plan_digest(content: Mapping[str, Any]) -> str:
    """10 hex digits of SHA-256 over canonical JSON of `content`."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def plan_id(prefix: str, content: Mapping[str, Any], history: Iterable[ActionRecord] | None = None) -> str:
    """`<prefix>-<digest>`, suffixed -2, -3, ... when history already used the id."""
    base = f"{prefix}-{plan_digest(content)}"
    used = {r.plan_id for r in history or []}
    if base not in used:
        return base
    n = 2
    while f"{base}-{n}" in used:
        n += 1
    return f"{base}-{n}"


def approvals(remediation: RemediationSpec, annotations: Mapping[str, str]) -> set[str]:
    """Plan ids approved by the spec (GitOps) or the annotation (kubectl)."""
    out = set()
    if remediation.approved_plan_id:
        out.add(remediation.approved_plan_id)
    value = annotations.get(ANNOTATION_APPROVE_PLAN, "").strip()
    if value:
        out.add(value)
    return out


def check_approval(required: bool, planned_id: str, approved: set[str]) -> Hold | None:
    """None when approval is not required or `planned_id` is approved."""
    if not required or planned_id in approved:
        return None
    return Hold(
        WithheldReason.AWAITING_APPROVAL,
        f"plan {planned_id} awaits approval: kubectl annotate khp <name> {ANNOTATION_APPROVE_PLAN}={planned_id} "
        f"--overwrite, or set spec.remediation.approvedPlanId: {planned_id}",
    )
