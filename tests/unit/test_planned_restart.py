"""A planned roll is not an outage (issue 33 point 6): kafka_health.diagnose.planned, its use in
group_incidents, the Degraded condition (status_after_cycle) and the Events (incident_events).
Pure logic on hand-built findings, statuses and snapshots; the operator's roll test
(tests/k8s/test_operator_roll_planned.py) proves it end to end."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from kafka_health.controller.planned_roll import with_planned
from kafka_health.diagnose.incidents import group_incidents
from kafka_health.diagnose.missing import missing_findings
from kafka_health.diagnose.planned import (
    OFFSETS_TOPIC,
    RESTARTING_STEPS,
    PlannedRestart,
    coordinator_partition,
    expected_missing,
    offsets_restarting,
    planned_restarts,
    restarting,
    unexpected_missing,
)
from kafka_health.models.findings import Diagnosis, Finding, IncidentKind, Severity
from kafka_health.models.policy import (
    ActionType,
    BatchMember,
    ConditionStatus,
    ConditionType,
    CurrentRemediation,
    KafkaHealthPolicyStatus,
    RemediationStep,
)
from kafka_health.models.reasons import DegradedReason, EventReason, StateReason
from kafka_health.models.snapshot import (
    Broker,
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    Missing,
    Partition,
)
from kafka_health.report import events
from kafka_health.report.status import CycleOutcome, status_after_cycle
from tests.unit.test_incidents import T0, C, W, at_min, broker_missing, by_id, finding, urp

BROKERS = (0, 1, 2)


def roll(
    broker: int | None,
    step: RemediationStep,
    *,
    id: str = "r1",
    done: list[int] | None = None,
    action: ActionType = ActionType.ROLLING_RESTART,
) -> CurrentRemediation:
    return CurrentRemediation(
        action=action,
        id=id,
        plan_id=f"roll-{id}",
        step=step,
        started_at=T0,
        brokers_planned=[0, 1, 2],
        brokers_done=done or [],
        current_broker=broker,
    )


def planned(*brokers: int, id: str = "r1") -> dict[int, PlannedRestart]:
    return {b: PlannedRestart(b, id, str(RemediationStep.WAITING_POD_READY)) for b in brokers}


def log_dirs(b: int) -> Finding:
    return finding("snapshot_incomplete", W, broker=b, part=f"log_dirs:{b}", reason="broker is fenced")


def snapshot(down: set[int], topic: str = "orders", partitions: int = 6) -> ClusterSnapshot:
    """RF 3 over brokers 0-2; every down broker out of each ISR; a group reading the topic."""
    alive = [b for b in BROKERS if b not in down]
    return ClusterSnapshot(
        cluster="c",
        taken_at=T0,
        brokers=[
            Broker(id=b, host="h", port=9092 + b, alive=b not in down, fenced=b in down) for b in BROKERS
        ],
        partitions=[
            Partition(
                topic=topic, partition=p, leader=alive[0] if alive else None, replicas=[0, 1, 2], isr=alive
            )
            for p in range(partitions)
        ],
        groups=[
            ConsumerGroup(
                group_id="billing",
                state="Stable",
                offsets=[GroupOffset(topic=topic, partition=0, committed_offset=5)],
            )
        ],
    )


def restart_findings(b: int, partitions: int = 6) -> list[Finding]:
    """What a stopped broker b makes on the testbed: broker_missing, URP and at-min-ISR per
    partition (critical for a never-safe RF 2 / min ISR 2 topic), its log dirs, leader skew."""
    return [
        broker_missing(b),
        *[urp("orders", p, str(b)) for p in range(partitions)],
        *[at_min("orders", p, str(b)) for p in range(partitions)],
        finding(
            "under_min_isr", C, topic="fragile", partition=0, out_of_sync=str(b), replicas=f"{b},0", leader=0
        ),
        log_dirs(b),
        finding("leader_skew", W, leaders_per_broker="0:4,1:2"),
    ]


# ---------------------------------------------------------------- which brokers are planned


@pytest.mark.parametrize("step", list(RemediationStep))
@pytest.mark.parametrize("action", list(ActionType))
@pytest.mark.parametrize("broker", [None, 2])
def test_only_a_broker_in_a_restarting_step_of_a_roll_is_planned(
    step: RemediationStep, action: ActionType, broker: int | None
) -> None:
    got = restarting(roll(broker, step, action=action))
    if broker is not None and action is ActionType.ROLLING_RESTART and step in RESTARTING_STEPS:
        assert got == [PlannedRestart(2, "r1", str(step))]
    else:
        assert got == []
    assert restarting(None) == []


@pytest.mark.parametrize("step", list(RemediationStep))
def test_every_member_of_a_batch_in_flight_is_planned(step: RemediationStep) -> None:
    """maxConcurrent > 1: the brokers restarted together are all away by plan, not only the first."""
    current = roll(2, step).model_copy(
        update={"batch": [BatchMember(broker=2, pod_uid="u2"), BatchMember(broker=5, pod_uid=None)]}
    )
    got = restarting(current)
    if step in RESTARTING_STEPS:
        assert got == [PlannedRestart(2, "r1", str(step)), PlannedRestart(5, "r1", str(step))]
        assert set(planned_restarts(current, None)) == {2, 5}
    else:
        assert got == []


def test_restarting_steps_are_the_pod_delete_to_urp_zero() -> None:
    assert {
        RemediationStep.DELETING_POD,
        RemediationStep.WAITING_POD_READY,
        RemediationStep.WAITING_BROKER_REGISTERED,
        RemediationStep.WAITING_URP_ZERO,
    } == RESTARTING_STEPS


STATES = [None, roll(None, RemediationStep.WAITING_FOR_SAFETY, done=[0])] + [
    roll(b, s, done=[x for x in (0, 1) if x < b])
    for b in BROKERS
    for s in RemediationStep
    if s is not RemediationStep.DONE
]


@pytest.mark.parametrize(("before", "after"), list(itertools.product(STATES, STATES)))
def test_planned_is_the_broker_restarting_at_either_read_or_finished_between(
    before: CurrentRemediation | None, after: CurrentRemediation | None
) -> None:
    got = planned_restarts(before, after)
    expected: set[int] = set()
    for c in (before, after):
        if c is not None and c.current_broker is not None and c.step in RESTARTING_STEPS:
            expected.add(c.current_broker)
    if before is not None and after is not None:
        expected |= set(after.brokers_done or []) - set(before.brokers_done or [])
    assert set(got) == expected
    assert all(p.request_id == "r1" and p.broker == b for b, p in got.items())


def test_a_broker_finished_between_the_reads_is_planned_only_within_the_same_roll() -> None:
    before = roll(1, RemediationStep.CHECKING_SAFETY, done=[0])
    after = roll(None, RemediationStep.DONE, done=[0, 1])
    assert set(planned_restarts(before, after)) == {1}
    assert planned_restarts(before, roll(None, RemediationStep.DONE, id="r2", done=[0, 1])) == {}
    # A halted roll is no longer in flight: nothing of it is planned.
    assert planned_restarts(None, None) == {}
    # The newer read names the step.
    both = planned_restarts(
        roll(2, RemediationStep.WAITING_POD_READY), roll(2, RemediationStep.WAITING_URP_ZERO)
    )
    assert both == {2: PlannedRestart(2, "r1", "WaitingUrpZero")}


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ("log_dirs:2", True),
        ("log_dirs:1", False),
        ("log_dirs:", False),
        ("log_dirs", False),
        ("quorum", False),
        ("metadata", False),
        ("broker_registrations", False),
        ("offsets:orders", False),
        ("group:billing", False),
        ("configs:orders", False),
        ("partitions:orders", False),
    ],
)
def test_only_the_restarting_brokers_log_dirs_are_expected_unread(part: str, expected: bool) -> None:
    assert expected_missing(part, planned(2)) is expected
    assert expected_missing(part, {}) is False


# ---------------------------------------------------------------- incidents


def test_the_restarting_broker_is_one_info_incident_naming_the_request() -> None:
    findings = restart_findings(2)
    before = by_id(group_incidents(findings, snapshot({2})))
    assert list(before) == ["broker_down:2"] and before["broker_down:2"].severity is C
    incidents = group_incidents(findings, snapshot({2}), planned(2))
    assert [i.id for i in incidents] == ["planned_restart:2"]
    (i,) = incidents
    assert i.kind is IncidentKind.PLANNED_RESTART and i.severity is Severity.INFO
    assert i.subject.broker == 2 and i.action is None
    assert i.evidence["request_id"] == "r1" and i.evidence["step"] == "WaitingPodReady"
    assert i.title.startswith(
        "Broker 2 is being restarted by rolling restart r1 (WaitingPodReady), as requested:"
    )
    assert "6 under-replicated, 0 offline meanwhile; 1 consumer group read from them." in i.title
    assert i.partitions_total == 6 and i.groups == ["billing"]
    assert len(i.findings) == len(findings)
    assert "halts (Degraded=True RemediationHalted)" in i.remediation


def test_another_broker_down_during_the_roll_is_still_an_outage() -> None:
    findings = [
        *restart_findings(2),
        broker_missing(0),
        urp("orders", 0, "0,2"),  # both: the broker the roll did not stop claims it
        log_dirs(0),
    ]
    incidents = by_id(group_incidents(findings, snapshot({0, 2}), planned(2)))
    assert set(incidents) == {"broker_down:0", "planned_restart:2"}
    down = incidents["broker_down:0"]
    assert down.severity is C
    assert any(f.check == "under_replicated" and f.evidence["out_of_sync"] == "0,2" for f in down.findings)
    assert any(f.check == "leader_skew" for f in down.findings)  # skew goes to the unplanned broker
    assert {f.evidence.get("part") for f in down.findings if f.check == "snapshot_incomplete"} == {
        "log_dirs:0"
    }
    assert incidents["planned_restart:2"].severity is Severity.INFO


def test_a_partition_also_out_of_sync_on_a_live_broker_is_not_planned() -> None:
    findings = [broker_missing(2), urp("orders", 0, "2"), urp("orders", 1, "1,2"), at_min("orders", 2, "1")]
    incidents = by_id(group_incidents(findings, snapshot({2}), planned(2)))
    assert set(incidents) == {"planned_restart:2", "broker_out_of_sync:1"}
    assert sorted(f.subject.partition for f in incidents["broker_out_of_sync:1"].findings) == [1, 2]
    assert incidents["broker_out_of_sync:1"].severity is W


def test_a_restarted_broker_catching_up_is_planned_until_the_roll_moves_on() -> None:
    findings = [urp("orders", p, "2") for p in range(3)] + [finding("isr_churn", W, broker=2, episodes=4)]
    assert set(by_id(group_incidents(findings))) == {"broker_out_of_sync:2"}
    incidents = group_incidents(findings, snapshot(set()), planned(2))
    assert [(i.id, i.severity) for i in incidents] == [("planned_restart:2", Severity.INFO)]


def test_the_restarting_brokers_real_disk_findings_and_other_parts_stay_raised() -> None:
    findings = [
        broker_missing(2),
        finding("disk_usage", C, broker=2, percent=97),
        finding("snapshot_incomplete", W, part="group:billing", reason="coordinator moving"),
        finding("snapshot_incomplete", W, broker=1, part="log_dirs:1", reason="timed out"),
        finding("quorum_voter_lagging", W, broker=2, lag=10),
        finding("quorum_no_leader", C),
    ]
    incidents = by_id(group_incidents(findings, None, planned(2)))
    assert set(incidents) == {
        "planned_restart:2",
        "disk:2",
        "consumer_group:billing",
        "disk:1",
        "quorum:cluster",
    }
    assert [f.check for f in incidents["planned_restart:2"].findings] == [
        "broker_missing",
        "quorum_voter_lagging",
    ]
    assert incidents["quorum:cluster"].severity is C and incidents["disk:2"].severity is C


def test_a_live_restarting_broker_own_quorum_lag_is_planned() -> None:
    findings = [finding("quorum_voter_lagging", W, broker=2, lag=10)]
    assert [i.id for i in group_incidents(findings, None, planned(2))] == ["planned_restart:2"]
    assert [i.id for i in group_incidents(findings, None, planned(1))] == ["quorum:cluster"]


@pytest.mark.parametrize("down", [set(s) for n in range(4) for s in itertools.combinations(BROKERS, n)])
@pytest.mark.parametrize("restarting_broker", [None, *BROKERS])
def test_every_combination_keeps_each_finding_once_and_hides_nothing_unplanned(
    down: set[int], restarting_broker: int | None
) -> None:
    """Every set of down brokers, every restarting broker, URP findings on every pair of
    brokers: each finding in exactly one incident; an info `planned_restart` holds only findings
    that implicate no broker but the restarting one; every other down broker keeps its critical
    `broker_down` incident; with nothing planned the grouping is today's."""
    pairs = [str(b) for b in BROKERS] + [f"{a},{b}" for a, b in itertools.combinations(BROKERS, 2)]
    findings = [broker_missing(b) for b in sorted(down)] + [log_dirs(b) for b in sorted(down)]
    findings += [urp("orders", i, out) for i, out in enumerate(pairs)]
    findings.append(finding("leader_skew", W, leaders_per_broker="0:4"))
    plan = planned(restarting_broker) if restarting_broker is not None else {}
    incidents = group_incidents(findings, snapshot(down), plan)
    members = [id(f) for i in incidents for f in i.findings]
    assert sorted(members) == sorted(id(f) for f in findings)
    ids = {i.id for i in incidents}
    for b in down - set(plan):
        assert f"broker_down:{b}" in ids and by_id(incidents)[f"broker_down:{b}"].severity is C
    for i in incidents:
        if i.kind is IncidentKind.PLANNED_RESTART:
            assert i.severity is Severity.INFO and int(i.id.split(":")[1]) in plan
            for f in i.findings:
                implicated = {
                    int(x) for x in str(f.evidence.get("out_of_sync", "")).split(",") if x.isdigit()
                }
                assert implicated <= set(plan), (i.id, f)
        else:
            assert not (i.kind is IncidentKind.BROKER_DOWN and int(i.id.split(":")[1]) in plan)
        for f in i.findings:
            # What a down broker the roll did not stop explains stays with that broker's outage.
            implicated = {int(x) for x in str(f.evidence.get("out_of_sync", "")).split(",") if x.isdigit()}
            if (implicated & down) - set(plan) or (f.check == "leader_skew" and down - set(plan)):
                assert i.kind is IncidentKind.BROKER_DOWN and int(i.id.split(":")[1]) not in plan, (i.id, f)
    if not plan:
        assert [(i.id, i.severity) for i in incidents] == [
            (i.id, i.severity) for i in group_incidents(findings, snapshot(down))
        ]


