"""The kinds of group whose offsets a reset moves, and how the executor reads and alters each: a
consumer group (DescribeGroups, OffsetFetch, AlterConsumerGroupOffsets) or a share group (KIP-932:
ShareGroupDescribe, DescribeShareGroupOffsets and AlterShareGroupOffsets, whose "committed
offsets" are its share-partition start offsets). The executor (`offset_reset.py`) takes one and
is otherwise the same for both: the plan, the saved offsets, the Empty check, the read-back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.collect.results import Partial
from kafka_health.models.snapshot import ConsumerGroup
from kafka_health.plan.offset_reset_plan import EMPTY_STATES, share_group_refusal
from kafka_health.remediate import access
from kafka_health.remediate.kafka_errors import KafkaErrorCode, code_of
from kafka_health.remediate.offset_live import read_group
from kafka_health.remediate.offset_outcome import Key


@dataclass(frozen=True)
class GroupKind:
    """How the executor reads and alters the offsets of one kind of group."""

    name: str
    """"consumer" or "share" (as `SavedOffsets.kind` records it)."""
    alter_call: str
    """The admin call that alters its offsets, as `security_errors` names it."""
    read: Callable[[KafkaAdmin, str], ConsumerGroup | None]
    """The group now with its offsets; None: no such group. Raises `access.NotVisible` when the
    principal may not DESCRIBE it, AdminCallError when it could not be read."""
    refusal: Callable[[str, ConsumerGroup | None], str | None]
    """Why a reset may not run on the group as read (None: it may)."""
    not_empty: Callable[[KafkaAdmin, str], str | None]
    """The executor's live check right before it saves and alters: None, or why not (raises
    AdminCallError when the group cannot be read)."""
    committed: Callable[[KafkaAdmin, str], dict[Key, int | None]]
    """The group's committed (share: start) offsets now. Raises AdminCallError."""
    alter: Callable[[KafkaAdmin, str, dict[Key, int]], Partial[Key, int]]
    member_code: KafkaErrorCode
    """Kafka's answer to an alter while the group has members."""

    def has_members(self, reason: str | None) -> bool:
        return code_of(reason) is self.member_code


def consumer_refusal(group_id: str, group: ConsumerGroup | None) -> str | None:
    """A consumer group may be reset while it has no members (Empty, or not existing yet)."""
    if group is None or (group.state in EMPTY_STATES and group.members == 0):
        return None
    return (
        f"group {group.group_id} is {group.state} with {group.members} member(s): offsets can only be reset "
        "while it is Empty; stop its consumers first"
    )


def _consumer_not_empty(admin: KafkaAdmin, group: str) -> str | None:
    """None when the group is Empty (or unknown: no members); else why not. Raises AdminCallError."""
    described = admin.describe_groups([group])
    if group in described.errors:
        raise AdminCallError("describe_consumer_groups", described.errors[group])
    desc = described.values.get(group)
    if desc is None or (desc.state in EMPTY_STATES and not desc.member_ids):
        return None
    return f"group {group} is {desc.state} with {len(desc.member_ids)} member(s): stop its consumers first"


def _consumer_committed(admin: KafkaAdmin, group: str) -> dict[Key, int | None]:
    read = admin.group_offsets([group])
    if group in read.errors:
        raise AdminCallError("list_consumer_group_offsets", read.errors[group])
    return {(o.topic, o.partition): o.committed_offset for o in read.values.get(group, [])}


def read_share_group(admin: KafkaAdmin, group: str) -> ConsumerGroup | None:
    """Share group `group` as its coordinator describes it now, with its start offsets (None: no
    share group of that id is listed: it does not exist, or the principal may not DESCRIBE it).
    Raises `access.NotVisible` when Kafka refused to describe it for an ACL, AdminCallError when
    it could not be read otherwise."""
    read = admin.share_groups()
    if group in read.errors:
        if (denied := access.group_denied(group, read.errors[group])) is not None:
            raise access.NotVisible([denied])
        raise AdminCallError("share_groups", read.errors[group])
    return read.values.get(group)


def _share_live(admin: KafkaAdmin, group: str) -> ConsumerGroup | None:
    """`read_share_group` for the executor: a group hidden from the principal is an AdminCallError."""
    try:
        return read_share_group(admin, group)
    except access.NotVisible as exc:
        raise AdminCallError("share_groups", "; ".join(exc.problems)) from None


def _share_committed(admin: KafkaAdmin, group: str) -> dict[Key, int | None]:
    read = _share_live(admin, group)
    return {(o.topic, o.partition): o.committed_offset for o in read.offsets} if read else {}


CONSUMER = GroupKind(
    name="consumer",
    alter_call="alter_consumer_group_offsets",
    read=read_group,
    refusal=consumer_refusal,
    not_empty=_consumer_not_empty,
    committed=_consumer_committed,
    alter=lambda admin, group, targets: admin.alter_group_offsets(group, targets),
    member_code=KafkaErrorCode.UNKNOWN_MEMBER_ID,
)
SHARE = GroupKind(
    name="share",
    alter_call="alter_share_group_offsets",
    read=read_share_group,
    refusal=share_group_refusal,
    not_empty=lambda admin, group: share_group_refusal(group, _share_live(admin, group)),
    committed=_share_committed,
    alter=lambda admin, group, targets: admin.alter_share_group_offsets(group, targets),
    member_code=KafkaErrorCode.NON_EMPTY_GROUP,
)
KINDS = {kind.name: kind for kind in (CONSUMER, SHARE)}
