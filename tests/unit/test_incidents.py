"""Grouping findings into incidents (pure logic, hand-built findings; no Spark, no Kafka)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from kafka_health.diagnose.incidents import group_incidents, incidents_of
from kafka_health.models.findings import (
    MAX_INCIDENT_PARTITIONS,
    Diagnosis,
    Finding,
    Incident,
    IncidentKind,
    PartitionRef,
    Severity,
    Subject,
    SubjectKind,
)
from kafka_health.models.snapshot import (
    Broker,
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    Partition,
)

T0 = datetime(2026, 11, 23, 7, 30, tzinfo=UTC)
W, C, INFO = Severity.WARNING, Severity.CRITICAL, Severity.INFO


def finding(
    check: str,
    severity: Severity = W,
    *,
    broker: int | None = None,
    topic: str | None = None,
    partition: int | None = None,
    group: str | None = None,
    remediation: str | None = None,
    **evidence: float | int | str | None,
) -> Finding:
    if partition is not None:
        kind = SubjectKind.PARTITION
    elif topic is not None:
        kind = SubjectKind.TOPIC
    elif group is not None:
        kind = SubjectKind.GROUP
    elif broker is not None:
        kind = SubjectKind.BROKER
    else:
        kind = SubjectKind.CLUSTER
    return Finding(
        check=check,
        severity=severity,
        subject=Subject(kind=kind, broker=broker, topic=topic, partition=partition, group=group),
        message=f"{check} message",
        evidence=evidence,
        remediation=remediation,
    )


def broker_missing(b: int) -> Finding:
    return finding("broker_missing", C, broker=b, fenced=1, replicas=5, remediation=f"start broker {b}")


def urp(topic: str, p: int, out: str, severity: Severity = W) -> Finding:
    return finding(
        "under_replicated", severity, topic=topic, partition=p, out_of_sync=out, replicas="0,1,2", leader=0
    )


def at_min(topic: str, p: int, out: str, severity: Severity = W) -> Finding:
    return finding("at_min_isr", severity, topic=topic, partition=p, out_of_sync=out, leader=0)


def offline(topic: str, p: int, replicas: str) -> Finding:
    return finding("offline_partition", C, topic=topic, partition=p, replicas=replicas, out_of_sync="none")


def by_id(incidents: list[Incident]) -> dict[str, Incident]:
    return {i.id: i for i in incidents}


def assert_each_finding_once(findings: list[Finding], incidents: list[Incident]) -> None:
    members = Counter(id(f) for i in incidents for f in i.findings)
    assert members == Counter(id(f) for f in findings)
    assert sum(len(i.findings) for i in incidents) == len(findings)


def test_a_down_broker_absorbs_its_partitions_quorum_log_dirs_and_leader_skew() -> None:
    findings = [
        broker_missing(2),
        *[urp("orders", p, "2") for p in range(6)],
        *[at_min("orders", p, "2") for p in range(6)],
        offline("rf1", 0, "2"),
        finding("under_min_isr", C, topic="rf1", partition=0, out_of_sync="none", replicas="2"),
        finding("quorum_voter_lagging", W, broker=2, lag=100),
        finding("snapshot_incomplete", W, broker=2, part="log_dirs:2", reason="fenced"),
        finding("leader_skew", W, leaders_per_broker="0:7,1:5"),
    ]
    incidents = group_incidents(findings)
    assert [i.id for i in incidents] == ["broker_down:2"]
    (down,) = incidents
    assert down.kind is IncidentKind.BROKER_DOWN
    assert down.severity is C
    assert down.subject == Subject(kind=SubjectKind.BROKER, broker=2)
    assert down.title.startswith("Broker 2 is fenced")
    assert down.action is None and "does not start brokers" in down.remediation
    # Without a snapshot its partitions are those its findings name.
    assert down.partitions == [PartitionRef(topic="orders", partition=p) for p in range(6)] + [
        PartitionRef(topic="rf1", partition=0)
    ]
    assert down.partitions_total == 7
    assert_each_finding_once(findings, incidents)


def test_two_down_brokers_share_a_partition_finding_without_counting_it_twice() -> None:
    findings = [broker_missing(1), broker_missing(2), urp("orders", 0, "1,2"), urp("orders", 1, "2")]
    incidents = by_id(group_incidents(findings))
    assert set(incidents) == {"broker_down:1", "broker_down:2"}
    assert [
        f.subject.partition for f in incidents["broker_down:1"].findings if f.check == "under_replicated"
    ] == [0]
    assert [
        f.subject.partition for f in incidents["broker_down:2"].findings if f.check == "under_replicated"
    ] == [1]
    assert_each_finding_once(findings, list(incidents.values()))


def snapshot(alive: set[int], partitions: list[Partition], groups: list[ConsumerGroup]) -> ClusterSnapshot:
    return ClusterSnapshot(
        cluster="c",
        taken_at=T0,
        brokers=[
            Broker(id=b, host="h", port=9092 + b, alive=b in alive, fenced=b not in alive) for b in range(3)
        ],
        partitions=partitions,
        groups=groups,
    )


def test_with_the_snapshot_a_down_broker_names_every_partition_and_group_it_affects() -> None:
    """Findings are capped per check; the snapshot still gives the whole reach."""
    parts = [
        Partition(topic="orders", partition=p, leader=0, replicas=[2, 0, 1], isr=[0, 1]) for p in range(5)
    ]
    parts += [
        Partition(topic="orders", partition=5, leader=0, replicas=[0, 1, 2], isr=[0, 1, 2]),  # not hit
        Partition(topic="rf1", partition=0, leader=None, replicas=[2], isr=[2]),  # offline, ISR kept
        Partition(topic="other", partition=0, leader=0, replicas=[0, 1], isr=[0]),  # broker 1's problem
    ]
    groups = [
        ConsumerGroup(
            group_id="billing",
            state="Stable",
            offsets=[GroupOffset(topic="orders", partition=3, committed_offset=7)],
        ),
        ConsumerGroup(
            group_id="audit",
            state="Stable",
            offsets=[GroupOffset(topic="orders", partition=5, committed_offset=7)],
        ),
        ConsumerGroup(
            group_id="archive",
            state="Empty",
            offsets=[GroupOffset(topic="rf1", partition=0, committed_offset=1)],
        ),
    ]
    snap = snapshot({0, 1}, parts, groups)
    findings = [
        broker_missing(2),
        urp("orders", 0, "2"),
        urp("orders", 1, "2"),
        finding("under_replicated", W, total=5, listed=2),  # the cap notice
        finding("consumer_lag", W, topic="rf1", partition=0, group="archive", status="STOP"),
        finding("snapshot_incomplete", W, topic="rf1", part="offsets:rf1", reason="offline"),
        finding("under_replicated", W, topic="other", partition=0, out_of_sync="1"),
    ]
    incidents = by_id(group_incidents(findings, snap))
    down = incidents["broker_down:2"]
    assert {str(p) for p in down.partitions} == {f"orders-{p}" for p in range(5)} | {"rf1-0"}
    assert down.partitions_total == 6
    assert down.groups == ["archive", "billing"] and down.groups_total == 2
    assert down.evidence["under_replicated"] == 5 and down.evidence["offline"] == 1
    # The offline partition's lag, its unreadable offsets and the cap notice are the broker's too.
    checks = Counter(f.check for f in down.findings)
    assert checks == {"broker_missing": 1, "under_replicated": 3, "consumer_lag": 1, "snapshot_incomplete": 1}
    assert "broker_out_of_sync:1" in incidents
    assert_each_finding_once(findings, list(incidents.values()))


def test_a_down_broker_says_which_offline_partitions_need_an_unclean_election() -> None:
    """KIP-966: an offline partition with an eligible leader replica (or an ISR member) comes back
    cleanly when it returns; with neither, only an unclean election brings it back."""
    findings = [
        broker_missing(2),
        finding(
            "offline_partition",
            C,
            topic="t",
            partition=0,
            replicas="2,1",
            isr="none",
            out_of_sync="none",
            eligible_leaders="2",
            last_known_elr="none",
        ),
        finding(
            "offline_partition",
            C,
            topic="t",
            partition=1,
            replicas="2",
            isr="2",
            out_of_sync="none",
            eligible_leaders="none",
            last_known_elr="none",
        ),
        finding(
            "offline_partition",
            C,
            topic="t",
            partition=2,
            replicas="2,1",
            isr="none",
            out_of_sync="none",
            eligible_leaders="none",
            last_known_elr="1",
        ),
    ]
    down = by_id(group_incidents(findings))["broker_down:2"]
    assert down.title == (
        "Broker 2 is fenced (registered, not serving): 3 partitions affected, 2 of the listed come back "
        "cleanly when an eligible or in-sync replica returns, 1 only by an unclean election (data loss)."
    )
    # Without an unclean-only partition the title stays as it was.
    clean = by_id(group_incidents(findings[:3]))["broker_down:2"]
    assert clean.title == "Broker 2 is fenced (registered, not serving): 2 partitions affected."


def test_a_never_safe_topic_groups_its_topic_and_partition_findings() -> None:
    findings = [
        finding(
            "min_isr_too_high", W, topic="tight", replication_factor=3, min_insync_replicas=3, partitions=3
        ),
        *[at_min("tight", p, "none", INFO) for p in range(3)],
        finding(
            "low_replication_factor",
            W,
            topic="rf1",
            replication_factor=1,
            min_insync_replicas=1,
            partitions=2,
        ),
        finding(
            "min_isr_too_high", W, topic="rf1", replication_factor=1, min_insync_replicas=1, partitions=2
        ),
        finding("unclean_leader_election", W, topic="rf1"),
        finding("low_min_isr", W, topic="weak", replication_factor=3, min_insync_replicas=1, partitions=1),
    ]
    incidents = by_id(group_incidents(findings))
    assert set(incidents) == {"never_safe_topic:tight", "never_safe_topic:rf1", "topic_durability:weak"}
    tight = incidents["never_safe_topic:tight"]
    assert len(tight.findings) == 4 and tight.severity is W
    assert [str(p) for p in tight.partitions] == ["tight-0", "tight-1", "tight-2"]
    assert "can never be safe" in tight.title and "replication factor 3" in tight.title
    assert {f.check for f in incidents["never_safe_topic:rf1"].findings} == {
        "low_replication_factor",
        "min_isr_too_high",
        "unclean_leader_election",
    }
    assert_each_finding_once(findings, list(incidents.values()))


def test_rf1_alone_makes_a_topic_never_safe() -> None:
    (i,) = group_incidents([finding("low_replication_factor", W, topic="t", replication_factor=1)])
    assert i.id == "never_safe_topic:t"
    (j,) = group_incidents([finding("low_replication_factor", W, topic="t", replication_factor=2)])
    assert j.id == "topic_durability:t"


def test_a_lagging_group_across_partitions_is_one_incident() -> None:
    findings = [
        finding(
            "consumer_lag", W, group="billing", status="STALL", total_lag=300, remediation="fix consumers"
        ),
        *[
            finding("consumer_lag", W, topic="orders", partition=p, group="billing", status="STALL", lag=50)
            for p in range(6)
        ],
        finding("rebalance_storm", W, group="billing"),
        finding(
            "offset_out_of_range", W, topic="orders", partition=1, group="billing", remediation="offset_reset"
        ),
        finding("consumer_lag", C, group="audit", status="STOP"),
    ]
    incidents = by_id(group_incidents(findings))
    assert set(incidents) == {"consumer_group:billing", "consumer_group:audit"}
    billing = incidents["consumer_group:billing"]
    assert len(billing.findings) == 9
    assert billing.subject == Subject(kind=SubjectKind.GROUP, group="billing")
    assert billing.partitions_total == 6 and billing.groups == ["billing"]
    assert "only on request" in billing.remediation and billing.action is None
    assert incidents["consumer_group:audit"].severity is C
    assert_each_finding_once(findings, list(incidents.values()))


def test_unrelated_findings_stay_separate() -> None:
    findings = [
        finding("disk_usage", C, broker=0, percent=93.0),
        finding("disk_time_to_full", W, broker=0, hours_to_full=5.0),
        finding("disk_usage", W, broker=1, percent=81.0),
        finding("quorum_voter_lagging", W, broker=1),
        finding("leader_imbalance", W, broker=2, remediation="preferred_leader_election"),
        finding("leader_flapping", W, topic="orders", partition=0),
        finding("isr_churn", W, broker=1, episodes=4),
        urp("orders", 2, "1"),
        finding("cluster_thing", W),
    ]
    incidents = group_incidents(findings)
    assert [i.id for i in incidents] == [
        "disk:0",  # critical first
        "quorum:cluster",
        "disk:1",
        "broker_out_of_sync:1",
        "leadership:cluster",
        "check:cluster_thing",
        "check:leader_flapping",
    ]
    ids = by_id(incidents)
    assert len(ids["disk:0"].findings) == 2
    assert ids["leadership:cluster"].action == "preferred_leader_election"
    assert {f.check for f in ids["broker_out_of_sync:1"].findings} == {"isr_churn", "under_replicated"}
    assert_each_finding_once(findings, incidents)


def reassigning(topic: str, p: int, adding: str, in_sync: int, throttled: str = "yes") -> Finding:
    return finding(
        "partition_reassigning",
        INFO,
        topic=topic,
        partition=p,
        adding=adding,
        removing="none",
        added_in_sync=in_sync,
        throttled=throttled,
    )


def test_a_reassignment_is_one_incident_and_its_new_replicas_are_no_broker_out_of_sync() -> None:
    """The replicas a reassignment adds are out of sync on purpose: their partition findings join
    `reassignment:cluster`; a partition out of sync on a broker nobody adds stays the broker's."""
    moving = [
        reassigning("orders", 0, "2", 0),
        reassigning("orders", 1, "2", 1),
        reassigning("audit", 0, "2,3", 0, throttled="no"),
    ]
    added = [
        finding(
            "under_replicated", W, topic="orders", partition=0, out_of_sync="2", reassigning="2", leader=0
        ),
        finding("at_min_isr", W, topic="orders", partition=0, out_of_sync="2", reassigning="2", leader=0),
    ]
    other = urp("orders", 5, "2")  # no `reassigning` evidence: broker 2 out of sync there
    findings = [*moving, *added, other]
    ids = by_id(group_incidents(findings))
    assert set(ids) == {"reassignment:cluster", "broker_out_of_sync:2"}
    moves = ids["reassignment:cluster"]
    assert moves.kind is IncidentKind.REASSIGNMENT and moves.severity is W and moves.action is None
    assert len(moves.findings) == 5
    assert moves.title == (
        "3 partitions being reassigned: adding broker(s) 2,3, removing broker(s) none; "
        "1 of 4 new replicas in sync; 2 throttled."
    )
    assert moves.evidence["new_replicas"] == 4 and moves.evidence["throttled_partitions"] == 2
    assert "kafka-reassign-partitions --verify" in moves.remediation
    assert [f.subject.partition for f in ids["broker_out_of_sync:2"].findings] == [5]
    assert_each_finding_once(findings, list(ids.values()))


