"""The visibility comparison (collect.visibility): pure, over every shape of answer."""

from __future__ import annotations

import pytest

from kafka_health.collect import parse, security_errors
from kafka_health.collect.results import Partial
from kafka_health.collect.visibility import DENIED_LOG_DIRS, Visibility, compare, from_log_dirs
from kafka_health.models.snapshot import LogDir

DENIED = (
    "CLUSTER_AUTHORIZATION_FAILED: the broker listed no log directory (Kafka answers so when the "
    "principal may not DESCRIBE the cluster)"
)


def test_nothing_hidden_when_every_topic_is_visible() -> None:
    v = compare(
        {1: {"a": [0, 1]}, 2: {"a": [1, 0], "__consumer_offsets": [3]}}, ["a", "__consumer_offsets"], {}
    )
    assert v == Visibility({}, None, ())
    assert v.complete and not v.denied and v.hidden_partition_count() == 0
    assert "visible" in v.message()


def test_hidden_counted_once_per_partition_across_brokers() -> None:
    replicas = {
        0: {"orders": [0, 1], "__consumer_offsets": [0, 7]},
        1: {"orders": [1, 2], "__consumer_offsets": [7, 9], "seen": [0]},
        2: {"orders": [0, 2]},
    }
    v = compare(replicas, ["seen"], {})
    assert v.hidden == {"__consumer_offsets": (0, 7, 9), "orders": (0, 1, 2)}
    assert v.hidden_partition_count() == 6
    assert v.denied and not v.complete
    text = v.message()
    assert text.startswith("authorization denied: 6 partitions in 2 topics on the brokers are hidden")
    assert "__consumer_offsets, orders" in text
    assert "DESCRIBE on TOPIC" in text
    assert "kafka-acls --add --allow-principal User:<name> --operation Describe --topic '*'" in text
    assert security_errors.kind_of(text) is security_errors.Kind.AUTHORIZATION
    assert security_errors.authorization_denied("visibility", text) is None  # never rewritten


def test_singular_and_many_names() -> None:
    assert "1 partition in 1 topic " in compare({0: {"t": [4]}}, [], {}).message()
    many = compare({0: {f"t{i}": [0] for i in range(8)}}, [], {})
    assert "t0, t1, t2, t3, t4 and 3 more" in many.message()


def test_internal_metadata_log_and_empty_names_never_hidden() -> None:
    assert compare({0: {"__cluster_metadata": [0], "": [1]}}, [], {}).hidden == {}


def test_partial_comparison_names_the_unread_brokers() -> None:
    v = compare({0: {"x": [0]}}, [], {2: "timed out after 10.0s", 1: "timed out"})
    assert v.brokers_unread == (1, 2) and v.unchecked is None
    assert v.message().endswith("broker(s) 1, 2 could not be read: the count may be low")
    clean = compare({0: {"x": [0]}}, ["x"], {3: "timed out"})
    assert not clean.complete and not clean.denied
    assert "nothing is hidden on the brokers read" in clean.message()


@pytest.mark.parametrize(
    "reason",
    [
        DENIED,
        "ClusterAuthorizationFailedError: x",
        "authorization denied: the principal lacks DESCRIBE on CLUSTER kafka-cluster",
    ],
)
def test_denied_log_dirs_cannot_check(reason: str) -> None:
    v = compare({}, ["a"], {0: reason, 1: "timed out"})
    assert v.unchecked == DENIED_LOG_DIRS and v.denied
    assert "the totals cannot be checked" in v.message()
    assert "--operation Describe --cluster" in v.message()
    assert security_errors.kind_of(v.message()) is security_errors.Kind.AUTHORIZATION


def test_unreadable_for_other_reasons_is_not_authorization() -> None:
    v = compare({}, [], {1: "timed out after 10.0s"})
    assert v.unchecked is not None and "broker 1: timed out" in v.unchecked and not v.denied
    assert security_errors.kind_of(v.message()) is None
    none = compare({}, [], {})
    assert none.unchecked is not None and "none is alive" in none.unchecked