# ---------------------------------------------------------------- Degraded and Events


def diagnosis_of(findings: list[Finding], missing: list[str], down: set[int]) -> Diagnosis:
    return Diagnosis(
        cluster="c",
        taken_at=T0,
        findings=findings,
        incidents=group_incidents(findings, snapshot(down)),
        missing=missing,
    )


def degraded(outcome: CycleOutcome, previous: KafkaHealthPolicyStatus | None = None) -> tuple[str, str, str]:
    status = status_after_cycle(
        previous or KafkaHealthPolicyStatus(), outcome, now=T0 + timedelta(seconds=1), generation=1, top_n=5
    )
    c = next(c for c in status.conditions or [] if c.type == ConditionType.DEGRADED)
    return str(c.status), c.reason, c.message


def test_degraded_stays_false_while_only_the_restarting_broker_is_unread() -> None:
    d = diagnosis_of(restart_findings(2), ["log_dirs:2"], {2})
    # Today (no roll in flight): Degraded=True ClusterPartlyUnreadable.
    assert degraded(CycleOutcome(diagnosis=d))[:2] == ("True", DegradedReason.CLUSTER_PARTLY_UNREADABLE)
    during = with_planned(
        CycleOutcome(diagnosis=d),
        roll(2, RemediationStep.WAITING_POD_READY),
        roll(2, RemediationStep.WAITING_URP_ZERO),
        snapshot({2}),
    )
    status, reason, message = degraded(during)
    assert (status, reason) == ("False", StateReason.PLANNED_RESTART)
    assert message.startswith("Restarting on request: broker 2 by rolling restart r1.")
    assert during.diagnosis is not None and [i.id for i in during.diagnosis.incidents] == [
        "planned_restart:2"
    ]