def test_listener_certificates_are_one_incident_soonest_first() -> None:
    """Expiry per broker, the issuers' mismatch and the brokers whose chain could not be read are
    one `certificates:cluster`, its title naming the soonest ends first; a down broker keeps its own."""
    findings = [
        finding(
            "listener_certificate_expiry", W, broker=0, days_left=19.9, not_after="2026-12-18 07:30:00 UTC"
        ),
        finding(
            "listener_certificate_expiry", C, broker=1, days_left=2.95, not_after="2026-12-01 06:20:00 UTC"
        ),
        finding(
            "listener_certificate_expiry", C, broker=2, days_left=-1.0, not_after="2026-11-22 07:30:00 UTC"
        ),
        finding(
            "listener_certificate_mismatch", W, issuers=2, by_issuer="CN=a: broker(s) 0; CN=b: broker(s) 1,2"
        ),
        finding("snapshot_incomplete", W, part="certificates:3", reason="TLS handshake ... failed"),
        broker_missing(4),
    ]
    ids = by_id(group_incidents(findings))
    assert set(ids) == {"certificates:cluster", "broker_down:4"}
    certs = ids["certificates:cluster"]
    assert certs.kind is IncidentKind.CERTIFICATES and certs.severity is C and certs.action is None
    assert certs.title == (
        "Listener certificates: served certificates ending: broker 2 ended 2026-11-22 07:30:00 UTC, "
        "broker 1 in 3.0 days, broker 0 in 19.9 days; served from 2 issuers; the certificates of 1 broker "
        "not read."
    )
    assert certs.evidence["expiring_brokers"] == 3
    assert_each_finding_once(findings, list(ids.values()))


