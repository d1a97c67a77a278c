"""Hanging transactions on the real cluster, checked against `kafka-transactions find-hanging`.

Partition 0 of a topic gets a transaction no coordinator knows (`testbed.transactions.hang`,
with the brokers' KIP-890 verification off for the test), partition 1 a transaction that is
merely open (a transactional producer that neither commits nor aborts). With the check on, the
collector reads both; the diagnosis names partition 0 only, with the producer, start offset and
last stable offset the tool and the brokers report, and partition 1 not at all (its coordinator
still lists it: it will abort it). `kafka-health abort-transaction` refuses the open one, an
offset where none starts and (by default) a producer heard from within the timeout; its dry run
changes nothing; with --execute it ends the hanging one: find-hanging lists nothing, the next
diagnosis has no finding and the last stable offset reaches the high watermark. With the check
off, nothing of it is read and nothing is reported missing."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner, Result

from kafka_health.cli.diagnose import collect
from kafka_health.cli.main import app
from kafka_health.collect.connection import ConnectionConfig
from kafka_health.diagnose import run_diagnosis
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.testbed import faults
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.transactions import VERIFICATION, hang, left_open
from kafka_health_spark.thresholds import Thresholds
from tests.diagnose.kafka_tools import stable_and_end

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

OLDER_THAN = timedelta(seconds=2)


def snapshot(bootstrap: str, older_than: timedelta | None = OLDER_THAN) -> ClusterSnapshot:
    return collect(ConnectionConfig.from_dict({"bootstrap.servers": bootstrap}), bootstrap, older_than)


def find_hanging(tb: Testbed, topic: str) -> set[tuple[str, int, int, int]]:
    """`kafka-transactions find-hanging --topic T --max-transaction-timeout 0`: (topic, partition,
    producer id, start offset) of each row."""
    out = tb.tool("kafka-transactions", ["find-hanging", "--topic", topic, "--max-transaction-timeout", "0"])
    assert out.returncode == 0, out.stderr
    rows = re.findall(r"^(\S+)\s+(\d+)\s+(\d+)\s+\d+\s+-?\d+\s+(\d+)\s+\d+\s+\d+\s*$", out.stdout, re.M)
    return {(t, int(p), int(pid), int(start)) for t, p, pid, start in rows}


def abort(bootstrap: str, topic: str, partition: int, offset: int, minutes: int, *extra: str) -> Result:
    """`kafka-health abort-transaction` (CliRunner: its output holds stdout and stderr)."""
    args = ["--topic", topic, "--partition", str(partition), "--start-offset", str(offset)]
    return CliRunner().invoke(
        app,
        ["abort-transaction", "-b", bootstrap, *args, "--max-transaction-timeout", str(minutes), *extra],
    )


def hanging_findings(bootstrap: str, spark: SparkSession, topic: str) -> set[tuple[str, int, object, object]]:
    found = run_diagnosis(snapshot(bootstrap), None, Thresholds(), spark).findings
    return {
        (
            f.subject.topic or "",
            f.subject.partition or 0,
            f.evidence["producer_id"],
            f.evidence["start_offset"],
        )
        for f in found
        if f.check == "hanging_transaction" and f.subject.topic == topic
    }


def test_a_hanging_transaction_is_found_as_kafka_transactions_finds_it_and_gone_once_aborted(
    kafka: Testbed, bootstrap: str, spark: SparkSession, unique_name: str
) -> None:
    topic = unique_name
    faults.create_topic(bootstrap, topic, partitions=2)
    config = ["--entity-type", "brokers", "--entity-default", "--alter"]
    assert kafka.tool("kafka-configs", [*config, "--add-config", f"{VERIFICATION}=false"]).returncode == 0
    producer = None
    try:
        hung = hang(bootstrap, topic, 0, f"{topic}-hang")
        producer = left_open(bootstrap, topic, 1, f"{topic}-open")
        time.sleep(OLDER_THAN.total_seconds() + 1)

        snap = snapshot(bootstrap)
        assert not [m for m in snap.missing if m.part.startswith("transactions")], snap.missing
        read = {
            (t.partition, t.coordinator_lists_partition) for t in snap.open_transactions if t.topic == topic
        }
        assert read == {(0, False), (1, True)}, snap.open_transactions

        expected = {(topic, 0, hung.producer_id, hung.start_offset)}
        assert find_hanging(kafka, topic) == expected
        found = run_diagnosis(snap, None, Thresholds(), spark).findings
        (finding,) = [f for f in found if f.check == "hanging_transaction" and f.subject.topic == topic]
        assert (topic, 0, finding.evidence["producer_id"], finding.evidence["start_offset"]) in expected
        assert finding.severity.value == "critical"
        stable, end = stable_and_end(bootstrap, topic, 0)
        assert finding.evidence["last_stable_offset"] == stable == hung.start_offset
        assert finding.evidence["high_watermark"] == end > stable
        assert finding.evidence["transactional_id"] == f"{topic}-hang"
        assert f"--partition 0 --start-offset {hung.start_offset}" in (finding.remediation or "")

        listed = next(t for t in snap.open_transactions if (t.topic, t.partition) == (topic, 1))
        refusals = {
            "no transaction open": (0, hung.start_offset + 1, 15, 3),  # (partition, offset, timeout, exit)
            "within the transaction timeout": (0, hung.start_offset, 15, 4),
            "is not hanging: its coordinator lists it": (1, listed.start_offset, 0, 4),
        }
        for said, (partition, offset, minutes, code) in refusals.items():
            refused = abort(bootstrap, topic, partition, offset, minutes, "--execute")
            assert refused.exit_code == code and said in refused.output, refused.output
        dry = abort(bootstrap, topic, 0, hung.start_offset, 0)
        assert dry.exit_code == 0 and "would abort: hanging" in dry.output, dry.output
        assert find_hanging(kafka, topic) == expected  # a dry run changes nothing

        aborted = abort(bootstrap, topic, 0, hung.start_offset, 0, "--execute")
        assert aborted.exit_code == 0 and "aborted: hanging" in aborted.output, aborted.output
        assert find_hanging(kafka, topic) == set()
        assert hanging_findings(bootstrap, spark, topic) == set()
        stable, end = stable_and_end(bootstrap, topic, 0)
        assert stable == end

        off = snapshot(bootstrap, None)
        assert off.open_transactions == [] and not [
            m for m in off.missing if m.part.startswith("transactions")
        ]
    finally:
        if producer is not None:
            producer.abort_transaction(30)
        kafka.tool("kafka-configs", [*config, "--delete-config", VERIFICATION])
