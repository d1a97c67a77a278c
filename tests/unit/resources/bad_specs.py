"""Specs that must be rejected, as data: the pydantic tests here use them, and a test against a
real API server can reuse them (each one must fail `kubectl apply` naming `field`).

`BAD_SPECS`: rejected by the API server (schema or CEL) AND by the pydantic models.
`PYDANTIC_ONLY_BAD_SPECS`: the API server stores them (CEL cannot parse cron or look up time
zones; unknown fields are pruned unless the client asks for strict field validation), so only
the CLI and the operator reject them.
`GOOD_SPECS`: must be accepted by both.
Each `field` is the path as the API server prints it (`spec.a.b[0].c`); the pydantic error
messages (`kafka_health.models.policy.error_messages`) use the same notation.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple


class BadSpec(NamedTuple):
    description: str
    spec: dict[str, Any]
    field: str


MINIMAL: dict[str, Any] = {"cluster": {"bootstrapServers": ["kafka-0.kafka:9092"]}}

FULL: dict[str, Any] = {
    "cluster": {
        "bootstrapServers": ["kafka-0.kafka:9093", "kafka-1.kafka:9093", "[::1]:9093"],
        "security": {
            "protocol": "SASL_SSL",
            "sasl": {
                "mechanism": "SCRAM-SHA-512",
                "username": {"name": "kafka-user", "key": "username"},
                "password": {"name": "kafka-user", "key": "password"},
            },
            "tls": {
                "ca": {"name": "kafka-ca", "key": "ca.crt"},
                "certificate": {"name": "kafka-client", "key": "tls.crt"},
                "key": {"name": "kafka-client", "key": "tls.key"},
            },
        },
        "brokerPods": {"statefulSet": "kafka", "brokerId": {"source": "Ordinal", "ordinalOffset": 0}},
        "requestTimeout": "10s",
    },
    "diagnostics": {
        "interval": "30s",
        "historyRetention": "72h",
        "checks": {"diskUsage": {"warningPercent": 70, "criticalPercent": 85}, "quorum": {"enabled": False}},
    },
    "remediation": {
        "mode": "Enforce",
        "maintenanceWindows": [
            {"name": "nightly", "schedule": "0 2 * * *", "duration": "2h", "timeZone": "Europe/Berlin"}
        ],
        "requireApproval": True,
        "approvedPlanId": "roll-0123456789",
        "rateLimits": {"rollingRestart": {"maxActions": 1, "per": "24h", "cooldown": "1h"}},
        "circuitBreaker": {"maxFailures": 2},
        "preferredLeaderElection": {"imbalanceThreshold": 20, "batchSize": 100},
        "rollingRestart": {
            "timeouts": {"podReady": "5m", "brokerRegistered": "2m", "urpZero": "10m"},
            "pauseBetweenBrokers": "1m",
            "requests": [
                {"id": "2024-06-01-kernel", "reason": "kernel upgrade"},
                {"id": "r2", "brokers": [2, 0]},
            ],
        },
        "offsetResets": {
            "requests": [
                {
                    "id": "restore-1",
                    "group": "billing",
                    "topics": ["orders"],
                    "toDatetime": "2024-06-01T00:00:00Z",
                },
                {
                    "id": "skip-bad",
                    "group": "billing",
                    "partitions": [{"topic": "orders", "partition": 3}],
                    "shiftBy": 10,
                },
                {"id": "rewind", "group": "audit", "topics": ["orders", "payments"], "byDuration": "2h"},
                {"id": "to-start", "group": "audit", "topics": ["orders"], "earliest": True},
                {
                    "id": "to-end",
                    "group": "audit",
                    "topics": ["orders"],
                    "latest": True,
                    "emptyGroupTimeout": "1h",
                },
                {
                    "id": "exact",
                    "group": "audit",
                    "partitions": [{"topic": "orders", "partition": 0}],
                    "toOffset": 42,
                },
            ]
        },
    },
}

GOOD_SPECS: list[tuple[str, dict[str, Any]]] = [
    ("minimal: bootstrap servers only", MINIMAL),
    ("every section set", FULL),
    (
        "pod selector with broker id from a label",
        {
            "cluster": {
                "bootstrapServers": ["k:9092"],
                "brokerPods": {
                    "namespace": "kafka",
                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kafka"}},
                    "brokerId": {"source": "Label", "label": "kafka.example.com/broker-id"},
                },
            }
        },
    ),
    ("the lowest and highest ports", {"cluster": {"bootstrapServers": ["a:1", "b:65535", "[::1]:9092"]}}),
    (
        "every other limit, inclusive",
        {
            "cluster": {
                "bootstrapServers": ["a:9092"],
                "requestTimeout": "5m",
                "brokerPods": {
                    "statefulSet": "kafka",
                    "namespace": "k" * 63,
                    "brokerId": {"ordinalOffset": 2**31 - 1},
                },
            },
            "diagnostics": {
                "historyRetention": "24h",
                "checks": {
                    "leaderFlapping": {"window": "24h", "maxLeaderChanges": 2**31 - 1},
                    "consumerLag": {
                        "window": "24h",
                        "warningLag": 2**63 - 2,
                        "criticalLag": 2**63 - 1,
                        "maxLagSeconds": {"warning": 2**31 - 2, "critical": 2**31 - 1},
                    },
                    "rebalanceStorm": {"window": "24h"},
                    "durability": {"minReplicationFactor": 32767, "minInsyncReplicas": 32767},
                },
            },
            "remediation": {
                "rateLimits": {"offsetReset": {"cooldown": "87600h"}},
                "maintenanceWindows": [{"schedule": "0 0 29 2 *", "duration": "24h"}],
                "rollingRestart": {"requests": [{"id": "r1", "brokers": [0, 2**31 - 1]}]},
                "offsetResets": {
                    "requests": [
                        {
                            "id": "epoch",
                            "group": "g",
                            "topics": ["t" * 249, "a.b", "_x"],
                            "toDatetime": "1970-01-01T00:00:00Z",
                        },
                        {
                            "id": "far",
                            "group": "g",
                            "partitions": [{"topic": "t", "partition": 2**31 - 1}],
                            "byDuration": "87600h",
                        },
                        {"id": "big", "group": "g", "topics": ["t"], "toOffset": 2**63 - 1},
                    ]
                },
            },
        },
    ),
]


def _with(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `base` (MINIMAL) with the dotted `path` set to `value` (None: removed)."""
    spec = copy.deepcopy(MINIMAL if base is None else base)
    node = spec
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value
    return spec