@pytest.mark.parametrize(
    "extra", [["log_dirs:1"], ["group:billing"], ["quorum"], ["offsets:orders"], ["broker_registrations"]]
)
def test_anything_else_unread_during_the_roll_is_still_degraded(extra: list[str]) -> None:
    d = diagnosis_of(restart_findings(2), ["log_dirs:2", *extra], {2})
    status, reason, message = degraded(
        with_planned(CycleOutcome(diagnosis=d), roll(2, RemediationStep.WAITING_POD_READY), None, None)
    )
    assert (status, reason) == ("True", DegradedReason.CLUSTER_PARTLY_UNREADABLE)
    assert message == f"Could not read: {extra[0]}. Remediation that needs these parts is withheld."


def test_a_halt_stays_degraded_during_a_planned_restart() -> None:
    previous = status_after_cycle(
        KafkaHealthPolicyStatus(),
        CycleOutcome(diagnosis=diagnosis_of([], [], set())),
        now=T0,
        generation=1,
        top_n=5,
    )
    halted = [
        c.model_copy(update={"status": ConditionStatus.TRUE, "reason": DegradedReason.REMEDIATION_HALTED})
        if c.type == ConditionType.DEGRADED
        else c
        for c in previous.conditions or []
    ]
    d = diagnosis_of(restart_findings(2), ["log_dirs:2"], {2})
    outcome = with_planned(CycleOutcome(diagnosis=d), roll(2, RemediationStep.WAITING_POD_READY), None, None)
    assert degraded(outcome, previous.model_copy(update={"conditions": halted}))[:2] == (
        "True",
        DegradedReason.REMEDIATION_HALTED,
    )


