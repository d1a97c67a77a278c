"""What the diagnosis says about parts the snapshot could not read: an unanswered quorum is a
critical quorum_no_leader, every other unread part a snapshot_incomplete warning."""

from __future__ import annotations

import pytest

from kafka_health.collect.results import ZOOKEEPER_MODE
from kafka_health.diagnose.missing import missing_findings, quorum_lost, quorum_unanswered
from kafka_health.models.findings import Severity
from kafka_health.models.snapshot import Missing


@pytest.mark.parametrize(
    "reason",
    [
        "timed out after 6.0s",
        "KafkaTimeoutError: Timeout after waiting for 6000 ms",
        "NotLeaderOrFollowerError: [Error 6] NotLeaderOrFollowerError",
        "LEADER_NOT_AVAILABLE: there is no leader",
    ],
)
def test_an_unanswered_quorum_is_a_critical_no_leader(reason: str) -> None:
    (found,) = missing_findings([Missing(part="quorum", reason=reason)])
    assert (found.check, found.severity) == ("quorum_no_leader", Severity.CRITICAL)
    assert reason in found.message and "majority of controllers" in found.message
    assert found.evidence["part"] == "quorum" and found.remediation


@pytest.mark.parametrize(
    ("part", "reason"),
    [
        ("quorum", ZOOKEEPER_MODE),
        (
            "quorum",
            "authorization denied: the principal lacks DESCRIBE on CLUSTER kafka-cluster (grant it: ...)",
        ),
        ("quorum", "the Kafka client process crashed (exit 1) twice; the call was retried once, timed out"),
        ("quorum", "parse error: voters"),
        ("log_dirs:2", "timed out after 6.0s"),
        ("broker_registrations", "timed out after 6.0s"),
    ],
)
def test_other_unread_parts_stay_incomplete_warnings(part: str, reason: str) -> None:
    assert not quorum_unanswered(Missing(part=part, reason=reason))
    (found,) = missing_findings([Missing(part=part, reason=reason)])
    assert (found.check, found.severity) == ("snapshot_incomplete", Severity.WARNING)


def test_a_quorum_timeout_beside_a_hanging_broker_is_not_called_lost() -> None:
    """A DescribeQuorum that went to a frozen or dying broker times out like a lost quorum; the
    rest of the snapshot tells them apart: that broker's other calls time out too, or it is no
    longer alive (fenced). Then the quorum stays an incomplete part, a warning."""
    quorum = Missing(part="quorum", reason="timed out after 6.0s")
    beside = [quorum, Missing(part="offsets:orders", reason="_TIMED_OUT: ListOffsets timed out")]
    assert quorum_lost(beside, brokers_all_alive=True) is None
    assert {f.check for f in missing_findings(beside)} == {"snapshot_incomplete"}
    assert quorum_lost([quorum], brokers_all_alive=False) is None
    (found,) = missing_findings([quorum], brokers_all_alive=False)
    assert (found.check, found.severity) == ("snapshot_incomplete", Severity.WARNING)
    # Other parts missing for other reasons do not hide a lost quorum, nor do the kafka-python
    # calls that shared DescribeQuorum's connection (measured with 2 of 3 controllers down).
    refused = [quorum, Missing(part="configs:orders", reason="authorization denied: ...")]
    assert quorum_lost(refused, brokers_all_alive=True) is quorum
    timeout = "RequestTimedOutError: [Error 7] RequestTimedOutError: Request timed out after 5965 ms"
    shared = [
        Missing(part="broker_registrations", reason=timeout),
        quorum,
        Missing(part="log_dirs:0", reason=timeout),
        Missing(part="reassignments", reason=timeout),  # answered by the active controller
    ]
    assert quorum_lost(shared, brokers_all_alive=True) is quorum


def test_a_lost_quorum_is_told_apart_from_log_dirs_that_timed_out_with_it() -> None:
    """Measured on the dedicated-controller testbed: with the quorum lost, kafka-python's log-dir
    reads time out on the same connection, and the `visibility` part says the totals cannot be
    checked for that reason. Neither hides the lost quorum; the visibility part stays a warning."""
    timeout = "RequestTimedOutError: [Error 7] RequestTimedOutError: Request timed out after 2981 ms"
    parts = [
        Missing(part="quorum", reason=timeout),
        Missing(part="log_dirs:0", reason=timeout),
        Missing(part="visibility", reason=f"no broker's log dirs could be read (broker 0: {timeout})"),
    ]
    assert quorum_lost(parts, brokers_all_alive=True) is parts[0]
    found = {f.check: f.severity for f in missing_findings(parts)}
    assert found == {
        "quorum_no_leader": Severity.CRITICAL,
        "snapshot_incomplete": Severity.WARNING,
        "visibility": Severity.WARNING,
    }
