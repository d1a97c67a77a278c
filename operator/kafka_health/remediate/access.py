"""What a remediation acts on, checked for what the principal cannot see, before it acts.

Kafka hides what a principal may not DESCRIBE: the Metadata of all topics leaves such a topic
out, and an OffsetFetch of all a group's offsets leaves out its partitions. A remediation that
trusted that view would report "0 partitions to elect" or "topic does not exist" while the
brokers hold partitions it never saw. So, before acting:

- a topic named on the command line (or in a request) that is not in the metadata read is
  described by name: Kafka answers TOPIC_AUTHORIZATION_FAILED when the principal may not
  DESCRIBE it (an authorization error naming the ACL, never "does not exist"), and
  UNKNOWN_TOPIC_OR_PART only when it does not exist;
- a group whose read is refused with GROUP_AUTHORIZATION_FAILED is an authorization error
  naming DESCRIBE on the GROUP;
- an action over every partition (an election of all topics, a roll) first compares what the
  principal sees with what the brokers hold (`collect.visibility`, DescribeLogDirs per broker,
  which needs only DESCRIBE on CLUSTER): anything hidden, or totals that cannot be checked,
  refuse the action with that message.

Errors are matched by Kafka's error code (`kafka_errors.code_of`: the code that heads each
reason the admin calls return, e.g. "TOPIC_AUTHORIZATION_FAILED: …"), never by the wording after it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import ClusterMetadata, KafkaAdmin
from kafka_health.collect.visibility import read_visibility
from kafka_health.remediate.kafka_errors import KafkaErrorCode, code_of

TOPIC_AUTHORIZATION_FAILED = "TOPIC_AUTHORIZATION_FAILED"


def topic_denied(topic: str) -> str:
    """The principal lacks DESCRIBE on this topic: the message with the grant."""
    message = security_errors.authorization_denied(f"partitions:{topic}", TOPIC_AUTHORIZATION_FAILED, topic)
    assert message is not None
    return message


def group_denied(group: str, reason: str) -> str | None:
    """The message naming DESCRIBE on GROUP `group` when `reason` is GROUP_AUTHORIZATION_FAILED
    (a group read: DescribeGroups or OffsetFetch); None for any other error."""
    if code_of(reason) is not KafkaErrorCode.GROUP_AUTHORIZATION_FAILED:
        return None
    return security_errors.authorization_denied(f"group:{group}", reason)


class NotVisible(Exception):
    """What a remediation acts on is hidden from the principal (or does not exist): `problems`,
    one message each, the ACL and its grant named. Nothing was changed."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class TopicCheck:
    """Named topics the metadata read did not list, sorted by why."""

    denied: list[str] = field(default_factory=list)
    """Topics the principal may not DESCRIBE (Kafka answered TOPIC_AUTHORIZATION_FAILED)."""
    unknown: list[str] = field(default_factory=list)
    """Topics that do not exist (UNKNOWN_TOPIC_OR_PART)."""
    unread: list[str] = field(default_factory=list)
    """Why another topic could not be told apart ("topic T: reason")."""

    @property
    def ok(self) -> bool:
        return not (self.denied or self.unknown or self.unread)

    def problems(self) -> list[str]:
        """One message per problem: each denied topic with its grant first, then the rest."""
        out = [topic_denied(t) for t in self.denied]
        if self.unknown:
            out.append(f"topic(s) not found: {', '.join(self.unknown)}")
        out += self.unread
        return out


def check_named_topics(admin: KafkaAdmin, named: Iterable[str], listed: Iterable[str]) -> TopicCheck:
    """Describe, by name, each of `named` that the metadata read (`listed`) left out; see the
    module docstring. Raises nothing for a topic: a failed call is reported per topic."""
    absent = sorted(set(named) - set(listed))
    check = TopicCheck()
    if not absent:
        return check
    answer = admin.describe_topics(absent)
    for topic in absent:
        reason = answer.errors.get(topic)
        code = code_of(reason)
        if reason is None:
            check.unread.append(
                f"topic {topic} was not in the metadata read a moment before (created since?): run again"
            )
        elif code is KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED:
            check.denied.append(topic)
        elif code is KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            check.unknown.append(topic)
        else:
            check.unread.append(f"topic {topic} could not be described: {reason}")
    return check


def hidden_refusal(admin: KafkaAdmin, md: ClusterMetadata) -> str | None:
    """`hidden_in` for the topics (with or without error) and the brokers of a Metadata answer."""
    listed = {p.topic for p in md.partitions} | set(md.topic_errors)
    return hidden_in(admin, listed, [b.id for b in md.brokers])


def hidden_in(admin: KafkaAdmin, listed_topics: Iterable[str], broker_ids: Iterable[int]) -> str | None:
    """Why an action over every partition must not run, or None when the principal sees every
    partition the brokers hold (`collect.visibility`): some are hidden (it lacks DESCRIBE on
    their topics), the totals cannot be checked (it lacks DESCRIBE on CLUSTER), or a broker's log
    dirs were not read (what only it holds may be hidden)."""
    visibility = read_visibility(admin, sorted(set(listed_topics)), sorted(set(broker_ids)))
    if visibility.complete:
        return None
    if visibility.hidden or visibility.unchecked is not None:
        return visibility.message()
    unread = ", ".join(map(str, visibility.brokers_unread))
    return (
        f"the log dirs of broker(s) {unread} could not be read, so whether partitions only they hold "
        "are hidden from this principal cannot be checked (DescribeLogDirs needs DESCRIBE on CLUSTER)"
    )
