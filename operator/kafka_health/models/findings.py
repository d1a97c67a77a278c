"""`Finding`: one problem the diagnosis saw, with the evidence and the remediation it suggests."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.snapshot import GroupKind


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "critical": 2}[self.value]


class SubjectKind(StrEnum):
    CLUSTER = "cluster"
    BROKER = "broker"
    TOPIC = "topic"
    PARTITION = "partition"
    GROUP = "group"


class Subject(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SubjectKind
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    group: str | None = None

    def key(self) -> str:
        """A stable string id (used to tell when a finding appears or clears)."""
        parts = [self.kind.value]
        for name in ("broker", "topic", "partition", "group"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value}")
        return "/".join(parts)


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    check: str = Field(description="Check id, e.g. 'under_replicated', 'leader_imbalance'.")
    severity: Severity
    subject: Subject
    message: str = Field(description="One sentence a person can act on.")
    evidence: dict[str, float | int | str | None] = Field(default_factory=dict)
    remediation: str | None = Field(
        None,
        description="The remediation this suggests: 'preferred_leader_election', 'rolling_restart', 'offset_reset', or a manual hint.",
    )

    def key(self) -> str:
        return f"{self.check}:{self.subject.key()}"


class BrokerSummary(BaseModel):
    """Load and disk of one broker as the diagnosis saw it (for reports and status)."""

    model_config = ConfigDict(extra="forbid")

    broker: int
    alive: bool | None = None
    partitions: int = Field(0, description="Replicas hosted.")
    leaders: int = 0
    preferred_leaders: int = Field(0, description="Partitions whose first replica is this broker.")
    used_bytes: int | None = Field(None, description="Bytes of Kafka's logs on the broker's log dirs.")
    total_bytes: int | None = Field(None, description="Size of the log-dir volumes, when reported.")
    usable_bytes: int | None = Field(None, description="Free bytes on the log-dir volumes, when reported.")


class SeriesPoint(BaseModel):
    """One point of a time series in a diagnosis summary (key: a group id or a broker id)."""

    model_config = ConfigDict(extra="forbid")

    ts: datetime
    key: str
    value: float


class GroupTopicLag(BaseModel):
    """A group's largest lag in seconds on one topic, now (spark/kafka_health_spark/checks/lag_time.py)."""

    model_config = ConfigDict(extra="forbid")

    group: str
    topic: str
    kind: GroupKind = Field("unknown", description="The group's type (ConsumerGroup.kind).")
    seconds: float
    lower_bound: bool = Field(
        False,
        description="The log end passed the committed offset before the history's oldest sample: at least this.",
    )


class DiagnosisSummary(BaseModel):
    """The numbers behind a report's plots; small by construction (per broker, top groups)."""

    model_config = ConfigDict(extra="forbid")

    topics: int = 0
    partitions: int = 0
    groups: int = 0
    brokers: list[BrokerSummary] = Field(default_factory=list)
    lag: list[SeriesPoint] = Field(
        default_factory=list, description="Total lag per group over the window (the groups with most lag)."
    )
    disk_used_bytes: list[SeriesPoint] = Field(
        default_factory=list, description="Used bytes per broker over the disk-growth window."
    )
    lag_seconds: list[GroupTopicLag] = Field(
        default_factory=list,
        description="Each group's largest lag in seconds per topic it committed offsets on, now.",
    )


