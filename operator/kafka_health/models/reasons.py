"""Every machine-readable reason the operator emits, in one place.

Condition reasons, Event reasons, withheld reasons (status.withheld, the Remediating condition),
a roll's wait reasons and the restart-safety blocker rules are the enums below. Their values are
API (alerts, `kubectl get events --field-selector reason=...` and scripts match on them): never
change a value, only add. Each value is documented in docs/observability.md; a test
(tests/unit/test_reasons.py) fails when a reason here is missing from the doc, when the doc lists
one that is not here, and when code emits a string reason that is not here.

To add a reason: add a member to the enum that fits (or a new `StrEnum` subclass in this module:
`all_reasons()` finds it), document it in docs/observability.md, and pass the member (not a
string) where it is emitted.
"""

from __future__ import annotations

import logging
import os
import sys
from enum import StrEnum

log = logging.getLogger(__name__)


class ProblemReason(StrEnum):
    """Why a cycle could not diagnose: Ready=False, Degraded=True, Healthy=Unknown, and a Warning
    Event once when the problem starts."""

    KAFKA_UNREACHABLE = "KafkaUnreachable"
    KAFKA_AUTHENTICATION_FAILED = "KafkaAuthenticationFailed"
    """SASL refused the credentials (wrong password, unknown user, a mechanism the listener lacks)."""
    KAFKA_TLS_HANDSHAKE_FAILED = "KafkaTLSHandshakeFailed"
    """TLS failed for a cause none of the KafkaTLS* reasons below names (or that could not be checked)."""
    KAFKA_TLS_UNTRUSTED_CERTIFICATE = "KafkaTLSUntrustedCertificate"
    """The broker certificate is not signed by the CA the policy gives (`tls.ca`)."""
    KAFKA_TLS_HOSTNAME_MISMATCH = "KafkaTLSHostnameMismatch"
    """The broker certificate does not name the bootstrap host; the message lists the names it carries."""
    KAFKA_TLS_CERTIFICATE_EXPIRED = "KafkaTLSCertificateExpired"
    """The broker certificate (or its CA) has expired or is not yet valid."""
    KAFKA_TLS_CLIENT_CERTIFICATE_REFUSED = "KafkaTLSClientCertificateRefused"
    """The broker refused the client certificate (`tls.certificate`/`tls.key`: missing, untrusted, expired)."""
    KAFKA_SECURITY_PROTOCOL_MISMATCH = "KafkaSecurityProtocolMismatch"
    """The client's security.protocol is not the listener's (SASL or TLS to a listener that does not speak it)."""
    KAFKA_ZOOKEEPER_MODE_UNSUPPORTED = "KafkaZooKeeperModeUnsupported"
    """The brokers do not serve the KRaft quorum API (DescribeQuorum): a ZooKeeper-mode cluster; KRaft only."""
    SECRET_NOT_FOUND = "SecretNotFound"  # noqa: S105 (a reason, not a secret)
    SECRET_UNREADABLE = "SecretUnreadable"  # noqa: S105 (a reason, not a secret)
    INVALID_SPEC = "InvalidSpec"
    CYCLE_FAILED = "CycleFailed"
    DIAGNOSIS_TIMED_OUT = "DiagnosisTimedOut"
    """The diagnosis ran past the operator's --diagnosis-timeout; its Spark jobs were cancelled."""
    SPARK_DRIVER_LOST = "SparkDriverLost"
    """The embedded Spark driver JVM exited during the cycle (out of heap: exit code 3)."""


class DegradedReason(StrEnum):
    """Degraded=True while the diagnosis still runs: something blocks remediation."""

    CLUSTER_PARTLY_UNREADABLE = "ClusterPartlyUnreadable"
    KAFKA_AUTHORIZATION_DENIED = "KafkaAuthorizationDenied"
    """The principal lacks an ACL some part of the snapshot needs; the message names operation and resource."""
    STATEFUL_SET_NOT_FOUND = "StatefulSetNotFound"
    BROKER_PODS_NOT_FOUND = "BrokerPodsNotFound"
    REMEDIATION_HALTED = "RemediationHalted"
    """A halted roll; it stays until the spec changes (a new generation)."""


