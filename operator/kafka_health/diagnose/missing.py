"""Findings for what the snapshot could not read: a diagnosis that could not look says so.

Without them a broker whose log dirs could not be read would simply have no disk finding, which
reads as "disk fine". The part names are collect's (`metadata`, `quorum`, `configs:<topic>`,
`offsets:<topic>`, `group:<id>`, `log_dirs:<broker>`, ...).
"""

from __future__ import annotations

from kafka_health.collect import security_errors
from kafka_health.collect.results import ZOOKEEPER_MODE
from kafka_health.models.findings import Finding, Severity, Subject, SubjectKind
from kafka_health.models.snapshot import Missing

# What each part feeds, so the reader knows which findings may be absent for lack of data.
_FEEDS = {
    "metadata": "every check",
    "partitions": "the replication and leadership checks",
    "broker_registrations": "the broker checks",
    "quorum": "the quorum checks",
    "configs": "the min-ISR and durability checks",
    "offsets": "the lag checks",
    "groups": "the lag and rebalance checks",
    "group": "the lag and rebalance checks",
    "log_dirs": "the disk checks",
    "group_offsets": "the lag checks",
    "eligible_leaders": "how an offline partition comes back",
    "reassignments": "the reassignment checks (a throttle is not judged left behind)",
    "certificates": "the certificate checks",
    "transactions": "the hanging-transaction check",
}
# Checks whose findings claim something of a part beyond their own input ("no reassignment in
# flight"): left out when that part was not read, whose snapshot_incomplete finding says so.
UNJUDGED = {"replication_throttle_left": "reassignments"}
_TOPIC_PARTS = {"partitions", "configs", "offsets", "transactions"}


def _subject(kind: str, detail: str) -> Subject:
    if detail and kind in _TOPIC_PARTS:
        return Subject(kind=SubjectKind.TOPIC, topic=detail)
    if detail and kind in ("group", "group_offsets"):
        return Subject(kind=SubjectKind.GROUP, group=detail)
    if detail.isdigit() and kind == "log_dirs":
        return Subject(kind=SubjectKind.BROKER, broker=int(detail))
    return Subject(kind=SubjectKind.CLUSTER)


# Words of a DescribeQuorum that went unanswered, as the client reports it (a timeout of ours or
# Kafka's, or no leader to forward it to): measured on the testbed with 2 of 3 controllers stopped.
# Compared without case, spaces or underscores (NOT_LEADER_OR_FOLLOWER, NotLeaderOrFollowerError).
_UNANSWERED = ("timedout", "timeout", "notleader", "leadernotavailable", "noleader")


def _unanswered(reason: str) -> bool:
    text = reason.lower().replace("_", "").replace(" ", "")
    return "crashed" not in text and any(word in text for word in _UNANSWERED)


def quorum_unanswered(m: Missing) -> bool:
    """DescribeQuorum went unanswered (timeout / no leader); refusals (authorization, ZooKeeper
    mode) and client crashes are not that."""
    if m.part != "quorum" or m.reason == ZOOKEEPER_MODE or security_errors.kind_of(m.reason) is not None:
        return False
    return _unanswered(m.reason)


# Parts read with kafka-python, which drops a connection whose request timed out and with it every
# other request in flight on it: with a lost quorum they time out beside DescribeQuorum (measured:
# broker_registrations and log_dirs:<N>), so their timeouts do not tell a hanging broker apart.
# `visibility` is derived from the log dirs: when they timed out, it says so, for the same cause.
# `reassignments` (ListPartitionReassignments) is answered by the active controller through the
# broker, so it goes unanswered with the quorum whatever the connection (measured, 2 of 3
# controllers stopped: tests/testbed/test_dedicated_controllers.py). The share and streams groups
# are read with kafka-python too (ListGroups at every broker, then their coordinators), so the
# same holds for them (seen in CI: both timed out beside DescribeQuorum with the quorum lost).
_SAME_CONNECTION = {
    "quorum",
    "broker_registrations",
    "log_dirs",
    "visibility",
    "reassignments",
    "share_groups",
    "streams_groups",
}


