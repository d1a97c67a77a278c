"""A policy's TLS settings reach the client (pure: a fake Secret reader, no API server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_health.controller.credentials import connection_for
from kafka_health.models.policy import ClusterSpec

SECRETS = {("ns", "kafka-client", "ca.crt"): "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"}


def read(namespace: str, name: str, key: str) -> str:
    return SECRETS[(namespace, name, key)]


@pytest.mark.parametrize(("verify", "expected"), [(True, "https"), (False, "none")])
def test_verify_hostname_maps_to_endpoint_identification(tmp_path: Path, verify: bool, expected: str) -> None:
    spec = ClusterSpec.model_validate(
        {
            "bootstrapServers": ["kafka:9093"],
            "security": {
                "protocol": "SSL",
                "tls": {"ca": {"name": "kafka-client", "key": "ca.crt"}, "verifyHostname": verify},
            },
        }
    )
    conn = connection_for(spec, "ns", read, tmp_path)
    assert conn.confluent()["ssl.endpoint.identification.algorithm"] == expected
    assert conn.kafka_python()["ssl_check_hostname"] is verify
    assert Path(conn.options["ssl.ca.location"]).read_text() == SECRETS[("ns", "kafka-client", "ca.crt")]