class StateReason(StrEnum):
    """The reasons of conditions in their ordinary states."""

    DIAGNOSED = "Diagnosed"
    """Ready=True: the latest cycle read and diagnosed the cluster in time."""
    SLOW_CYCLE = "SlowCycle"
    """Ready=True: diagnosed, but the cycle took longer than the interval (not Degraded)."""
    NO_PROBLEMS_FOUND = "NoProblemsFound"
    WARNING_FINDINGS = "WarningFindings"
    CRITICAL_FINDINGS = "CriticalFindings"
    AS_EXPECTED = "AsExpected"
    PLANNED_RESTART = "PlannedRestart"
    """Degraded=False: the operator's roll is restarting a broker on request; its absence (and
    its unread log dirs, and unread offsets of partitions on it) is expected, and nothing else is unreadable. Healthy=True: the only
    warnings or critical findings are those that restart explains (a `planned_restart` incident)."""
    IDLE = "Idle"
    ACTING = "Acting"
    RESUMING = "Resuming"


class WithheldReason(StrEnum):
    """Why an action did not run. CamelCase, so they double as condition and Event reasons."""

    MODE_OBSERVE = "ModeObserve"
    DRY_RUN = "DryRun"
    PAUSED = "Paused"
    OUTSIDE_MAINTENANCE_WINDOW = "OutsideMaintenanceWindow"
    AWAITING_APPROVAL = "AwaitingApproval"
    RATE_LIMITED = "RateLimited"
    COOLING_DOWN = "CoolingDown"
    CIRCUIT_BREAKER_OPEN = "CircuitBreakerOpen"
    CLUSTER_LOCKED = "ClusterLocked"
    QUEUED = "Queued"
    OFFLINE_PARTITIONS = "OfflinePartitions"
    NO_QUORUM_LEADER = "NoQuorumLeader"
    SNAPSHOT_UNREADABLE = "SnapshotUnreadable"
    SNAPSHOT_INCOMPLETE = "SnapshotIncomplete"
    SNAPSHOT_STALE = "SnapshotStale"
    ROLL_IN_FLIGHT = "RollInFlight"
    UNSAFE_TO_RESTART = "UnsafeToRestart"
    PAUSING_BETWEEN_BROKERS = "PausingBetweenBrokers"
    BROKER_NOT_READY = "BrokerNotReady"
    NEVER_SAFE_PARTITIONS = "NeverSafePartitions"
    REASSIGNMENT_IN_PROGRESS = "ReassignmentInProgress"
    GROUP_NOT_EMPTY = "GroupNotEmpty"
    INVALID_REQUEST = "InvalidRequest"
    NOTHING_TO_DO = "NothingToDo"


class RollWaitReason(StrEnum):
    """Why a roll waits between brokers (the Remediating condition's reason while it does, and a
    Warning Event once per wait)."""

    WAITING_FOR_SAFETY = "WaitingForSafety"
    """A restart safety rule forbids the next broker (URP, min ISR, quorum, never-safe partitions)."""
    WAITING_FOR_BROKER_READY = "WaitingForBrokerReady"
    """A broker pod is not Ready (or terminating): one broker at a time."""
    REASSIGNMENT_IN_PROGRESS = "ReassignmentInProgress"
    """A partition reassignment in flight involves the next broker (restart safety rule 5): the
    roll holds until it completes, up to timeouts.reassignment, never taken for a failed broker."""


