"""Since when each consumer-group member has had an assignment unlike its target (KIP-848).

Kafka says which partitions a consumer-protocol member owns and which its coordinator wants it
to own, never since when they differ: a member mid-rebalance differs for a moment, a stuck one
for good. The history tells them apart. Each recorded snapshot's reconciling members are kept in
`<root>/latest/cluster=<name>/reconciling.json` with the time each was first seen reconciling;
the next recorded snapshot carries that time over for a member still reconciling (same group,
same member id) and starts it anew for a member that was not. A member that matched its target,
left, or whose group went unread in between starts again: the run of samples is unbroken or
it is not counted (between two recorded snapshots, the member is taken to have stayed as both
saw it, as every history window assumes).

A snapshot not recorded in a history keeps `mismatch_since` None: how long is not known, so
`reconciliation_stuck` does not judge it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from kafka_health.models.snapshot import ClusterSnapshot

RECONCILING_FILE = "reconciling.json"

MemberKey = tuple[str, str]  # (group id, member id)


def carry(previous: Mapping[MemberKey, datetime], snapshot: ClusterSnapshot) -> dict[MemberKey, datetime]:
    """Set `mismatch_since` on every reconciling member of `snapshot`: its time in `previous`
    (the members reconciling in the previous recorded snapshot) when there, else the snapshot's
    own time. Returns the record for the next snapshot: the reconciling members and their times."""
    now: dict[MemberKey, datetime] = {}
    for group in snapshot.groups:
        for member in group.member_details:
            if not member.reconciling:
                member.mismatch_since = None
                continue
            since = previous.get((group.group_id, member.member_id), snapshot.taken_at)
            member.mismatch_since = since
            now[(group.group_id, member.member_id)] = since
    return now


def load(path: Path) -> dict[MemberKey, datetime]:
    """The record `save` wrote (none yet: empty)."""
    if not path.exists():
        return {}
    rows = json.loads(path.read_text()).get("members", [])
    return {(r["group_id"], r["member_id"]): datetime.fromisoformat(r["since"]) for r in rows}


def dumps(record: Mapping[MemberKey, datetime], taken_at: datetime) -> str:
    """The record as the JSON `load` reads (members sorted, so equal records are equal files)."""
    rows = [{"group_id": g, "member_id": m, "since": record[(g, m)].isoformat()} for g, m in sorted(record)]
    return json.dumps({"taken_at": taken_at.isoformat(), "members": rows})