def test_no_warning_event_for_the_restarting_broker_but_one_for_another() -> None:
    d = diagnosis_of(restart_findings(2), ["log_dirs:2"], {2})
    before, _ = events.incident_events(set(), d)
    assert [(e.type, e.message.split(" ")[0]) for e in before] == [("Warning", "broker_down:2")]
    during = with_planned(
        CycleOutcome(diagnosis=d), roll(2, RemediationStep.DELETING_POD), None, snapshot({2})
    )
    assert during.diagnosis is not None
    posted, ids = events.incident_events(set(), during.diagnosis)
    assert posted == [] and ids == set()
    both = diagnosis_of([*restart_findings(2), broker_missing(0)], ["log_dirs:2"], {0, 2})
    during = with_planned(
        CycleOutcome(diagnosis=both), roll(2, RemediationStep.DELETING_POD), None, snapshot({0, 2})
    )
    assert during.diagnosis is not None
    posted, _ = events.incident_events(set(), during.diagnosis)
    assert [(e.type, e.reason, e.message.split(" ")[0]) for e in posted] == [
        ("Warning", EventReason.INCIDENT_OPENED, "broker_down:0")
    ]
    assert posted[0].message.startswith("broker_down:0 new (critical")


def test_nothing_in_flight_changes_nothing() -> None:
    outcome = CycleOutcome(diagnosis=diagnosis_of(restart_findings(2), ["log_dirs:2"], {2}))
    for before, after in [(None, None), (roll(2, RemediationStep.CHECKING_SAFETY), None)]:
        assert with_planned(outcome, before, after, snapshot({2})) is outcome


