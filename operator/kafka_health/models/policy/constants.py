"""Names of the resource, its annotations and the bounds every field shares."""

from __future__ import annotations

GROUP = "kafkahealth.io"
VERSION = "v1alpha1"
KIND = "KafkaHealthPolicy"
PLURAL = "kafkahealthpolicies"
SINGULAR = "kafkahealthpolicy"
SHORT_NAME = "khp"
API_VERSION = f"{GROUP}/{VERSION}"

# Annotations that kubectl users set instead of editing the spec.
ANNOTATION_APPROVE_PLAN = f"{GROUP}/approve-plan"
"""Value: the planId of status.pendingPlan. Approves exactly that plan."""
ANNOTATION_RESET_CIRCUIT_BREAKER = f"{GROUP}/reset-circuit-breaker"
"""Any new value closes an open circuit breaker (e.g. the current date and time)."""
ANNOTATION_ROLLING_RESTART = f"{GROUP}/rolling-restart"
"""Value: a request id. Requests a rolling restart of all brokers, once per id."""
ANNOTATION_ELECT_LEADERS = f"{GROUP}/elect-leaders"
"""Value: a request id. Requests a preferred leader election now, once per id."""

MAX_HISTORY = 50
"""status.history keeps at most this many actions (the newest)."""
MAX_TOP_FINDINGS = 50
MAX_REQUESTS = 100
MAX_WITHHELD = 50
MAX_PLAN_ENTRIES = 1000

INT16_MAX = 2**15 - 1
"""Kafka's replication factor is an int16."""
INT32_MAX = 2**31 - 1
"""Kafka's broker (node) ids and partition numbers are int32."""
INT64_MAX = 2**63 - 1
"""Offsets, lags and counts: a Kubernetes integer is an int64, and so is Spark's LongType."""
DURATION_MAX = "87600h"
"""The longest duration any field takes (10 years): far below the ~292 years where Go's and CEL's
durations overflow, and `now - byDuration` stays after 1970 (Kafka reads a negative timestamp
as LATEST or EARLIEST)."""
