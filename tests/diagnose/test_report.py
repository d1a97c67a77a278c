"""The text and HTML reports of a diagnosis (no Spark: they only read the Diagnosis model)."""

from __future__ import annotations

from datetime import timedelta

from kafka_health.models.findings import (
    BrokerSummary,
    Diagnosis,
    DiagnosisSummary,
    Finding,
    SeriesPoint,
    Severity,
    Subject,
    SubjectKind,
)
from kafka_health.report import html, table
from tests.spark.builders import T0


def diagnosis() -> Diagnosis:
    return Diagnosis(
        cluster="prod",
        taken_at=T0,
        duration_seconds=2.5,
        missing=["quorum"],
        findings=[
            Finding(
                check="offline_partition",
                severity=Severity.CRITICAL,
                subject=Subject(kind=SubjectKind.PARTITION, topic="<script>alert(1)</script>", partition=3),
                message="<script>alert(1)</script>-3 has no live leader.",
                evidence={"leader": None, "replicas": "1,2"},
                remediation="bring back a replica",
            ),
            Finding(
                check="consumer_lag",
                severity=Severity.WARNING,
                subject=Subject(kind=SubjectKind.PARTITION, topic="orders", partition=0, group="billing"),
                message="Group billing on orders-0: WARN.",
                evidence={"lag": 42},
            ),
        ],
        summary=DiagnosisSummary(
            topics=2,
            partitions=7,
            groups=1,
            brokers=[
                BrokerSummary(
                    broker=0,
                    alive=True,
                    partitions=5,
                    leaders=4,
                    preferred_leaders=3,
                    used_bytes=10,
                    total_bytes=100,
                    usable_bytes=5,
                ),
                BrokerSummary(broker=1, alive=False, partitions=2, leaders=0, preferred_leaders=2),
            ],
            lag=[
                SeriesPoint(ts=T0 - timedelta(minutes=m), key="billing", value=10.0 * m) for m in (10, 5, 0)
            ],
            disk_used_bytes=[SeriesPoint(ts=T0 - timedelta(minutes=m), key="0", value=1e9) for m in (10, 0)],
        ),
    )


def test_table_names_subjects_the_way_people_do() -> None:
    text = table.render(diagnosis(), members=True)
    assert "group billing on orders-0" in text
    assert "Not read: quorum" in text
    assert "2 brokers (1 alive), 2 topics, 7 partitions, 1 consumer groups" in text
    assert text.rstrip().endswith(
        "2 incidents (1 critical, 1 warning, 0 info) from 2 findings in 2.5 s: critical (exit 4)"
    )


def test_html_has_three_plots_and_escapes_names() -> None:
    page = html.render(diagnosis())
    assert page.count('src="data:image/png;base64,') == 3
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;" in page
    assert '<span class="verdict critical">critical</span>' in page


def test_healthy_diagnosis_without_summary() -> None:
    d = Diagnosis(cluster="c", taken_at=T0)
    assert "No findings." in table.render(d) and "healthy (exit 0)" in table.render(d)
    assert "No findings." in html.render(d)