def quorum_lost(missing: list[Missing], *, brokers_all_alive: bool) -> Missing | None:
    """The quorum's unanswered part when the rest of the snapshot says the quorum, not a broker,
    is at fault: every registered broker is alive and the brokers answered the other parts in
    time (metadata, else the snapshot is `cluster_unreachable`; offsets, configs, groups). A
    DescribeQuorum sent to a broker that hangs (frozen, dying) is not that: the offsets of the
    partitions it leads time out too, and once it is fenced it is not alive; only a broker frozen
    for less than broker.session.timeout.ms that leads nothing could still look the same, for
    that one cycle."""
    quorum = next((m for m in missing if quorum_unanswered(m)), None)
    if quorum is None or not brokers_all_alive:
        return None
    if any(_unanswered(m.reason) for m in missing if m.part.partition(":")[0] not in _SAME_CONNECTION):
        return None
    return quorum


def visibility_finding(m: Missing, *, hidden: int, visible: int) -> Finding:
    """The `visibility` part as a finding of its own: `hidden` partitions on the brokers' log
    dirs that the principal's metadata leaves out, beside the `visible` ones it reads. Critical
    when at least as many are hidden as are seen (half the cluster or more: a diagnosis of the
    smaller part must not read as the cluster's health); else, and when the totals cannot be
    checked (DescribeLogDirs refused), a warning: never healthy."""
    critical = hidden > 0 and hidden >= visible
    return Finding(
        check="visibility",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        subject=Subject(kind=SubjectKind.CLUSTER),
        message=m.reason[:1].upper() + m.reason[1:],
        evidence={"part": m.part, "hidden_partitions": hidden, "visible_partitions": visible},
        remediation="grant the principal DESCRIBE on TOPIC (and DESCRIBE on CLUSTER), as the ACL table "
        "in docs/policy.md lists",
    )


def missing_findings(
    missing: list[Missing], *, brokers_all_alive: bool = True, hidden: int = 0, visible: int = 0
) -> list[Finding]:
    """A finding per unread part: `quorum_no_leader` (critical) for a quorum that went unanswered
    while everything else answered (`quorum_lost`), `cluster_unreachable` without metadata,
    `visibility` for what the principal may not see (`visibility_finding`; `hidden` and `visible`
    count the partitions), `snapshot_incomplete` (warning) for any other part."""
    lost = quorum_lost(missing, brokers_all_alive=brokers_all_alive)
    out = []
    for m in missing:
        kind, _, detail = m.part.partition(":")
        feeds = _FEEDS.get(kind, "some checks")
        if kind == "visibility":
            out.append(visibility_finding(m, hidden=hidden, visible=visible))
            continue
        if m is lost:
            out.append(
                Finding(
                    check="quorum_no_leader",
                    severity=Severity.CRITICAL,
                    subject=Subject(kind=SubjectKind.CLUSTER),
                    message=(
                        f"The KRaft controller quorum did not answer ({m.reason}) while the brokers did: it "
                        "most likely has no leader (a majority of controllers down or cut off). No metadata "
                        "change (leader election, ISR change, topic or config change) can happen meanwhile."
                    ),
                    evidence={"part": m.part, "reason": m.reason, "leader_id": None},
                    remediation="bring a majority of the controller voters back (kafka-metadata-quorum describe "
                    "--status against a controller shows which answer)",
                )
            )
            continue
        if kind == "metadata":
            out.append(
                Finding(
                    check="cluster_unreachable",
                    severity=Severity.CRITICAL,
                    subject=Subject(kind=SubjectKind.CLUSTER),
                    message=f"Could not read the cluster metadata ({m.reason}): nothing was diagnosed.",
                    evidence={"part": m.part, "reason": m.reason},
                    remediation="check the bootstrap servers, the network path and the credentials",
                )
            )
            continue
        out.append(
            Finding(
                check="snapshot_incomplete",
                severity=Severity.WARNING,
                subject=_subject(kind, detail),
                message=f"Could not read {m.part} ({m.reason}); {feeds} could not see it.",
                evidence={"part": m.part, "reason": m.reason}
                | ({"partitions": ",".join(map(str, m.partitions))} if m.partitions else {}),
            )
        )
    return out


def judged(findings: list[Finding], missing: list[Missing]) -> list[Finding]:
    """`findings` without those `UNJUDGED` for lack of their part."""
    unread = {m.part for m in missing}
    return [f for f in findings if UNJUDGED.get(f.check) not in unread]