def test_health_is_not_critical_for_what_a_planned_restart_explains_only() -> None:
    """status.health (which Argo CD's check reads once the roll is over, until the next cycle) and
    the Healthy condition leave out the findings of a planned_restart; anything else counts."""

    def health(d: Diagnosis) -> tuple[str, str, str, str]:
        outcome = with_planned(
            CycleOutcome(diagnosis=d), roll(2, RemediationStep.WAITING_POD_READY), None, None
        )
        status = status_after_cycle(KafkaHealthPolicyStatus(), outcome, now=T0, generation=1, top_n=5)
        c = next(c for c in status.conditions or [] if c.type == ConditionType.HEALTHY)
        return str(status.health), str(c.status), c.reason, c.message

    only = diagnosis_of(restart_findings(2), ["log_dirs:2"], {2})
    assert health_of_today(only) == "Critical"
    got = health(only)
    assert got[:3] == ("Healthy", "True", StateReason.PLANNED_RESTART), got
    assert got[3].startswith(
        "No warnings but what a planned restart explains: planned_restart:2: Broker 2 is being"
    )
    lag = diagnosis_of([*restart_findings(2), finding("consumer_lag", W, group="g")], ["log_dirs:2"], {2})
    assert health(lag)[:3] == ("Warning", "False", StateReason.WARNING_FINDINGS)
    other = diagnosis_of([*restart_findings(2), broker_missing(0)], ["log_dirs:2"], {0, 2})
    got = health(other)
    assert got[:3] == ("Critical", "False", StateReason.CRITICAL_FINDINGS)
    assert "worst: broker_down:0" in got[3]