def test_a_down_broker_claims_a_partition_being_reassigned_onto_it() -> None:
    findings = [
        broker_missing(2),
        reassigning("orders", 0, "2", 0),
        finding(
            "under_replicated", W, topic="orders", partition=0, out_of_sync="2", reassigning="2", leader=0
        ),
    ]
    ids = by_id(group_incidents(findings))
    assert {f.check for f in ids["broker_down:2"].findings} == {"broker_missing", "under_replicated"}
    assert [f.check for f in ids["reassignment:cluster"].findings] == ["partition_reassigning"]


def test_leader_skew_is_leadership_with_no_broker_down() -> None:
    (i,) = group_incidents([finding("leader_skew", W, remediation="preferred_leader_election")])
    assert i.id == "leadership:cluster" and i.action == "preferred_leader_election"


@pytest.mark.parametrize(
    ("severities", "worst"),
    [((INFO,), INFO), ((INFO, W), W), ((W, INFO, C), C), ((C, C), C)],
)
def test_severity_is_the_worst_of_its_members(severities: tuple[Severity, ...], worst: Severity) -> None:
    findings = [urp("orders", p, "1", s) for p, s in enumerate(severities)]
    (i,) = group_incidents(findings)
    assert i.severity is worst


def test_every_finding_is_in_exactly_one_incident_over_a_mix() -> None:
    findings = [
        broker_missing(2),
        *[urp("orders", p, "2") for p in range(3)],
        urp("orders", 3, "0"),
        finding("under_replicated", W, total=900, listed=4),
        finding("min_isr_too_high", C, topic="x", replication_factor=1, min_insync_replicas=2),
        finding("consumer_lag", W, group="g", status="WARN"),
        finding("snapshot_incomplete", W, part="quorum", reason="timeout"),
        finding("snapshot_incomplete", W, part="broker_registrations", reason="timeout"),
        finding("snapshot_incomplete", W, group="g", part="group:g", reason="timeout"),
        finding("cluster_unreachable", C, part="metadata", reason="x"),
        finding("something_new", INFO),
    ]
    incidents = group_incidents(findings)
    assert_each_finding_once(findings, incidents)
    ids = by_id(incidents)
    # The cap notice joins the incident holding most of its check's findings.
    assert any(f.evidence.get("total") == 900 for f in ids["broker_down:2"].findings)
    assert "quorum:cluster" in ids and "check:snapshot_incomplete" in ids
    assert len(ids["consumer_group:g"].findings) == 2
    # Ordered worst first, and ids are unique.
    assert [i.severity.rank for i in incidents] == sorted((i.severity.rank for i in incidents), reverse=True)
    assert len(ids) == len(incidents)


