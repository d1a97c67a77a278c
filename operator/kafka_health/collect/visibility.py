"""What the principal cannot see: the partitions on the brokers that its metadata leaves out.

Kafka answers a Metadata request with only the topics the principal may DESCRIBE, and says
nothing of the others: a principal without DESCRIBE on TOPIC sees "0 topics" on a full cluster,
and every check is blind to what it cannot see. DescribeLogDirs, asked of each broker, needs
only DESCRIBE on CLUSTER and lists every partition replica the broker holds, whatever the topic
ACLs: the topics it lists that the metadata does not are hidden from this principal. The log
dirs are the ones `collect_snapshot` reads anyway (`KafkaAdmin.describe_log_dirs`, the one
place that call is made); `read_visibility` reads them for callers without a snapshot (the
remediation commands).

Compared per topic (an ACL is per topic, and a partition added between the two reads must not
count as hidden). What is left out, and why:
- replicas Kafka marks `is_future_key`: the `-future` copy an intra-broker move writes beside
  the current replica (`parse.log_dirs` drops them; the current one is listed);
- logs of a deleted topic: KRaft brokers rename them `-delete` (and stray ones `-stray`) and take
  them out of the logs DescribeLogDirs lists as soon as they apply the deletion, so they are not
  in the answer; only a broker that has not yet applied a deletion the metadata already shows
  could list one, for that instant;
- `__cluster_metadata`: the KRaft metadata log, never in a Metadata answer to any principal;
- a topic created between the metadata read and the log-dir read: `read_visibility` (and
  `collect_snapshot`) read the metadata once more when something looks hidden, and a topic in
  either read is visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin, Partial
from kafka_health.models.snapshot import LogDir

NEVER_IN_METADATA = frozenset({"__cluster_metadata"})
"""Topics a log dir may hold that no Metadata answer lists, whatever the ACLs."""

DENIED_LOG_DIRS = (
    "the principal lacks DESCRIBE on CLUSTER kafka-cluster, so DescribeLogDirs is denied: the totals "
    "cannot be checked (topics it may not DESCRIBE are left out of the metadata without a word, so "
    "what was read may be only part of the cluster; grant it: kafka-acls --add --allow-principal "
    "User:<name> --operation Describe --cluster; see the ACL table in docs/policy.md)"
)
GRANT_TOPIC = (
    "grant it: kafka-acls --add --allow-principal User:<name> --operation Describe --topic '*' "
    "(or each topic); see the ACL table in docs/policy.md"
)
MAX_NAMED_TOPICS = 5


@dataclass(frozen=True)
class Visibility:
    """The comparison of the brokers' log dirs with what this principal's metadata shows."""

    hidden: dict[str, tuple[int, ...]]
    """Topic -> partitions on the brokers' log dirs but absent from this principal's metadata."""
    unchecked: str | None
    """None when the comparison was made; else why it could not be (no log dir could be read)."""
    brokers_unread: tuple[int, ...]
    """Brokers whose log dirs could not be read: what they alone hold was not compared."""

    def hidden_partition_count(self) -> int:
        return sum(len(ps) for ps in self.hidden.values())

    @property
    def denied(self) -> bool:
        """The view is partial because of authorization: something is hidden, or the log dirs
        that would tell were refused."""
        return bool(self.hidden) or (self.unchecked is not None and self.unchecked == DENIED_LOG_DIRS)

    @property
    def complete(self) -> bool:
        """Every partition on every broker asked is visible."""
        return not self.hidden and self.unchecked is None and not self.brokers_unread

    def message(self) -> str:
        """The sentence for the user: what is hidden (or why it cannot be told) and the grant.
        Starts with "authorization denied:" when an ACL is the cause (`security_errors.kind_of`)."""
        if self.unchecked is not None:
            prefix = "authorization denied: " if self.unchecked == DENIED_LOG_DIRS else ""
            return prefix + self.unchecked
        if not self.hidden:
            return "every partition on the brokers' log dirs is visible" + _partial_note(
                self.brokers_unread, "nothing is hidden on the brokers read"
            )
        n, m = self.hidden_partition_count(), len(self.hidden)
        names = sorted(self.hidden)
        named = ", ".join(names[:MAX_NAMED_TOPICS]) + (
            f" and {m - MAX_NAMED_TOPICS} more" if m > MAX_NAMED_TOPICS else ""
        )
        return (
            f"authorization denied: {_plural(n, 'partition')} in {_plural(m, 'topic')} on the brokers are "
            f"hidden from this principal ({named}): it lacks DESCRIBE on TOPIC, so Kafka leaves them out "
            "of the metadata: every check is blind to them, and to consumer groups' committed offsets on "
            f"them ({GRANT_TOPIC})" + _partial_note(self.brokers_unread, "the count may be low")
        )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _partial_note(unread: tuple[int, ...], what: str) -> str:
    if not unread:
        return ""
    return f"; the log dirs of broker(s) {', '.join(map(str, unread))} could not be read: {what}"


def _is_denied(reason: str) -> bool:
    """An authorization failure: a Kafka authorization error code, or this module's own message
    for one (`security_errors.Kind.AUTHORIZATION`'s phrase, which `authorization_denied` writes)."""
    return security_errors.is_authorization_failure(reason) or security_errors.Kind.AUTHORIZATION in reason


def compare(
    replicas: Mapping[int, Mapping[str, Iterable[int]]],
    visible_topics: Iterable[str],
    errors: Mapping[int, str],
) -> Visibility:
    """Pure: the visibility from each broker's current replicas (topic -> partitions, future
    replicas already left out), the topics the principal's metadata shows, and the brokers whose
    log dirs could not be read (broker -> reason).

    With no broker read at all the totals cannot be checked: because of DESCRIBE on CLUSTER when
    any broker refused for authorization, else for the first broker's reason (or no broker)."""
    unread = tuple(sorted(errors))
    if not replicas:
        if any(_is_denied(r) for r in errors.values()):
            return Visibility({}, DENIED_LOG_DIRS, unread)
        if errors:
            first = errors[unread[0]]
            why = f"no broker's log dirs could be read (broker {unread[0]}: {first}): the totals cannot be checked"
        else:
            why = "no broker was asked for its log dirs (none is alive): the totals cannot be checked"
        return Visibility({}, why, unread)
    visible = set(visible_topics)
    hidden: dict[str, set[int]] = {}
    for topics in replicas.values():
        for topic, partitions in topics.items():
            if not topic or topic in visible or topic in NEVER_IN_METADATA:
                continue
            hidden.setdefault(topic, set()).update(int(p) for p in partitions)
    return Visibility(
        {t: tuple(sorted(ps)) for t, ps in sorted(hidden.items()) if ps},
        None,
        tuple(b for b in unread if b not in replicas),
    )


def from_log_dirs(raw: Partial[int, list[LogDir]], visible_topics: Iterable[str]) -> Visibility:
    """`compare` over a `KafkaAdmin.describe_log_dirs` answer. A broker answering with a log
    dir in error still counts as read for its other dirs (the failed dir is the disk check's)."""
    replicas: dict[int, dict[str, list[int]]] = {}
    for broker, dirs in raw.values.items():
        merged: dict[str, list[int]] = replicas.setdefault(broker, {})
        for d in dirs:
            for topic, sizes in d.sizes.items():
                merged.setdefault(topic, []).extend(sorted(sizes))
    return compare(replicas, visible_topics, raw.errors)


def recheck(found: Visibility, admin: KafkaAdmin) -> Visibility:
    """`found` without the topics a fresh metadata read now shows (created between the reads).
    A failed re-read keeps `found`: the first read stands."""
    if not found.hidden:
        return found
    try:
        md = admin.metadata()
    except AdminCallError:
        return found
    now = {p.topic for p in md.partitions} | set(md.topic_errors)
    hidden = {t: ps for t, ps in found.hidden.items() if t not in now}
    return Visibility(hidden, found.unchecked, found.brokers_unread)


def read_visibility(admin: KafkaAdmin, visible_topics: Iterable[str], brokers: Iterable[int]) -> Visibility:
    """Read the log dirs of `brokers` (DescribeLogDirs: DESCRIBE on CLUSTER) and compare them
    with `visible_topics` (the topics this principal's metadata lists, with or without error)."""
    raw = admin.describe_log_dirs(brokers)
    return recheck(from_log_dirs(raw, visible_topics), admin)
