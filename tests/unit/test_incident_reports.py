"""Incidents in what people see: Events per incident (open / resolve), status.topIncidents, the
CLI table and the HTML report (pure: hand-built findings, no Spark, no Kafka)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kafka_health.controller.cycle import PolicyWorker
from kafka_health.controller.cycle_report import report_cycle
from kafka_health.diagnose.from_policy import for_policy
from kafka_health.diagnose.incidents import group_incidents
from kafka_health.models.findings import Diagnosis, Finding, Severity
from kafka_health.models.policy import MAX_TOP_INCIDENTS, KafkaHealthPolicySpec, KafkaHealthPolicyStatus
from kafka_health.models.reasons import EventReason
from kafka_health.report import events, html, table
from kafka_health.report.status import CycleOutcome, status_after_cycle, status_patch
from tests.unit.test_incidents import T0, broker_missing, finding, urp


def diagnosis(*findings: Finding) -> Diagnosis:
    return Diagnosis(
        cluster="c",
        taken_at=T0,
        findings=list(findings),
        incidents=group_incidents(findings),
        duration_seconds=3.0,
    )


def stopped_broker(b: int = 2, partitions: int = 12) -> Diagnosis:
    return diagnosis(broker_missing(b), *[urp("orders", p, str(b)) for p in range(partitions)])


def test_a_stopped_broker_is_one_event_when_it_stops_none_while_it_stays_one_when_it_is_back() -> None:
    posted, ids = events.incident_events(None, stopped_broker())
    assert [(e.type, e.reason) for e in posted] == [("Warning", EventReason.INCIDENT_OPENED)]
    assert posted[0].message.startswith("broker_down:2 new (critical, 13 findings): Broker 2 is fenced")
    assert "→ No automatic action" in posted[0].message
    assert ids == {"broker_down:2"}
    # The next cycles: more partitions hit, same incident: nothing posted.
    posted, ids = events.incident_events(ids, stopped_broker(partitions=40))
    assert posted == [] and ids == {"broker_down:2"}
    posted, ids = events.incident_events(ids, diagnosis())
    assert [(e.type, e.reason, e.message) for e in posted] == [
        ("Normal", EventReason.INCIDENT_RESOLVED, "broker_down:2 resolved: none of its findings remain.")
    ]
    assert ids == set()


def test_info_incidents_post_nothing_and_a_flood_is_bounded() -> None:
    info = diagnosis(
        finding("at_min_isr", Severity.INFO, topic="t", partition=0, out_of_sync="none", leader=0)
    )
    assert events.incident_events(None, info) == ([], set())
    many = diagnosis(*[finding("consumer_lag", Severity.WARNING, group=f"g{i:02}") for i in range(25)])
    posted, ids = events.incident_events(set(), many)
    assert len(ids) == 25
    assert len(posted) == events.MAX_INCIDENT_EVENTS + 1
    assert posted[-1].message.startswith("15 more incidents new: consumer_group:g10, ")
    resolved, _ = events.incident_events(ids, diagnosis())
    assert len(resolved) == events.MAX_INCIDENT_EVENTS + 1
    assert resolved[-1].message.startswith("15 more incidents resolved: ")


def test_status_shows_the_top_incidents_with_counts() -> None:
    d = diagnosis(
        *stopped_broker().findings,
        *[finding("consumer_lag", Severity.WARNING, group=f"g{i:02}") for i in range(12)],
    )
    status = status_after_cycle(
        KafkaHealthPolicyStatus(), CycleOutcome(diagnosis=d), now=T0, generation=1, top_n=5
    )
    assert status.last_diagnosis is not None
    assert status.last_diagnosis.incidents == 13 and status.last_diagnosis.total == 25
    top = status.top_incidents or []
    assert len(top) == MAX_TOP_INCIDENTS
    assert (top[0].id, top[0].severity, top[0].findings, top[0].partitions) == (
        "broker_down:2",
        "critical",
        13,
        12,
    )
    assert top[0].remediation.startswith("No automatic action")
    healthy = next(c for c in status.conditions or [] if c.type == "Healthy")
    assert healthy.message.startswith(
        "13 incidents (1 critical, 24 warning findings); worst: broker_down:2: Broker 2"
    )
    body = status_patch(status)
    assert body["topIncidents"][0]["id"] == "broker_down:2"
    assert body["lastDiagnosis"]["incidents"] == 13


def test_the_table_leads_with_incidents_and_lists_members_on_request() -> None:
    d = stopped_broker()
    text = table.render(d)
    rows = text.splitlines()
    header = next(i for i, line in enumerate(rows) if line.startswith("SEVERITY"))
    assert rows[header].split() == ["SEVERITY", "INCIDENT", "FINDINGS", "SUMMARY"]
    assert rows[header + 1].split()[:3] == ["critical", "broker_down:2", "13"]
    assert "partitions (12): orders-0, orders-1, orders-2, orders-3, orders-4, orders-5 and 6 more" in text
    assert "under_replicated" not in text  # members only with --members
    assert text.rstrip().endswith(
        "1 incident (1 critical, 0 warning, 0 info) from 13 findings in 3.0 s: critical (exit 4)"
    )
    full = table.render(d, members=True)
    member_rows = [line for line in full.splitlines() if "under_replicated" in line]
    assert len(member_rows) == 12
    assert all(line.startswith(" " * 20) for line in member_rows)  # indented under the incident


def test_html_expands_each_incident_to_its_findings() -> None:
    d = diagnosis(*stopped_broker().findings, finding("consumer_lag", Severity.WARNING, group="billing"))
    page = html.render(d)
    assert page.count('<details class="incident') == 2
    assert '<details class="incident sev-critical" id="broker_down:2">' in page
    first, second = page.split("<details ")[1:3]
    assert first.count("<code>under_replicated</code>") == 12
    assert "<code>consumer_lag</code>" in second and "under_replicated" not in second


def test_json_carries_incidents_and_findings() -> None:
    d = stopped_broker()
    data = Diagnosis.model_validate_json(d.model_dump_json())
    assert [i.id for i in data.incidents] == ["broker_down:2"]
    assert len(data.findings) == 13 and len(data.incidents[0].findings) == 13
    assert data == d


def test_the_cycle_handler_posts_per_incident_across_cycles() -> None:
    """The cycle's report stage, cycle after cycle: a stopped broker's many findings are one
    Event when it stops, none while it stays, one when it is back; never a FindingAppeared."""
    worker = PolicyWorker(runtime=None, namespace="ns", name="p")  # type: ignore[arg-type]

    def cycle(d: Diagnosis) -> list[tuple[str, str]]:
        fresh = d.model_copy(update={"taken_at": datetime.now(UTC)})
        report = report_cycle(
            worker.reported,
            CycleOutcome(diagnosis=fresh),
            written=None,
            duration_s=1.0,
            interval=timedelta(seconds=60),
            now=datetime.now(UTC),
            unix_now=0.0,
        )
        worker.reported = report.reported
        return [(e.reason, e.message.split(" ")[0]) for e in report.events]

    assert cycle(diagnosis()) == []
    assert cycle(stopped_broker(partitions=12)) == [(EventReason.INCIDENT_OPENED, "broker_down:2")]
    assert cycle(stopped_broker(partitions=30)) == []
    assert cycle(stopped_broker(partitions=30)) == []
    assert cycle(diagnosis()) == [(EventReason.INCIDENT_RESOLVED, "broker_down:2")]
    assert cycle(diagnosis()) == []


def test_a_policy_reports_incidents_of_its_own_findings_only() -> None:
    """The operator's view (diagnose/from_policy.for_policy): a check the policy turns off leaves
    no finding in any incident, and members carry the policy's words."""
    spec = KafkaHealthPolicySpec.model_validate(
        {
            "cluster": {"bootstrapServers": ["k:9092"]},
            "diagnostics": {"checks": {"minIsr": {"enabled": False}}},
        }
    )
    d = diagnosis(
        *stopped_broker(partitions=3).findings,
        *[
            finding("at_min_isr", Severity.WARNING, topic="orders", partition=p, out_of_sync="2", leader=0)
            for p in range(3)
        ],
        finding(
            "min_isr_too_high", Severity.WARNING, topic="tight", replication_factor=3, min_insync_replicas=3
        ),
    )
    assert sum(len(i.findings) for i in d.incidents) == 8
    view = for_policy(d, spec, None)
    assert [f.check for f in view.findings].count("at_min_isr") == 0
    assert sum(len(i.findings) for i in view.incidents) == len(view.findings) == 5
    (tight,) = [i for i in view.incidents if i.id == "never_safe_topic:tight"]
    assert tight.findings[0].message.endswith(
        "(spec.remediation.rollingRestart.neverSafePartitions: Refuse)."
    )
    assert tight.findings[0] in view.findings
