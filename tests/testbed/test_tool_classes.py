"""Every Kafka tool the testbed runs has its main class in the jars of each version CI fetches
(`make test` fetches the default, 4.4, and 3.9.x and 4.1.x for tests/compat): tools move from the
Scala core to kafka-tools between releases (kafka-configs did after 4.1), and a tool whose class
is gone fails only when a test runs it."""

from __future__ import annotations

import pytest

from kafka_health.testbed import distribution, tools
from kafka_health.testbed.state import TestbedError

VERSIONS = [distribution.KAFKA_VERSION, distribution.NEWEST["4.1"], distribution.NEWEST["3.9"]]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_tools_main_class_is_in_the_versions_jars(version: str) -> None:
    distribution.ensure_kafka(version)
    missing = [
        f"{name}: {tools.main_class(name, version)}"
        for name in tools.TOOLS
        if tools.in_version(name, version) and not tools._has_class(version, tools.main_class(name, version))
    ]
    assert missing == [], f"Kafka {version}"
    # A tool said to be newer than this version is really absent from its jars.
    newer = [n for n in tools.TOOLS if not tools.in_version(n, version)]
    assert not [n for n in newer if tools._has_class(version, tools.TOOLS[n])], f"Kafka {version}"
    for n in newer:  # and asking for it says so, not a Java stack trace
        with pytest.raises(TestbedError, match=f"{n} comes with Kafka"):
            tools.main_class(n, version)


def test_moved_tools_are_found_where_each_version_keeps_them() -> None:
    assert (
        tools.main_class("kafka-configs", distribution.NEWEST["4.4"])
        == "org.apache.kafka.tools.ConfigCommand"
    )
    assert tools.main_class("kafka-configs", distribution.NEWEST["4.1"]) == "kafka.admin.ConfigCommand"
    assert tools.main_class("kafka-acls", distribution.NEWEST["3.9"]) == "kafka.admin.AclCommand"
    assert tools.main_class("kafka-acls", distribution.NEWEST["4.1"]) == "org.apache.kafka.tools.AclCommand"