def health_of_today(d: Diagnosis) -> str:
    status = status_after_cycle(
        KafkaHealthPolicyStatus(), CycleOutcome(diagnosis=d), now=T0, generation=1, top_n=5
    )
    return str(status.health)


# ---------------------------------------------------------------- unread offsets during a restart
# Seen in a real roll (tests/k8s/test_operator_roll_planned.py, CI of 2026-11-29): ListOffsets for
# __consumer_offsets partitions 1 and 4 failed while their leader, the broker being restarted,
# shut down; the cycle said Degraded=True ClusterPartlyUnreadable in the middle of a planned roll.


def with_side_topic(down: set[int]) -> ClusterSnapshot:
    """snapshot(down) plus topic `side` on brokers 0, 1 only (never on broker 2)."""
    s = snapshot(down)
    side = [Partition(topic="side", partition=p, leader=0, replicas=[0, 1], isr=[0, 1]) for p in range(2)]
    return s.model_copy(update={"partitions": [*s.partitions, *side]})


def offsets_unread(topic: str, partitions: list[int]) -> Missing:
    return Missing(
        part=f"offsets:{topic}",
        reason=f"partitions {','.join(map(str, partitions))}: earliest: NOT_LEADER_OR_FOLLOWER",
        partitions=partitions,
    )


def planned_outcome(missing: list[Missing], restarting_broker: int | None) -> CycleOutcome:
    snap = with_side_topic({2} if restarting_broker == 2 else set())
    findings = [*(restart_findings(2) if restarting_broker == 2 else []), *missing_findings(missing[1:])]
    d = Diagnosis(
        cluster="c",
        taken_at=T0,
        findings=findings,
        incidents=group_incidents(findings, snap),
        missing=[m.part for m in missing],
    )
    if restarting_broker is None:
        return CycleOutcome(diagnosis=d)
    step = RemediationStep.WAITING_POD_READY
    return with_planned(CycleOutcome(diagnosis=d), roll(restarting_broker, step), None, snap)


def test_unread_offsets_of_partitions_on_the_restarting_broker_are_planned_and_still_listed() -> None:
    missing = [Missing(part="log_dirs:2", reason="broker is fenced"), offsets_unread("orders", [1, 4])]
    outcome = planned_outcome(missing, 2)
    assert degraded(outcome)[:2] == ("False", StateReason.PLANNED_RESTART)
    d = outcome.diagnosis
    assert d is not None and d.missing == ["log_dirs:2", "offsets:orders"]
    assert unexpected_missing(d) == []
    incident = by_id(d.incidents)["planned_restart:2"]
    parts = {f.evidence.get("part") for f in incident.findings if f.check == "snapshot_incomplete"}
    assert parts == {"log_dirs:2", "offsets:orders"}
    # Without a roll in flight the same gap is Degraded.
    today = degraded(planned_outcome(missing, None))
    assert today[:2] == ("True", DegradedReason.CLUSTER_PARTLY_UNREADABLE) and "offsets:orders" in today[2]


