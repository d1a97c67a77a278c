"""The certificates brokers serve on the TLS listener the client reaches them through.

- `listener_certificate_expiry` (warning within `certificate_warn_days`, 30; critical within
  `certificate_critical_days`, 7, or once ended): per broker, the earliest end of validity in
  the chain it serves (its own certificate or an intermediate CA). An expired certificate is the
  commonest cause of a whole secured cluster going dark at once: brokers issued together expire
  together, and Kafka starts and keeps serving a listener whatever its certificate's dates.
- `listener_certificate_mismatch` (warning; critical when some brokers' chains fail the client's
  verification while others pass): the brokers do not serve certificates from one issuer. A CA
  rotation left half done works for clients that trust both CAs and fails, on some brokers
  only, for every client that trusts one: an outage that looks like a broken broker.

Each row's `verified`/`verify_error` is this operator's own handshake, with the CA and host name
check of its connection settings (`collect/tls_probe.py`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_health.models.findings import Severity, SubjectKind
from kafka_health_spark.checks import Check
from kafka_health_spark.findings import finding_rows
from kafka_health_spark.frames import Frames
from kafka_health_spark.thresholds import Thresholds

_DAY_MICROS = 86_400 * 1_000_000


def listener_certificate_expiry(frames: Frames, t: Thresholds) -> DataFrame:
    """Brokers whose served chain ends within the warning threshold (or has ended)."""
    days = (F.unix_micros(F.col("not_after")) - F.unix_micros(frames.now_col)) / F.lit(_DAY_MICROS)
    df = frames.listener_certificates.withColumn("days_left", days).where(
        F.col("days_left") <= t.certificate_warn_days
    )
    ended = F.col("days_left") <= 0
    when = F.date_format(F.col("not_after"), "yyyy-MM-dd HH:mm:ss 'UTC'")
    return finding_rows(
        df,
        check="listener_certificate_expiry",
        severity=F.when(
            F.col("days_left") <= t.certificate_critical_days, F.lit(Severity.CRITICAL.value)
        ).otherwise(F.lit(Severity.WARNING.value)),
        kind=SubjectKind.BROKER,
        broker=F.col("broker"),
        message=F.when(
            ended,
            F.format_string(
                "Broker %d's listener %s serves a certificate that ended on %s (%s): clients that verify "
                "it cannot connect.",
                "broker",
                "address",
                when,
                "expiring",
            ),
        ).otherwise(
            F.format_string(
                "Broker %d's listener %s serves a certificate that ends in %.1f days, on %s (%s).",
                "broker",
                "address",
                "days_left",
                when,
                "expiring",
            )
        ),
        evidence={
            "address": F.col("address"),
            "not_after": when,
            "days_left": F.round("days_left", 2),
            "expiring": F.col("expiring"),
            "leaf_subject": F.col("subject"),
            "issuer": F.col("issuer"),
            "fingerprint_sha256": F.col("fingerprint_sha256"),
        },
        remediation=F.format_string(
            "renew the certificate %s and load it on broker %d (a new keystore file and a rolling "
            "restart, or kafka-configs --entity-type brokers --entity-name %d --alter --add-config "
            "listener.name.<listener>.ssl.keystore.location=<file> to reload it in place)",
            "expiring",
            "broker",
            "broker",
        ),
    )


def listener_certificate_mismatch(frames: Frames, t: Thresholds) -> DataFrame:
    """One finding for the cluster when its brokers' certificates come from more than one issuer
    or only some of them verify."""
    certs = frames.listener_certificates
    by_issuer = certs.groupBy("issuer").agg(F.sort_array(F.collect_list("broker")).alias("brokers"))
    issuers = by_issuer.agg(
        F.count("*").alias("issuers"),
        F.concat_ws(
            "; ",
            F.sort_array(
                F.collect_list(
                    F.concat(
                        "issuer",
                        F.lit(": broker(s) "),
                        F.concat_ws(",", F.col("brokers").cast("array<string>")),
                    )
                )
            ),
        ).alias("by_issuer"),
    )
    verify = certs.agg(
        F.sort_array(F.collect_list(F.when(~F.col("verified"), F.col("broker")))).alias("failing"),
        F.count("*").alias("brokers"),
    )
    df = (
        issuers.crossJoin(verify)
        .withColumn("some_fail", (F.size("failing") > 0) & (F.size("failing") < F.col("brokers")))
        .where((F.col("issuers") > 1) | F.col("some_fail"))
    )
    failing = F.concat_ws(",", F.col("failing").cast("array<string>"))
    return finding_rows(
        df,
        check="listener_certificate_mismatch",
        severity=F.when(F.col("some_fail"), F.lit(Severity.CRITICAL.value)).otherwise(
            F.lit(Severity.WARNING.value)
        ),
        kind=SubjectKind.CLUSTER,
        message=F.format_string(
            "The brokers serve certificates from %d issuers (%s)%s: clients that trust one CA only fail on "
            "some brokers.",
            "issuers",
            "by_issuer",
            F.when(
                F.col("some_fail"),
                F.concat(F.lit("; broker(s) "), failing, F.lit(" fail this client's verification")),
            ).otherwise(F.lit("")),
        ),
        evidence={
            "issuers": F.col("issuers"),
            "by_issuer": F.col("by_issuer"),
            "unverified_brokers": F.when(F.size("failing") > 0, failing),
        },
        remediation=F.lit(
            "finish the rotation: issue every broker's certificate from the CA clients trust (or add the "
            "new CA to every client's ssl.truststore first, then reissue the brokers one at a time)"
        ),
    )


CHECKS: list[Check] = [listener_certificate_expiry, listener_certificate_mismatch]