def _reset(**request: Any) -> dict[str, Any]:
    return _with(
        "remediation.offsetResets.requests", [{"id": "r1", "group": "g", "topics": ["t"], **request}]
    )


def _window(**window: Any) -> dict[str, Any]:
    return _with("remediation.maintenanceWindows", [{"schedule": "0 2 * * *", "duration": "1h", **window}])


_PODS = {"statefulSet": "kafka"}
_SECRET = {"name": "s", "key": "k"}

BAD_SPECS: list[BadSpec] = [
    BadSpec("no cluster", {"diagnostics": {"interval": "30s"}}, "spec.cluster"),
    BadSpec("no bootstrap servers", _with("cluster.bootstrapServers", []), "spec.cluster.bootstrapServers"),
    BadSpec(
        "bootstrap servers as one comma-separated item",
        _with("cluster.bootstrapServers", ["a:9092,b:9092"]),
        "spec.cluster.bootstrapServers[0]",
    ),
    BadSpec(
        "a port above 65535 (librdkafka would dial it modulo 65536)",
        _with("cluster.bootstrapServers", ["127.0.0.1:99999"]),
        "spec.cluster.bootstrapServers[0]",
    ),
    BadSpec("port 0", _with("cluster.bootstrapServers", ["kafka:0"]), "spec.cluster.bootstrapServers[0]"),
    BadSpec("unknown remediation mode", _with("remediation.mode", "Auto"), "spec.remediation.mode"),
    BadSpec("zero diagnostics interval", _with("diagnostics.interval", "0s"), "spec.diagnostics.interval"),
    BadSpec(
        "diagnostics interval under 10s", _with("diagnostics.interval", "5s"), "spec.diagnostics.interval"
    ),
    BadSpec("duration without a unit", _with("diagnostics.interval", "30"), "spec.diagnostics.interval"),
    BadSpec(
        "duration written in words",
        _with("cluster.requestTimeout", "5 minutes"),
        "spec.cluster.requestTimeout",
    ),
    BadSpec(
        "negative duration",
        _with("remediation.rollingRestart.pauseBetweenBrokers", "-5m"),
        "spec.remediation.rollingRestart.pauseBetweenBrokers",
    ),
    BadSpec(
        "zero restart timeout",
        _with("remediation.rollingRestart.timeouts", {"urpZero": "0s"}),
        "spec.remediation.rollingRestart.timeouts.urpZero",
    ),
    BadSpec(
        "maintenance window longer than 24h",
        _window(duration="25h"),
        "spec.remediation.maintenanceWindows[0].duration",
    ),
    BadSpec(
        "maintenance window of 0s", _window(duration="0s"), "spec.remediation.maintenanceWindows[0].duration"
    ),
    BadSpec(
        "cron schedule with 4 fields",
        _window(schedule="0 2 * *"),
        "spec.remediation.maintenanceWindows[0].schedule",
    ),
    BadSpec(
        "cron schedule with a seconds field",
        _window(schedule="0 0 2 * * *"),
        "spec.remediation.maintenanceWindows[0].schedule",
    ),
    BadSpec(
        "maintenance window without a schedule",
        _with("remediation.maintenanceWindows", [{"duration": "1h"}]),
        "spec.remediation.maintenanceWindows[0].schedule",
    ),
    BadSpec(
        "two offset-reset strategies",
        _reset(earliest=True, toOffset=5),
        "spec.remediation.offsetResets.requests[0]",
    ),
    BadSpec("no offset-reset strategy", _reset(), "spec.remediation.offsetResets.requests[0]"),
    BadSpec(
        "offset reset naming neither topics nor partitions",
        _with("remediation.offsetResets.requests", [{"id": "r1", "group": "g", "latest": True}]),
        "spec.remediation.offsetResets.requests[0]",
    ),
    BadSpec("shiftBy 0", _reset(shiftBy=0), "spec.remediation.offsetResets.requests[0].shiftBy"),
    BadSpec("negative toOffset", _reset(toOffset=-1), "spec.remediation.offsetResets.requests[0].toOffset"),
    BadSpec(
        "toDatetime that is not a date-time",
        _reset(toDatetime="yesterday"),
        "spec.remediation.offsetResets.requests[0].toDatetime",
    ),
    BadSpec(
        "byDuration of 0s", _reset(byDuration="0s"), "spec.remediation.offsetResets.requests[0].byDuration"
    ),
    BadSpec(
        "duplicate offset reset ids",
        _with(
            "remediation.offsetResets.requests",
            [{"id": "r1", "group": "g", "topics": ["t"], "latest": True}] * 2,
        ),
        "spec.remediation.offsetResets.requests[1]",
    ),
    BadSpec(
        "duplicate rolling restart ids",
        _with(
            "remediation.rollingRestart.requests",
            [{"id": "r1"}, {"id": "r1"}],
            _with("cluster.brokerPods", _PODS),
        ),
        "spec.remediation.rollingRestart.requests[1]",
    ),
    BadSpec(
        "request id with capitals and spaces",
        _with(
            "remediation.rollingRestart.requests", [{"id": "Roll Now"}], _with("cluster.brokerPods", _PODS)
        ),
        "spec.remediation.rollingRestart.requests[0].id",
    ),
    BadSpec(
        "the same broker twice in a restart request",
        _with(
            "remediation.rollingRestart.requests",
            [{"id": "r1", "brokers": [1, 1]}],
            _with("cluster.brokerPods", _PODS),
        ),
        "spec.remediation.rollingRestart.requests[0].brokers",
    ),
    BadSpec(
        "rolling restart requested without broker pods",
        _with("remediation.rollingRestart.requests", [{"id": "r1"}]),
        "spec.cluster.brokerPods",
    ),
    BadSpec(
        "batchSize 0",
        _with("remediation.preferredLeaderElection.batchSize", 0),
        "spec.remediation.preferredLeaderElection.batchSize",
    ),
    BadSpec(
        "imbalance threshold over 100%",
        _with("remediation.preferredLeaderElection.imbalanceThreshold", 150),
        "spec.remediation.preferredLeaderElection.imbalanceThreshold",
    ),
    BadSpec(
        "rate limit of 0 actions",
        _with("remediation.rateLimits.rollingRestart", {"maxActions": 0}),
        "spec.remediation.rateLimits.rollingRestart.maxActions",
    ),
    BadSpec(
        "circuit breaker that never opens",
        _with("remediation.circuitBreaker.maxFailures", 0),
        "spec.remediation.circuitBreaker.maxFailures",
    ),
    BadSpec(
        "SASL protocol without credentials",
        _with("cluster.security", {"protocol": "SASL_SSL"}),
        "spec.cluster.security.sasl",
    ),
    BadSpec(
        "SASL credentials with PLAINTEXT protocol",
        _with("cluster.security", {"sasl": {"username": _SECRET, "password": _SECRET}}),
        "spec.cluster.security.sasl",
    ),
    BadSpec(
        "inline password instead of a Secret reference",
        _with(
            "cluster.security",
            {"protocol": "SASL_SSL", "sasl": {"username": _SECRET, "password": "hunter2"}},
        ),
        "spec.cluster.security.sasl.password",
    ),
    BadSpec(
        "TLS client certificate without its key",
        _with("cluster.security", {"protocol": "SSL", "tls": {"certificate": _SECRET}}),
        "spec.cluster.security.tls.certificate",
    ),
    BadSpec(
        "TLS settings with PLAINTEXT protocol",
        _with("cluster.security", {"tls": {"ca": _SECRET}}),
        "spec.cluster.security.tls",
    ),
    BadSpec(
        "both statefulSet and podSelector",
        _with(
            "cluster.brokerPods", {"statefulSet": "kafka", "podSelector": {"matchLabels": {"app": "kafka"}}}
        ),
        "spec.cluster.brokerPods.statefulSet",
    ),
    BadSpec(
        "neither statefulSet nor podSelector",
        _with("cluster.brokerPods", {"namespace": "kafka"}),
        "spec.cluster.brokerPods.statefulSet",
    ),
    BadSpec(
        "broker id from a label without naming the label",
        _with("cluster.brokerPods", {"statefulSet": "kafka", "brokerId": {"source": "Label"}}),
        "spec.cluster.brokerPods.brokerId.label",
    ),
    BadSpec(
        "disk warning above critical",
        _with("diagnostics.checks.diskUsage", {"warningPercent": 95, "criticalPercent": 90}),
        "spec.diagnostics.checks.diskUsage.warningPercent",
    ),
    BadSpec(
        "consumer lag warning equal to critical",
        _with("diagnostics.checks.consumerLag", {"warningLag": 100, "criticalLag": 100}),
        "spec.diagnostics.checks.consumerLag.warningLag",
    ),
    BadSpec(
        "lag in seconds: warning equal to critical",
        _with("diagnostics.checks.consumerLag", {"maxLagSeconds": {"warning": 600, "critical": 600}}),
        "spec.diagnostics.checks.consumerLag.maxLagSeconds.warning",
    ),
    BadSpec(
        "lag in seconds: a zero limit (every lag would be over it)",
        _with("diagnostics.checks.consumerLag", {"maxLagSeconds": {"critical": 0}}),
        "spec.diagnostics.checks.consumerLag.maxLagSeconds.critical",
    ),
    # Issue 12, item 4: values the schema used to accept that the client silently changed or
    # could not honour.
    BadSpec(
        "a duration that overflows (Python crashed on it, Go's duration overflows)",
        _with("remediation.rollingRestart.pauseBetweenBrokers", "99999999999h"),
        "spec.remediation.rollingRestart.pauseBetweenBrokers",
    ),
    BadSpec(
        "a cooldown over 10 years",
        _with("remediation.rateLimits.offsetReset", {"cooldown": "87601h"}),
        "spec.remediation.rateLimits.offsetReset.cooldown",
    ),
    BadSpec(
        "request timeout over librdkafka's socket.timeout.ms maximum (300000)",
        _with("cluster.requestTimeout", "10m"),
        "spec.cluster.requestTimeout",
    ),
    BadSpec(
        "request timeout under 1s (librdkafka refuses under 10ms, rounds under 1ms to 0)",
        _with("cluster.requestTimeout", "0.5ms"),
        "spec.cluster.requestTimeout",
    ),
    BadSpec(
        "history retention not a whole number of days (36h was kept as 1 day)",
        _with("diagnostics.historyRetention", "36h"),
        "spec.diagnostics.historyRetention",
    ),
    BadSpec(
        "history retention under a day (1h was kept as 1 day)",
        _with("diagnostics.historyRetention", "1h"),
        "spec.diagnostics.historyRetention",
    ),
    BadSpec(
        "check windows that differ (the longest was used for all three)",
        _with("diagnostics.checks.consumerLag", {"window": "5m"}),
        "spec.diagnostics.checks",
    ),
    BadSpec(
        "check window longer than the history retention",
        _with(
            "diagnostics",
            {
                "historyRetention": "24h",
                "checks": {
                    "leaderFlapping": {"window": "48h"},
                    "consumerLag": {"window": "48h"},
                    "rebalanceStorm": {"window": "48h"},
                },
            },
        ),
        "spec.diagnostics.checks",
    ),
    BadSpec(
        "toDatetime before 1970 (a negative timestamp is Kafka's 'latest')",
        _reset(toDatetime="1969-12-31T23:59:59.999Z"),
        "spec.remediation.offsetResets.requests[0].toDatetime",
    ),
    BadSpec(
        "byDuration reaching before 1970",
        _reset(byDuration="500000h"),
        "spec.remediation.offsetResets.requests[0].byDuration",
    ),
    BadSpec(
        "consumer lag threshold beyond int64",
        _with("diagnostics.checks.consumerLag", {"warningLag": 2**63, "criticalLag": 2**64}),
        "spec.diagnostics.checks.consumerLag.warningLag",
    ),
    BadSpec(
        "partition number beyond int32",
        _reset(partitions=[{"topic": "t", "partition": 2**31}], latest=True),
        "spec.remediation.offsetResets.requests[0].partitions[0].partition",
    ),
    BadSpec(
        "a negative broker id in a restart request",
        _with(
            "remediation.rollingRestart.requests",
            [{"id": "r1", "brokers": [-1]}],
            _with("cluster.brokerPods", _PODS),
        ),
        "spec.remediation.rollingRestart.requests[0].brokers[0]",
    ),
    BadSpec(
        "ordinalOffset beyond int32 (Kafka broker ids are int32)",
        _with("cluster.brokerPods", {"statefulSet": "kafka", "brokerId": {"ordinalOffset": 2**31}}),
        "spec.cluster.brokerPods.brokerId.ordinalOffset",
    ),
    BadSpec(
        "min replication factor beyond int16",
        _with("diagnostics.checks.durability", {"minReplicationFactor": 40000}),
        "spec.diagnostics.checks.durability.minReplicationFactor",
    ),
    BadSpec(
        "topic named '..' (Kafka refuses it)",
        _reset(topics=[".."], latest=True),
        "spec.remediation.offsetResets.requests[0].topics[0]",
    ),
    BadSpec(
        "broker pods namespace with a dot",
        _with("cluster.brokerPods", {"statefulSet": "kafka", "namespace": "kafka.prod"}),
        "spec.cluster.brokerPods.namespace",
    ),
    BadSpec(
        "a host name with a space",
        _with("cluster.bootstrapServers", ["kafka 0:9092"]),
        "spec.cluster.bootstrapServers[0]",
    ),
    BadSpec(
        "an empty consumer group id",
        _reset(group="", latest=True),
        "spec.remediation.offsetResets.requests[0].group",
    ),
    BadSpec(
        "invalid label key in the pod selector",
        _with("cluster.brokerPods", {"podSelector": {"matchLabels": {"bad key!": "x"}}}),
        "spec.cluster.brokerPods.podSelector.matchLabels",
    ),
    BadSpec(
        "invalid label value in the pod selector (no pod can carry it)",
        _with("cluster.brokerPods", {"podSelector": {"matchLabels": {"app": "kafka broker"}}}),
        "spec.cluster.brokerPods.podSelector.matchLabels.app",
    ),
    BadSpec(
        "the same bootstrap server twice",
        _with("cluster.bootstrapServers", ["a:9092", "a:9092"]),
        "spec.cluster.bootstrapServers[1]",
    ),
]

PYDANTIC_ONLY_BAD_SPECS: list[BadSpec] = [
    BadSpec(
        "cron minute out of range",
        _window(schedule="61 2 * * *"),
        "spec.remediation.maintenanceWindows[0].schedule",
    ),
    BadSpec(
        "unknown time zone",
        _window(timeZone="Mars/Olympus"),
        "spec.remediation.maintenanceWindows[0].timeZone",
    ),
    BadSpec(
        "cron schedule that never fires (30 February)",
        _window(schedule="0 2 30 2 *"),
        "spec.remediation.maintenanceWindows[0].schedule",
    ),
    BadSpec(
        "cron schedule with croniter's random value R (a different time at every evaluation)",
        _window(schedule="R 2 * * *"),
        "spec.remediation.maintenanceWindows[0].schedule",
    ),
    BadSpec("unknown field (a typo)", _with("remediation.dryRun", True), "spec.remediation.dryRun"),
]