@pytest.mark.parametrize("part", ["groups", "share_groups", "streams_groups"])
def test_a_group_listing_cut_short_during_a_roll_is_planned_and_still_listed(part: str) -> None:
    reason = "list incomplete: COORDINATOR_LOAD_IN_PROGRESS: the coordinator is loading"
    missing = [Missing(part="log_dirs:2", reason="broker is fenced"), Missing(part=part, reason=reason)]
    outcome = planned_outcome(missing, 2)
    assert degraded(outcome)[:2] == ("False", StateReason.PLANNED_RESTART)
    d = outcome.diagnosis
    assert d is not None and d.missing == ["log_dirs:2", part] and unexpected_missing(d) == []
    # Without a roll in flight the same gap is Degraded.
    today = degraded(planned_outcome(missing, None))
    assert today[:2] == ("True", DegradedReason.CLUSTER_PARTLY_UNREADABLE) and part in today[2]


@pytest.mark.parametrize(
    ("unread", "why"),
    [
        (offsets_unread("side", [0]), "its partition has no replica on broker 2"),
        (
            Missing(part="offsets:orders", reason="partitions 1,7: timed out", partitions=[1, 7]),
            "partition 7 is not in the snapshot",
        ),
        (Missing(part="offsets:orders", reason="timed out"), "the unread partitions are not named"),
        (Missing(part="configs:orders", reason="timed out", partitions=[1]), "not offsets"),
    ],
)
def test_unread_offsets_the_restart_does_not_explain_stay_degraded(unread: Missing, why: str) -> None:
    outcome = planned_outcome([Missing(part="log_dirs:2", reason="fenced"), unread], 2)
    status, reason, message = degraded(outcome)
    assert (status, reason) == ("True", DegradedReason.CLUSTER_PARTLY_UNREADABLE), why
    assert message == f"Could not read: {unread.part}. Remediation that needs these parts is withheld."


def test_offsets_restarting_names_the_lowest_planned_broker_holding_the_unread_partitions() -> None:
    replicas = {("t", 0): [0, 1], ("t", 1): [1, 2], ("t", 2): [0, 2]}
    (f,) = missing_findings([offsets_unread("t", [0, 1, 2])])
    assert f.evidence["partitions"] == "0,1,2"
    assert offsets_restarting(f, planned(1, 2), replicas) == 1
    assert offsets_restarting(f, planned(2), replicas) is None  # partition 0 is not on broker 2
    assert offsets_restarting(f, planned(0, 2), replicas) == 0
    assert offsets_restarting(f, {}, replicas) is None


def with_offsets_topic(on_2: bool) -> ClusterSnapshot:
    """snapshot({2}) plus a 3-partition __consumer_offsets whose partition for group `billing`
    has a replica on broker 2 or not."""
    s = snapshot({2})
    target = coordinator_partition("billing", 3)
    parts = [
        Partition(
            topic=OFFSETS_TOPIC,
            partition=p,
            leader=0,
            replicas=[0, 2] if (p == target) == on_2 else [0, 1],
            isr=[0],
        )
        for p in range(3)
    ]
    return s.model_copy(update={"partitions": [*s.partitions, *parts]})


@pytest.mark.parametrize("on_2", [True, False])
def test_an_unread_group_is_planned_only_when_its_coordinator_partition_is_on_the_restarting_broker(
    on_2: bool,
) -> None:
    snap = with_offsets_topic(on_2)
    (group,) = missing_findings([Missing(part="group:billing", reason="NOT_COORDINATOR")])
    findings = [*restart_findings(2), group]
    d = Diagnosis(
        cluster="c",
        taken_at=T0,
        findings=findings,
        incidents=group_incidents(findings, snap),
        missing=["log_dirs:2", "group:billing"],
    )
    outcome = with_planned(CycleOutcome(diagnosis=d), roll(2, RemediationStep.WAITING_POD_READY), None, snap)
    assert outcome.diagnosis is not None
    holder = next(i.id for i in outcome.diagnosis.incidents if group in i.findings)
    if on_2:
        assert holder == "planned_restart:2"
        assert degraded(outcome)[:2] == ("False", StateReason.PLANNED_RESTART)
    else:
        assert holder == "consumer_group:billing"
        assert degraded(outcome)[:2] == ("True", DegradedReason.CLUSTER_PARTLY_UNREADABLE)
    assert outcome.diagnosis.missing == ["log_dirs:2", "group:billing"]  # still listed as unread
