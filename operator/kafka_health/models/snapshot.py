"""`ClusterSnapshot`: what `collect` read from one Kafka cluster at one instant.

A snapshot never hides a gap: whatever could not be read is listed in `missing` with the
reason, and the fields it would have filled stay empty/None rather than guessed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

GroupKind = Literal["classic", "consumer", "share", "streams", "unknown"]
GROUP_KINDS: tuple[GroupKind, ...] = ("classic", "consumer", "share", "streams")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Broker(_Model):
    id: int
    host: str
    port: int
    rack: str | None = None
    alive: bool = Field(description="Registered (unfenced) in the cluster metadata right now.")
    fenced: bool | None = Field(
        None,
        description=(
            "True: registered with the KRaft controller but fenced (stopped or lost its session); "
            "None: unknown (e.g. known only as a replica, with host '' and port 0)."
        ),
    )

    @property
    def state(self) -> str:
        """In words: `alive`; `fenced` (registered, but stopped, paused or without a session: what
        KRaft does to a stopped broker); else `not in the cluster metadata`."""
        if self.alive:
            return "alive"
        return "fenced" if self.fenced else "not in the cluster metadata"


class QuorumVoter(_Model):
    id: int
    log_end_offset: int | None = None
    lag: int | None = Field(None, description="Leader's log end offset minus this voter's.")
    last_caught_up_ms: int | None = None


class Quorum(_Model):
    leader_id: int | None = Field(
        None, description="The active KRaft controller; None when there is no leader."
    )
    leader_epoch: int | None = None
    high_watermark: int | None = None
    voters: list[QuorumVoter] = Field(default_factory=list)
    observers: list[QuorumVoter] = Field(default_factory=list)


class Partition(_Model):
    topic: str
    partition: int
    leader: int | None = Field(description="None when the partition is offline.")
    replicas: list[int]
    isr: list[int]

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None


class EligibleLeaders(_Model):
    """A partition's eligible leader replicas (KIP-966, Kafka 4.1+ clusters by default): replicas
    out of the ISR that are still safe leaders, because they left it only when the ISR had
    shrunk below min.insync.replicas; Kafka elects one of them cleanly when it returns. The
    last-known ELR names the replicas that were last in it when it emptied."""

    topic: str
    partition: int
    elr: list[int] = Field(default_factory=list)
    last_known_elr: list[int] = Field(default_factory=list)


class Reassignment(_Model):
    """A partition reassignment in flight (ListPartitionReassignments): `replicas` is the set
    Kafka keeps during the move (old and new together); `adding` are out of the ISR on purpose
    until they have caught up, `removing` leave when it completes."""

    topic: str
    partition: int
    replicas: list[int] = Field(default_factory=list)
    adding: list[int] = Field(default_factory=list)
    removing: list[int] = Field(default_factory=list)


class ReplicaLag(_Model):
    """How far one replica that is out of its partition's ISR, or being added by a reassignment,
    trails the partition's leader: the leader's log size minus this replica's, both from the
    brokers' DescribeLogDirs answers (Kafka reports no follower offsets to clients). Bytes, not
    records: retention deletes whole segments on each replica at its own pace, so a replica in
    sync can differ by a segment; for one that is catching up the gap is what is left to copy.
    The history keeps it every cycle, which is how a replica is told catching up from stuck."""

    topic: str
    partition: int
    broker: int
    size_bytes: int = Field(description="This replica's log size on its broker.")
    leader_size_bytes: int = Field(description="The leader's log size of the partition.")

    @property
    def lag_bytes(self) -> int:
        return max(0, self.leader_size_bytes - self.size_bytes)


class BrokerThrottle(_Model):
    """A broker's replication throttle rates (`leader.replication.throttled.rate`,
    `follower.replication.throttled.rate`, bytes/s; None: not set). They throttle only the
    replicas the topics' `*.replication.throttled.replicas` name; `kafka-reassign-partitions
    --throttle` sets both, and `--verify` removes them once the reassignment completes."""

    broker: int
    leader_rate: int | None = None
    follower_rate: int | None = None


class ListenerCertificate(_Model):
    """The certificate chain one broker serves on the listener the client reaches it through,
    read by a TLS handshake of our own (`collect/tls_probe.py`). `not_after` is the earliest end
    of validity in the served chain (the broker's own certificate or an intermediate CA) and
    `expiring` the subject of that certificate: whichever ends first takes the listener down."""

    broker: int
    address: str = Field(description="host:port as the metadata advertises it.")
    subject: str = Field(description="The broker certificate's subject (RFC 4514).")
    issuer: str = Field(description="The broker certificate's issuer (RFC 4514).")
    fingerprint_sha256: str = Field(description="SHA-256 of the broker certificate (DER), hex.")
    leaf_not_after: datetime = Field(description="End of validity of the broker certificate.")
    not_after: datetime = Field(description="Earliest end of validity in the served chain.")
    expiring: str = Field(description="Subject of the served certificate that ends first.")
    chain_length: int = Field(description="Certificates the broker served (1: its own only).")
    verified: bool = Field(description="The chain verified against the client's CA and host name check.")
    verify_error: str | None = Field(None, description="OpenSSL's verify result when not verified.")


class OpenTransaction(_Model):
    """A transaction a partition's leader holds open (DescribeProducers) for longer than the
    policy's transaction timeout, and what its coordinator says of it (ListTransactions by
    producer id, then DescribeTransactions), as `kafka-transactions.sh find-hanging` reads them.
    It is hanging when the coordinator does not list this partition in a transaction of this
    producer (`coordinator_lists_partition` false): nothing will ever write its end marker, and
    the partition's last stable offset stays at `start_offset` until it is aborted."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int = Field(description="-1 when the leader knows none.")
    start_offset: int = Field(description="The transaction's first offset: where the LSO is held.")
    last_timestamp: datetime = Field(description="When the leader last heard from this producer.")
    transactional_id: str | None = Field(
        None, description="The coordinator's transactional id for this producer id (none found: null)."
    )
    coordinator_state: str | None = Field(None, description="That transaction's state (Ongoing, Empty, …).")
    coordinator_lists_partition: bool = Field(
        description="The coordinator's transaction of this producer includes this partition."
    )


class TopicConfig(_Model):
    """The effective values of the configs the diagnosis needs (broker defaults applied)."""

    topic: str
    min_insync_replicas: int | None = None
    unclean_leader_election_enable: bool | None = None
    retention_ms: int | None = None
    retention_bytes: int | None = None
    cleanup_policy: str | None = None
    leader_replication_throttled_replicas: str | None = Field(
        None, description="Replicas throttled as leaders ('partition:broker,...' or '*'); None: none."
    )
    follower_replication_throttled_replicas: str | None = Field(
        None, description="Replicas throttled as followers ('partition:broker,...' or '*'); None: none."
    )


class PartitionOffsets(_Model):
    topic: str
    partition: int
    log_start_offset: int | None = None
    log_end_offset: int | None = Field(None, description="The high watermark: the end consumers can read.")
    last_stable_offset: int | None = Field(
        None,
        description="The end a read_committed consumer can read: below the first offset of the "
        "partition's oldest open transaction, else the high watermark. None: not read.",
    )


class GroupOffset(_Model):
    topic: str
    partition: int
    committed_offset: int | None = Field(
        None,
        description="None: the group has committed nothing here. In a share group, its share-partition "
        "start offset: every record below it is delivered and acknowledged for good.",
    )
    committed_timestamp: datetime | None = Field(
        None,
        description="The timestamp of the record at the committed offset, fetched when the policy's "
        "consumerLag.timeLag is Exact (CLI: --time-lag exact) and the group is behind: its lag in "
        "seconds is then now minus this, not interpolated. None: not read (Interpolated, no lag, or "
        "it could not be fetched: the snapshot's `record_timestamps:<topic>` part says why).",
    )
    reported_lag: int | None = Field(
        None,
        description="The lag Kafka itself reports here, when it does: a share group's on Kafka 4.2+ "
        "(DescribeShareGroupOffsets v1), which leaves out records acknowledged past the start offset. "
        "None for consumer groups (their lag is the log end minus the committed offset).",
    )


class GroupMember(_Model):
    """One member of a consumer group, with the partitions it owns and, in a consumer-protocol
    group (KIP-848, `group.protocol=consumer`), the partitions the coordinator wants it to own.
    The member reconciles by revoking what is not in its target and then taking what is; one
    whose `assignment` stays unlike its `target` is stuck (e.g. blocked in its rebalance
    callback, or not polling), and the partitions it holds are not consumed by anyone else."""

    member_id: str
    client_id: str = ""
    host: str = ""
    assignment: list[tuple[str, int]] = Field(
        default_factory=list, description="(topic, partition) the member owns now, sorted."
    )
    target: list[tuple[str, int]] | None = Field(
        None,
        description="(topic, partition) the coordinator's target assignment gives it, sorted; None in "
        "a classic group, whose protocol has no target (the leader assigns, members only sync).",
    )
    mismatch_since: datetime | None = Field(
        None,
        description="When the history first saw this member's assignment unlike its target, in an "
        "unbroken run of recorded snapshots up to this one (`history.reconciliation`); None when it "
        "matches, has no target, or the snapshot was not recorded in a history (not judged).",
    )

    @property
    def reconciling(self) -> bool:
        """Its assignment differs from its target (never for a classic member: no target)."""
        return self.target is not None and set(self.assignment) != set(self.target)


class StreamsTopology(_Model):
    """What a streams group (KIP-1071, `group.protocol=streams`) adds to a group: the topology its
    members run, and what keeps it from running when Kafka says it is NotReady."""

    topology_epoch: int | None = Field(None, description="None: the coordinator knows no topology yet.")
    source_topics: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Subtopology id -> the topics it reads (its source topics and the repartition "
        "topics it sources from); a task `<subtopology>_<p>` reads partition p of each.",
    )
    missing_source_topics: list[str] = Field(
        default_factory=list,
        description="Source topics of the topology that the cluster does not have (compared with the "
        "snapshot's topics): what Kafka tells the members when it holds the group NotReady. Kafka's "
        "describe answer does not name them itself.",
    )


class ConsumerGroup(_Model):
    group_id: str
    state: str = Field(
        description="Kafka's group state: Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, Unknown."
    )
    kind: GroupKind = Field(
        "unknown",
        description="The group's type as Kafka lists it (ListGroups): classic (the classic rebalance "
        "protocol), consumer (KIP-848), share (KIP-932), streams (KIP-1071); unknown when Kafka does not say "
        "(a broker without ListGroups v5, before Kafka 3.8).",
    )
    members: int = 0
    member_ids: list[str] = Field(default_factory=list)
    member_details: list[GroupMember] = Field(
        default_factory=list,
        description="Each member's assignment and target (sorted by member id), as DescribeGroups or "
        "ConsumerGroupDescribe returned them.",
    )
    offsets: list[GroupOffset] = Field(default_factory=list)
    streams: StreamsTopology | None = Field(
        None,
        description="A streams group's topology (kind streams); its members' assignment and target are "
        "the partitions their active tasks read.",
    )


class LogDir(_Model):
    broker_id: int
    path: str
    used_bytes: int | None = None
    total_bytes: int | None = Field(
        None, description="Volume size when the broker reports it (KIP-827), else None."
    )
    usable_bytes: int | None = None
    error: str | None = None
    sizes: dict[str, dict[int, int]] = Field(
        default_factory=dict,
        exclude=True,
        repr=False,
        description=(
            "Topic -> partition -> size in bytes of the current replicas in this directory (future "
            "replicas of an intra-broker move left out), as DescribeLogDirs lists them whatever the "
            "principal's topic ACLs: what `collect.visibility` compares with the metadata and "
            "`collect.replica_lag` with the leaders' sizes. Not serialized, and emptied by "
            "`collect_snapshot` once compared (the results are `ClusterSnapshot.hidden` and "
            "`ClusterSnapshot.replica_lags`)."
        ),
    )


class Missing(_Model):
    """One part of the snapshot that could not be read, and why."""

    part: str = Field(description="e.g. 'quorum', 'log_dirs', 'configs:orders', 'group:billing'")
    reason: str
    partitions: list[int] = Field(
        default_factory=list,
        description="The partitions left unread, for a part read per partition ('offsets:<topic>'); "
        "empty when the whole part went unread.",
    )


class ClusterSnapshot(_Model):
    cluster: str = Field(description="A stable name for the cluster (policy name or the bootstrap servers).")
    taken_at: datetime
    cluster_id: str | None = None
    brokers: list[Broker] = Field(default_factory=list)
    quorum: Quorum | None = None
    partitions: list[Partition] = Field(default_factory=list)
    topic_configs: list[TopicConfig] = Field(default_factory=list)
    offsets: list[PartitionOffsets] = Field(default_factory=list)
    groups: list[ConsumerGroup] = Field(default_factory=list)
    log_dirs: list[LogDir] = Field(default_factory=list)
    eligible_leaders: list[EligibleLeaders] = Field(
        default_factory=list,
        description="ELR of the partitions out of sync or offline (the only ones that can have one); "
        "the others have none. Not read: `missing` says so (eligible_leaders:<topic>).",
    )
    reassignments: list[Reassignment] = Field(
        default_factory=list,
        description="Partition reassignments in flight. Not read: `missing` says so (reassignments).",
    )
    replica_lags: list[ReplicaLag] = Field(
        default_factory=list,
        description="Each replica out of its ISR (or being added) of a partition with a live leader, "
        "and how far it trails the leader in bytes (both sizes read). Not read: the `log_dirs:<broker>` "
        "part of its broker or of the leader's is missing.",
    )
    broker_throttles: list[BrokerThrottle] = Field(
        default_factory=list,
        description="The alive brokers with a replication throttle rate set. Not read: `missing` says so "
        "(broker_throttles:<broker>) while a throttle is in play (a reassignment in flight, or a topic "
        "naming throttled replicas); otherwise a rate throttles nothing and its absence is not reported.",
    )
    listener_certificates: list[ListenerCertificate] = Field(
        default_factory=list,
        description="The certificate chain each alive broker serves, on a TLS connection only. Not "
        "read: `missing` says so (certificates:<broker>).",
    )
    open_transactions: list[OpenTransaction] = Field(
        default_factory=list,
        description="Transactions open longer than the policy's transaction timeout, when the "
        "hangingTransactions check is enabled. Not read: `missing` says so (transactions).",
    )
    hidden: dict[str, list[int]] = Field(
        default_factory=dict,
        description=(
            "Topic -> partitions the brokers' log dirs hold but this principal's metadata leaves out "
            "(it lacks DESCRIBE on TOPIC): every check is blind to them (`collect.visibility`)."
        ),
    )
    missing: list[Missing] = Field(default_factory=list)

    @property
    def reachable(self) -> bool:
        """False when not even the metadata could be read: nothing may be planned on it."""
        return not any(m.part == "metadata" for m in self.missing)
