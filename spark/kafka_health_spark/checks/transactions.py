"""Hanging transactions (KIP-664), read only when the policy's hangingTransactions check is on.

- `hanging_transaction` (critical): a partition's leader holds a transaction open whose producer
  it last heard from longer ago than the transaction timeout, and the transaction's coordinator
  does not list that partition in a transaction of that producer (or knows no transactional id
  for it): nothing will ever write its end marker. The partition's last stable offset stays at
  the transaction's first offset, so every `read_committed` consumer of it (Kafka Streams,
  exactly-once pipelines) stops there with lag that never falls, and the log cannot be
  compacted or deleted past it. `kafka-transactions find-hanging` applies the same rule; the
  rows come from `collect/transactions.py`. A transaction its coordinator still lists is not
  hanging: the coordinator aborts it when its timeout passes.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds


def hanging_transaction(frames: Frames, t: Thresholds) -> DataFrame:
    """Each open transaction its coordinator will never end, with the offsets it holds back."""
    offsets = frames.offsets.select("topic", "partition", F.col("log_end_offset").alias("hw"))
    df = (
        frames.join(
            frames.open_transactions.where(~F.col("coordinator_lists_partition")),
            offsets,
            ["topic", "partition"],
            "left",
        )
        .withColumn(
            "minutes",
            F.floor((F.unix_micros(frames.now_col) - F.unix_micros(F.col("last_timestamp"))) / 60_000_000),
        )
        .withColumn("held", F.when(F.col("hw").isNotNull(), F.col("hw") - F.col("start_offset")))
    )
    coordinator = F.when(
        F.col("transactional_id").isNull(),
        F.lit("no transactional id lists this producer"),
    ).otherwise(
        F.format_string(
            "its coordinator's transaction %s (%s) does not include this partition",
            "transactional_id",
            "coordinator_state",
        )
    )
    return finding_rows(
        df,
        check="hanging_transaction",
        severity=Severity.CRITICAL,
        kind=SubjectKind.PARTITION,
        topic=F.col("topic"),
        partition=F.col("partition"),
        message=F.format_string(
            "%s-%d holds a hanging transaction of producer %d (epoch %d) open since offset %d, last heard "
            "from %d min ago, and %s: its last stable offset stays at %d, so read_committed consumers stop "
            "there%s.",
            "topic",
            "partition",
            "producer_id",
            "producer_epoch",
            "start_offset",
            "minutes",
            coordinator,
            "start_offset",
            F.when(
                F.col("held").isNotNull(),
                F.format_string(" (%d record(s) behind the high watermark)", "held"),
            ).otherwise(F.lit("")),
        ),
        evidence={
            "producer_id": F.col("producer_id"),
            "producer_epoch": F.col("producer_epoch"),
            "coordinator_epoch": F.col("coordinator_epoch"),
            "start_offset": F.col("start_offset"),
            "last_stable_offset": F.col("start_offset"),
            "high_watermark": F.col("hw"),
            "last_timestamp": F.date_format(F.col("last_timestamp"), "yyyy-MM-dd'T'HH:mm:ss'Z'"),
            "minutes_since_last_heard": F.col("minutes"),
            "transactional_id": F.col("transactional_id"),
            "coordinator_state": F.col("coordinator_state"),
        },
        remediation=F.format_string(
            "abort it: kafka-health abort-transaction -b <brokers> --topic %s --partition %d --start-offset %d "
            "--execute (it aborts only a hanging transaction; kafka-transactions abort takes the same "
            "arguments); check first that no live producer still writes with producer id %d",
            "topic",
            "partition",
            "start_offset",
            "producer_id",
        ),
    )


CHECKS: list[Check] = [hanging_transaction]