class EventReason(StrEnum):
    """Event-only reasons (Events may also carry the problem, wait and withheld reasons above)."""

    INCIDENT_OPENED = "IncidentOpened"
    """Warning, once when an incident (findings grouped by root cause) appears."""
    INCIDENT_RESOLVED = "IncidentResolved"
    """Normal, once when an incident is gone."""
    FINDING_APPEARED = "FindingAppeared"
    """No longer posted (Events are per incident since IncidentOpened); kept: values are API."""
    FINDING_CLEARED = "FindingCleared"
    """No longer posted (see IncidentResolved); kept: values are API."""
    RECOVERED = "Recovered"
    SLOW_CYCLE = "SlowCycle"
    """Warning, once when cycles start taking longer than the interval."""
    ELECTION_STARTED = "ElectionStarted"
    ELECTION_SUCCEEDED = "ElectionSucceeded"
    ELECTION_FAILED = "ElectionFailed"
    OFFSET_RESET_SUCCEEDED = "OffsetResetSucceeded"
    OFFSET_RESET_WAITING = "OffsetResetWaiting"
    OFFSET_RESET_FAILED = "OffsetResetFailed"
    TRANSACTION_ABORTED = "TransactionAborted"
    TRANSACTION_ABORT_FAILED = "TransactionAbortFailed"
    """Warning: the transaction was not hanging (or not found), or the abort did not take."""
    ROLL_STARTED = "RollStarted"
    BROKER_RESTARTED = "BrokerRestarted"
    LEADERSHIP_DRAINED = "LeadershipDrained"
    """Normal: a broker of a roll had its leaderships moved before its restart, and given back after."""
    BATCH_STARTED = "BatchStarted"
    """Normal: brokers of a roll (maxConcurrent > 1) are about to be restarted together, and why these."""
    ROLL_HALTED = "RollHalted"
    ROLL_SUCCEEDED = "RollSucceeded"
    KOPF_LOGGING = "Logging"
    """Posted by Kopf itself for operator log records of level WARNING and above about a policy."""


class BlockerRule(StrEnum):
    """A rolling-restart safety rule that forbids restarting a broker now (snake_case: shown in
    status messages and the CLI's restart plan)."""

    UNKNOWN_BROKER = "unknown_broker"
    ONE_AT_A_TIME = "one_at_a_time"
    RECOVERING = "recovering"
    UNDER_REPLICATED = "under_replicated"
    OFFLINE = "offline"
    MIN_ISR = "min_isr"
    MIN_ISR_UNKNOWN = "min_isr_unknown"
    NEVER_SAFE = "never_safe"
    QUORUM = "quorum"
    QUORUM_UNKNOWN = "quorum_unknown"
    CONTROLLER_LAST = "controller_last"
    PODS_UNKNOWN = "pods_unknown"
    REASSIGNMENT = "reassignment"
    REASSIGNMENT_UNKNOWN = "reassignment_unknown"


def reason_enums() -> list[type[StrEnum]]:
    """Every reason enum of this module (new subclasses are found without registering them)."""
    module = sys.modules[__name__]
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, StrEnum)
        and value is not StrEnum
        and value.__module__ == __name__
    ]


def all_reasons() -> dict[str, list[type[StrEnum]]]:
    """Every reason value → the enums that define it (a value may be shared, e.g. SlowCycle)."""
    out: dict[str, list[type[StrEnum]]] = {}
    for enum in reason_enums():
        for member in enum:
            out.setdefault(member.value, []).append(enum)
    return out


STRICT_ENV = "KAFKA_HEALTH_STRICT_REASONS"
"""Set (to 1) by the test suite: an unknown reason raises instead of being logged."""


class UnknownReason(ValueError):
    """A reason that is not in this module (and so not documented)."""


def checked(reason: str) -> str:
    """`reason` unchanged when this module defines it. Otherwise an error is logged (an undocumented
    reason is a bug, not a reason to drop the status or Event), and under the test suite raised."""
    if reason not in _KNOWN:
        _KNOWN.update(all_reasons())  # a member added at run time (tests)
    if reason not in _KNOWN:
        message = f"reason {reason!r} is not defined in kafka_health.models.reasons (nor documented)"
        if os.environ.get(STRICT_ENV):
            raise UnknownReason(message)
        log.error(message)
    return reason


_KNOWN: dict[str, list[type[StrEnum]]] = all_reasons()