def test_incident_ids_are_stable_when_findings_change() -> None:
    """The id is the kind and the root cause: more partitions, other severities, same incident."""
    first = group_incidents([broker_missing(2), urp("orders", 0, "2")])
    later = group_incidents([broker_missing(2), *[urp("orders", p, "2", C) for p in range(9)]])
    assert [i.id for i in first] == [i.id for i in later] == ["broker_down:2"]


def test_no_findings_no_incidents_and_old_diagnoses_are_grouped_on_read() -> None:
    assert group_incidents([]) == []
    d = Diagnosis(cluster="c", taken_at=T0, findings=[broker_missing(1), urp("t", 0, "1")])
    assert [i.id for i in incidents_of(d)] == ["broker_down:1"]
    grouped = d.model_copy(update={"incidents": group_incidents(d.findings)})
    assert incidents_of(grouped) is grouped.incidents


def test_a_down_broker_on_many_partitions_lists_the_first_ones_and_counts_all() -> None:
    n = MAX_INCIDENT_PARTITIONS + 500
    parts = [Partition(topic="big", partition=p, leader=0, replicas=[0, 1, 2], isr=[0, 1]) for p in range(n)]
    (down,) = group_incidents([broker_missing(2), urp("big", 0, "2")], snapshot({0, 1}, parts, []))
    assert down.partitions_total == n and down.evidence["under_replicated"] == n
    assert len(down.partitions) == MAX_INCIDENT_PARTITIONS
    assert down.partitions[:2] == [
        PartitionRef(topic="big", partition=0),
        PartitionRef(topic="big", partition=1),
    ]
    assert f"{n} under-replicated" in down.title


