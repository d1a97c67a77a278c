"""The admin calls made with kafka-python (`kafka_python.KafkaPython`), mixed into
`admin_calls.AdminCalls`: what confluent-kafka lacks in Python — broker registrations including
fenced brokers, the KRaft metadata quorum, eligible leader replicas, partition reassignments,
open transactions.
Each call is bounded by `KafkaPython.call`; what each returns is documented in `admin_api`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from kafka_health.collect import kafka_python as kpy
from kafka_health.collect import parse
from kafka_health.collect.connection import redact
from kafka_health.collect.kafka_python import MIN_PER_NODE, KafkaPython, describe_metadata_quorum
from kafka_health.collect.results import (
    ZOOKEEPER_MODE,
    AbortTarget,
    AdminCallError,
    BrokerRegistration,
    Partial,
    Timeouts,
    TopicPartitionKey,
)
from kafka_health.collect.share_groups import ShareGroups, alter_share_group_offsets, read_share_groups
from kafka_health.collect.streams_groups import StreamsGroupInfo, describe_streams_groups, list_streams_groups
from kafka_health.collect.transactions import read_open_transactions
from kafka_health.models.snapshot import EligibleLeaders as Eligible
from kafka_health.models.snapshot import OpenTransaction, Quorum, Reassignment


class KafkaPythonCalls:
    """The `_do_<call>` methods of the calls kafka-python makes (a mixin: `AdminCalls` owns
    the client and the timeouts)."""

    _kp: KafkaPython
    timeouts: Timeouts
    _secrets: list[str]
    reason: Callable[[object], str]  # AdminApi's: a secret-free description of a client error

    def _do_describe_cluster(self) -> list[BrokerRegistration]:
        budget = self.timeouts.metadata + self.timeouts.request
        raw = self._kp.call("describe_cluster", lambda kp: kp.describe_cluster(), budget)
        return sorted(
            (
                BrokerRegistration(
                    id=int(b["broker_id"]),
                    host=str(b["host"]),
                    port=int(b["port"]),
                    rack=b.get("rack"),
                    fenced=bool(b.get("is_fenced", False)),
                )
                for b in raw["brokers"]
            ),
            key=lambda b: b.id,
        )

    def _do_describe_quorum(self) -> Quorum:
        budget = self.timeouts.metadata + self.timeouts.request
        per_node = max(MIN_PER_NODE, self.timeouts.request / 2)
        raw = self._kp.call(
            "describe_metadata_quorum", lambda kp: describe_metadata_quorum(kp, per_node), budget
        )
        if raw is None:
            raise AdminCallError("describe_metadata_quorum", ZOOKEEPER_MODE)
        try:
            return parse.quorum(raw)
        except (KeyError, IndexError, ValueError) as exc:
            raise AdminCallError("describe_metadata_quorum", redact(str(exc), self._secrets)) from None

    def _do_eligible_leaders(self, topics: list[str]) -> Partial[str, list[Eligible]]:
        budget = self.timeouts.metadata + self.timeouts.request
        per_node = max(MIN_PER_NODE, self.timeouts.request / 2)
        out: Partial[str, list[Eligible]] = Partial()
        try:
            answered = self._kp.call(
                "describe_topic_partitions",
                lambda kp: kpy.describe_topic_partitions(kp, topics, per_node),
                budget,
            )
        except AdminCallError as exc:
            out.errors = dict.fromkeys(topics, exc.reason)
            return out
        out.values, out.errors = parse.eligible_leaders(answered)
        return out

    def _do_reassignments(self) -> list[Reassignment]:
        budget = self.timeouts.metadata + self.timeouts.request
        timeout_ms = int(self.timeouts.request * 1000)
        raw = self._kp.call(
            "list_partition_reassignments",
            lambda kp: kp.list_partition_reassignments(timeout_ms=timeout_ms),
            budget,
        )
        return parse.reassignments(raw)

    def _do_reorder_replicas(
        self, orders: dict[TopicPartitionKey, list[int]]
    ) -> Partial[TopicPartitionKey, bool]:
        from kafka.structs import TopicPartition

        budget = self.timeouts.metadata + self.timeouts.request
        timeout_ms = int(self.timeouts.request * 1000)
        request = {TopicPartition(t, p): order for (t, p), order in orders.items()}
        answered = self._kp.call(
            "alter_partition_reassignments",
            lambda kp: kp.alter_partition_reassignments(request, timeout_ms=timeout_ms),
            budget,
            write=True,
        )
        out: Partial[TopicPartitionKey, bool] = Partial()
        for key in orders:
            error = answered.get(TopicPartition(*key), "absent")
            if error is None:
                out.values[key] = True
            else:
                out.errors[key] = (
                    "not answered" if error == "absent" else f"{error.__name__}: {error.description}"
                )
        return out

    def _do_open_transactions(
        self, leaders: list[tuple[str, int, int]], older_than: timedelta
    ) -> Partial[str, list[OpenTransaction]]:
        # Three request rounds (producers per leader, transactions per broker, descriptions per
        # coordinator), each within the request timeout.
        budget = self.timeouts.metadata + 3 * self.timeouts.request
        by_key = {(t, p): leader for t, p, leader in leaders}
        result: Partial[str, list[OpenTransaction]] = self._kp.call(
            "open_transactions",
            lambda kp: read_open_transactions(kp, by_key, older_than, datetime.now(UTC), self.reason),
            budget,
        )
        return result

    def _do_share_groups(self) -> ShareGroups:
        # Three request rounds: ListGroups (every broker), FindCoordinator, describe + offsets.
        budget = self.timeouts.metadata + 3 * self.timeouts.request
        result: ShareGroups = self._kp.call(
            "share_groups", lambda kp: read_share_groups(kp, self.reason), budget
        )
        return result

    def _do_alter_share_group_offsets(
        self, group: str, offsets: dict[TopicPartitionKey, int]
    ) -> Partial[TopicPartitionKey, int]:
        # Two request rounds: FindCoordinator (cached per client), then the alter, sent once.
        budget = self.timeouts.metadata + 2 * self.timeouts.request
        result: Partial[TopicPartitionKey, int] = self._kp.call(
            "alter_share_group_offsets",
            lambda kp: alter_share_group_offsets(kp, group, offsets),
            budget,
            write=True,
        )
        return result

    def _do_streams_groups(self) -> list[StreamsGroupInfo]:
        # Rounds: ListGroups (every broker), then FindCoordinator and describe (retried when a
        # coordinator moved), within one request timeout each.
        budget = self.timeouts.metadata + 3 * self.timeouts.request
        request = self.timeouts.request

        def read(kp: object) -> list[StreamsGroupInfo]:
            return describe_streams_groups(kp, sorted(list_streams_groups(kp, request)), 2 * request)

        result: list[StreamsGroupInfo] = self._kp.call("streams_groups", read, budget)
        return result

    def _do_abort_transaction(self, target: AbortTarget) -> None:
        from kafka.admin._transactions import AbortTransactionSpec
        from kafka.structs import TopicPartition

        spec = AbortTransactionSpec(
            topic_partition=TopicPartition(target.topic, target.partition),
            producer_id=target.producer_id,
            producer_epoch=target.producer_epoch,
            coordinator_epoch=target.coordinator_epoch,
        )
        budget = self.timeouts.metadata + self.timeouts.request
        self._kp.call("abort_transaction", lambda kp: kp.abort_transaction(spec), budget, write=True)