class IncidentKind(StrEnum):
    """The root causes findings are grouped under; the rules that assign each finding to one
    incident are in `kafka_health.diagnose.incidents` (and docs/diagnostics.md#incidents).
    The order here is the order of the rules: a finding belongs to the first that claims it."""

    CLUSTER_UNREACHABLE = "cluster_unreachable"
    """The cluster metadata could not be read: nothing else was diagnosed."""
    VISIBILITY = "visibility"
    """Partitions on the brokers hidden from the principal (it lacks DESCRIBE on TOPIC), or the
    totals that cannot be checked (DescribeLogDirs refused): the `visibility` finding."""
    BROKER_DOWN = "broker_down"
    """A broker is fenced or no longer registered (`broker_missing`), with every partition finding
    that names it out of sync or offline, its quorum and log-dir findings, and the leader skew
    its leaderships moving away cause."""
    PLANNED_RESTART = "planned_restart"
    """A broker the operator's rolling restart is restarting on request (its pod deleted, waiting
    for it to return and catch up): what would be its `broker_down` or `broker_out_of_sync`
    incident, at severity info, naming the request id (`kafka_health.diagnose.planned`)."""
    QUORUM = "quorum"
    """The KRaft controller quorum has no leader, or voters lag (not explained by a down broker)."""
    DISK = "disk"
    """A broker's log-dir volumes: filling, filling soon, or failed."""
    REASSIGNMENT = "reassignment"
    """Partition reassignments in flight (`partition_reassigning`), with the partition findings
    whose out-of-sync replicas are all being added by one (out of sync on purpose until they have
    caught up): one incident for the cluster, never a broker "out of sync"."""
    BROKER_OUT_OF_SYNC = "broker_out_of_sync"
    """A live broker missing from ISRs, or dropping out of them repeatedly (`isr_churn`), with the
    partition findings that name it and the leader flapping of partitions it hosts."""
    NEVER_SAFE_TOPIC = "never_safe_topic"
    """A topic that can never be safe: min.insync.replicas ≥ replication factor, or RF 1. Its topic
    and partition findings (not explained by a down or out-of-sync broker) are members."""
    TOPIC_DURABILITY = "topic_durability"
    """A topic's durability settings are weaker than the policy asks (RF, min ISR, unclean election)."""
    CONSUMER_GROUP = "consumer_group"
    """A consumer group lagging, stalled, rebalancing, or with offsets out of range or expiring,
    over all its partitions."""
    LEADERSHIP = "leadership"
    """Leaders off their preferred replicas, or leader counts skewed, with no broker down."""
    CERTIFICATES = "certificates"
    """The certificates the brokers serve: ending soon or ended (`listener_certificate_expiry`),
    from more than one issuer (`listener_certificate_mismatch`), or not read."""
    CHECK = "check"
    """Any other finding: one incident per check, so nothing is lost."""


class PartitionRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


MAX_INCIDENT_PARTITIONS = 1000
MAX_INCIDENT_GROUPS = 100


class Incident(BaseModel):
    """Findings with one root cause: what is wrong, how bad, what the operator does about it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        description="Stable across cycles while the cause persists: '<kind>:<root>', e.g. 'broker_down:2', "
        "'consumer_group:billing', 'never_safe_topic:orders', 'leadership:cluster', 'check:leader_flapping'."
    )
    kind: IncidentKind
    severity: Severity = Field(
        description="The worst severity of its findings; info for a planned_restart (absent by request)."
    )
    subject: Subject = Field(
        description="The root cause's subject (a broker, a topic, a group, the cluster)."
    )
    title: str = Field(description="One line: the cause and its reach.")
    evidence: dict[str, float | int | str | None] = Field(default_factory=dict)
    remediation: str = Field(description="What the operator would do about it, or why it will not act.")
    action: str | None = Field(
        None,
        description="The remediation the operator can take by itself ('preferred_leader_election'), "
        "or None when it takes none.",
    )
    partitions: list[PartitionRef] = Field(
        default_factory=list,
        description=f"Partitions it affects (at most {MAX_INCIDENT_PARTITIONS}; partitions_total counts all).",
    )
    partitions_total: int = 0
    groups: list[str] = Field(
        default_factory=list,
        description=f"Consumer groups it affects (at most {MAX_INCIDENT_GROUPS}; groups_total counts all).",
    )
    groups_total: int = 0
    findings: list[Finding] = Field(default_factory=list, description="Its member findings, worst first.")


class Diagnosis(BaseModel):
    """All findings of one diagnosis cycle, and the incidents they group into."""

    model_config = ConfigDict(extra="forbid")

    cluster: str
    taken_at: datetime
    incidents: list[Incident] = Field(
        default_factory=list,
        description="The findings grouped by root cause, worst first; every finding is in exactly one.",
    )
    findings: list[Finding] = Field(default_factory=list)
    missing: list[str] = Field(
        default_factory=list, description="Parts of the snapshot that could not be read."
    )
    duration_seconds: float | None = None
    certificates_not_after: dict[int, datetime] = Field(
        default_factory=dict,
        description="Broker id -> earliest end of validity of the certificate chain it serves (TLS "
        "connections only): kafka_health_listener_certificate_expiry_timestamp_seconds.",
    )
    summary: DiagnosisSummary | None = Field(
        None, description="Per-broker load and time series behind the findings (reports, plots)."
    )

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), key=lambda s: s.rank, default=None)

    def exit_code(self) -> int:
        """0 healthy, 1 warnings, 4 critical (the `diagnose` CLI contract: 2 is click's usage
        error and 3 a command that could not run, as in every `kafka-health` command)."""
        worst = self.worst
        if worst is Severity.CRITICAL:
            return 4
        if worst is Severity.WARNING:
            return 1
        return 0