def test_from_log_dirs_merges_dirs_and_leaves_out_future_replicas() -> None:
    answer = [
        {
            "log_dir": "/d1",
            "error_code": 0,
            "topics": [
                {"name": "h", "partitions": [{"partition_index": 0, "partition_size": 5}]},
                {"name": "moving", "partitions": [{"partition_index": 1, "is_future_key": True}]},
            ],
        },
        {
            "log_dir": "/d2",
            "error_code": 0,
            "topics": [{"name": "h", "partitions": [{"partition_index": 2}]}],
        },
        {
            "log_dir": "/bad",
            "error_code": 57,
            "topics": [{"name": "lost", "partitions": [{"partition_index": 0}]}],
        },
    ]
    dirs = parse.log_dirs(0, answer)
    assert [d.sizes for d in dirs] == [{"h": {0: 5}}, {"h": {2: 0}}, {}]
    assert "sizes" not in dirs[0].model_dump()  # never serialized into snapshots
    v = from_log_dirs(Partial(values={0: dirs}, errors={1: DENIED}), [])
    assert v.hidden == {"h": (0, 2)} and v.brokers_unread == (1,)


def test_from_log_dirs_empty_answer() -> None:
    assert from_log_dirs(Partial(), []).unchecked is not None
    assert from_log_dirs(Partial(values={0: [LogDir(broker_id=0, path="/d")]}), []).complete


# ------------------------------------------------------------------ finding, incident, status
from datetime import UTC, datetime  # noqa: E402

from kafka_health.diagnose.incidents import group_incidents  # noqa: E402
from kafka_health.diagnose.missing import missing_findings  # noqa: E402
from kafka_health.models.findings import Diagnosis, IncidentKind, Severity  # noqa: E402
from kafka_health.models.snapshot import Missing  # noqa: E402
from kafka_health.report.status import denied_view  # noqa: E402

HIDDEN = compare({0: {"orders": [0, 1, 2]}}, ["seen"], {}).message()


@pytest.mark.parametrize(
    ("hidden", "visible", "severity"),
    [
        (3, 4, Severity.WARNING),
        (3, 3, Severity.CRITICAL),
        (3, 0, Severity.CRITICAL),
        (0, 0, Severity.WARNING),
    ],
)
def test_visibility_finding_severity_rule(hidden: int, visible: int, severity: Severity) -> None:
    (f,) = missing_findings([Missing(part="visibility", reason=HIDDEN)], hidden=hidden, visible=visible)
    assert (f.check, f.severity) == ("visibility", severity)
    assert f.message.startswith("Authorization denied: 3 partitions in 1 topic")
    assert f.evidence["hidden_partitions"] == hidden


def test_visibility_incident_and_group_offsets_join_their_group() -> None:
    missing = [
        Missing(part="visibility", reason=HIDDEN),
        Missing(
            part="group_offsets:billing",
            reason="authorization denied: the principal lacks DESCRIBE on TOPIC orders",
        ),
    ]
    findings = missing_findings(missing, hidden=3, visible=10)
    incidents = {i.id: i for i in group_incidents(findings)}
    assert set(incidents) == {"visibility:cluster", "consumer_group:billing"}
    vis = incidents["visibility:cluster"]
    assert vis.kind is IncidentKind.VISIBILITY and vis.severity is Severity.WARNING
    assert "DESCRIBE on TOPIC" in vis.title and "KafkaAuthorizationDenied" in vis.remediation
    assert incidents["consumer_group:billing"].findings[0].subject.group == "billing"
    d = Diagnosis(
        cluster="c", taken_at=datetime.now(UTC), findings=findings, missing=[m.part for m in missing]
    )
    assert d.exit_code() == 1
    text = denied_view(d)
    assert text is not None and text.startswith("Authorization denied: 3 partitions")
    assert text.endswith("(and 1 more part denied)")


def test_unchecked_totals_and_other_parts() -> None:
    unchecked = compare({}, [], {0: DENIED}).message()
    (f,) = missing_findings([Missing(part="visibility", reason=unchecked)])
    assert f.severity is Severity.WARNING and "the totals cannot be checked" in f.message
    d = Diagnosis(cluster="c", taken_at=datetime.now(UTC), findings=[f])
    assert d.exit_code() == 1 and "totals cannot be checked" in (denied_view(d) or "")
    timed_out = compare({}, [], {0: "timed out"}).message()
    (g,) = missing_findings([Missing(part="visibility", reason=timed_out)])
    assert denied_view(Diagnosis(cluster="c", taken_at=datetime.now(UTC), findings=[g])) is None
    (h,) = missing_findings([Missing(part="configs:t", reason="authorization denied: the principal lacks X")])
    text = denied_view(Diagnosis(cluster="c", taken_at=datetime.now(UTC), findings=[h]))
    assert text == "Could not read configs:t: authorization denied: the principal lacks X"