def test_a_low_replication_factor_without_its_number_is_not_taken_for_rf1() -> None:
    (i,) = group_incidents([finding("low_replication_factor", W, topic="t")])
    assert i.id == "topic_durability:t"


def test_a_broker_out_of_sync_says_why_per_cause_and_advises_by_it() -> None:
    def urp(p: int, causes: str) -> Finding:
        return finding("under_replicated", topic="t", partition=p, out_of_sync="2", causes=causes)

    catching = by_id(
        group_incidents([urp(0, "2 catching_up (10 B behind, ETA 5 s)"), urp(1, "2 catching_up")])
    )
    inc = catching["broker_out_of_sync:2"]
    assert inc.title == "Broker 2 is alive but out of sync on 2 partitions (catching up: 2)."
    assert inc.evidence["catching_up_partitions"] == 2
    assert "Broker 2 is catching up: nothing to fix while its lag shrinks." in inc.remediation
    stuck = by_id(group_incidents([urp(0, "2 stuck (10 B behind)"), urp(1, "2 catching_up")]))[
        "broker_out_of_sync:2"
    ]
    assert stuck.title == "Broker 2 is alive but out of sync on 2 partitions (catching up: 1, stuck: 1)."
    assert "not catching up on 1 partition: check its replica fetcher" in stuck.remediation
    held = by_id(group_incidents([urp(0, "2 throttled (10 B behind)")]))["broker_out_of_sync:2"]
    assert "A replication throttle holds broker 2's replicas" in held.remediation


def test_a_reassignment_incident_sums_what_is_left_and_takes_the_last_eta() -> None:
    def moving(p: int, left: int | None, eta: int | None) -> Finding:
        return finding(
            "partition_reassigning",
            INFO,
            topic="m",
            partition=p,
            adding="2",
            removing="none",
            added_in_sync=0,
            throttled="yes",
            follower_throttle_rate=1000,
            left_bytes=left,
            eta_seconds=eta,
        )

    inc = by_id(group_incidents([moving(0, 300, 30), moving(1, 700, 70)]))["reassignment:cluster"]
    assert inc.title.endswith("; 2 throttled; 1000 B left to copy, ETA 70 s, throttled at 1000 B/s.")
    assert (inc.evidence["left_bytes"], inc.evidence["eta_seconds"]) == (1000, 70)
    # One partition still copying with no ETA: the incident has none either.
    inc = by_id(group_incidents([moving(0, 300, 30), moving(1, 700, None)]))["reassignment:cluster"]
    assert inc.evidence["eta_seconds"] is None and "ETA" not in inc.title
