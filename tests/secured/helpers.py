"""A secured testbed per module (1 broker unless asked for more), the CLI as users run it, and what a test asserts on it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from kafka_health.testbed import security
from kafka_health.testbed.cluster import INTERNAL_PORT_OFFSET, Testbed

# Client ports of the secured test clusters: clear of the session cluster (KAFKA_HEALTH_TEST_PORT
# and its controllers at +100) and of each other (each also uses +100 and +200).
PORT_OFFSET = {
    "sasl_ssl": 400,
    "mtls": 700,
    "sasl_ssl@3.9.x": 1000,
    "dedicated": 1300,
    "operator:sasl_ssl": 1600,
    "operator:mtls": 1650,  # 1-broker clusters: client, +100, +200 interleave without overlap
    # 3 brokers each (client, +100, +200): ports that are none of the above modulo 1000 either,
    # so they stay clear of the clusters of a test run whose KAFKA_HEALTH_TEST_PORT is 1000 away.
    "operator-remediation:sasl_ssl": 1950,
    "operator-remediation:mtls": 1975,
    "tls-causes:ssl": 2725,  # 1 broker each: 2725/2825/2925, 2750/2850/2950
    "tls-causes:mtls": 2750,
    "secret-material:ssl": 2775,  # 1 broker: 2775/2875/2975
    "visibility:sasl_ssl": 2200,  # 3 brokers: 2200-2202, 2300-2302, 2400-2402
    "operator-visibility:sasl_ssl": 2250,  # 1 broker: 2250, 2350, 2450
    "acl_table:sasl_ssl": 2500,  # 3 brokers: 2500-2502, 2600-2602, 2700-2702
    "certificates:ssl": 2860,  # 2 brokers: 2860-2861, 2960-2961, 3060-3061
}


def secured_testbed(
    tmp: Path,
    mode: str,
    kafka_version: str | None = None,
    *,
    port_key: str | None = None,
    brokers: int = 1,
) -> Iterator[Testbed]:
    key = port_key or (f"{mode}@{kafka_version}" if kafka_version else mode)
    base = int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")) + PORT_OFFSET[key]
    tb = Testbed(tmp)
    try:  # a start-up that fails half-way (a port taken) leaves no broker running either
        tb.up(brokers, base, security_mode=mode, kafka_version=kafka_version)
        yield tb
    finally:
        tb.down(purge=True)


def kafka_health(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`kafka-health ARGS` in a child process, as a user runs it."""
    full_env = {k: v for k, v in os.environ.items() if k != "KAFKA_HEALTH_COMMAND_CONFIG"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "kafka_health.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=full_env,
    )


def internal_listener(tb: Testbed) -> str:
    """The broker's PLAINTEXT inter-broker listener (what a SASL client must not be pointed at)."""
    b = tb.require().brokers[0]
    assert b.internal_port == b.port + INTERNAL_PORT_OFFSET
    return f"127.0.0.1:{b.internal_port}"


def properties_with(
    tb: Testbed, tmp: Path, name: str, user: str = security.ADMIN, **changes: str | None
) -> Path:
    """The testbed's client.properties of `user` with some keys changed (None: removed)."""
    source = tb.client_properties(user)
    assert source is not None
    lines = {}
    for line in source.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            lines[key] = value
    for name, change in changes.items():
        key = name.replace("__", ".")
        if change is None:
            lines.pop(key, None)
        else:
            lines[key] = change
    path = tmp / name
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path


def other_ca(tmp: Path) -> Path:
    """A CA that signed none of the brokers' certificates."""
    path = tmp / "other-ca.pem"
    path.write_bytes(security.make_ca("not the testbed's CA").cert)
    return path
