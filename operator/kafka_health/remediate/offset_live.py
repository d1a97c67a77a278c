"""The live reads an offset reset is planned on: the group as Kafka describes it now, and the
plan made on state read just for one request (`plan_offset_reset`). Split from `offset_reset.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.snapshot import group as make_group
from kafka_health.models.policy import OffsetResetRequest, epoch_millis_at_or_after
from kafka_health.models.snapshot import ClusterSnapshot, ConsumerGroup
from kafka_health.plan.offset_reset_plan import OffsetResetPlan, plan_offset_reset, target_timestamp
from kafka_health.remediate import access


def read_group(admin: KafkaAdmin, group: str) -> ConsumerGroup | None:
    """The group as Kafka describes it now, with its committed offsets (None: no such group).
    Raises `access.NotVisible` when the principal may not DESCRIBE the group (Kafka answers
    GROUP_AUTHORIZATION_FAILED), AdminCallError when it could not be read otherwise."""
    described = admin.describe_groups([group])
    committed = admin.group_offsets([group])
    for part in (described.errors, committed.errors):
        if group in part:
            if (denied := access.group_denied(group, part[group])) is not None:
                raise access.NotVisible([denied])
            raise AdminCallError("group", part[group])
    desc = described.values.get(group)
    if desc is None or (desc.state == "Dead" and not desc.member_ids):
        return None
    return make_group(desc, committed.values.get(group, []))


def plan_live(
    admin: KafkaAdmin,
    request: OffsetResetRequest,
    now: datetime,
    read: Callable[[KafkaAdmin, str], ConsumerGroup | None] = read_group,
) -> tuple[OffsetResetPlan, ConsumerGroup | None]:
    """`plan_offset_reset` on state read live now, just for this request (the named topics, their
    offsets, the group, and ListOffsets by time for toDatetime/byDuration); and the group read.
    Raises AdminCallError when the cluster cannot be read, `access.NotVisible` when a named
    topic or the group is hidden from the principal (or a named topic does not exist). `read`:
    how the group is read (a share group: `offset_groups.read_share_group`)."""
    md = admin.metadata()
    named = set(request.topics or []) | {p.topic for p in request.partitions or []}
    check = access.check_named_topics(admin, named, {p.topic for p in md.partitions})
    if not check.ok:
        raise access.NotVisible(check.problems())
    partitions = [p for p in md.partitions if p.topic in named]
    keys = [(p.topic, p.partition) for p in partitions]
    offsets = admin.list_offsets(keys)
    group = read(admin, request.group)
    snapshot = ClusterSnapshot(
        cluster="live",
        taken_at=now,
        brokers=md.brokers,
        partitions=partitions,
        offsets=[offsets.values[k] for k in sorted(offsets.values)],
        groups=[group] if group else [],
    )
    lookups = None
    ts = target_timestamp(request, now)
    if ts is not None:
        lookups = admin.offsets_for_times(keys, epoch_millis_at_or_after(ts)).values
    return plan_offset_reset(request, snapshot, now=now, offsets_for_times=lookups), group
