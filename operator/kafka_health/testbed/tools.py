"""Kafka's command-line tools as the testbed runs them: the main class behind each script name (the
scripts are not in the jars) and the option through which each reads client settings."""

from __future__ import annotations

import functools
import zipfile
from pathlib import Path

from kafka_health.testbed import distribution
from kafka_health.testbed.state import TestbedError

# Kafka command-line tools by their script name → main class (the scripts are not in the jars).
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",  # Kafka 4.0+: every group type
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
}
# Where these tools lived before they moved to kafka-tools (Kafka 3.9 keeps the producer and
# kafka-acls in the Scala core; 4.1 still kafka-configs; 4.4 has all three in kafka-tools).
FORMER_HOME = {
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
}
# Tools newer than some supported versions: the first Kafka release whose jars have them.
FIRST_RELEASE = {
    "kafka-groups": (4, 0),
    "kafka-share-groups": (4, 0),
    "kafka-console-share-consumer": (4, 0),
    "kafka-streams-groups": (4, 1),
}


def in_version(name: str, kafka_version: str) -> bool:
    """Whether Kafka `kafka_version` ships tool `name` at all (kafka-groups came with 4.0)."""
    major, minor = (int(x) for x in kafka_version.split(".")[:2])
    return (major, minor) >= FIRST_RELEASE.get(name, (0, 0))


# The option each tool reads client settings from (Kafka 4.1's names); absent: it takes none.
COMMAND_CONFIG_OPTION = {
    "kafka-topics": "--command-config",
    "kafka-consumer-groups": "--command-config",
    "kafka-leader-election": "--admin.config",
    "kafka-metadata-quorum": "--command-config",
    "kafka-configs": "--command-config",
    "kafka-log-dirs": "--command-config",
    "kafka-reassign-partitions": "--command-config",
    "kafka-get-offsets": "--command-config",
    "kafka-console-producer": "--producer.config",
    "kafka-console-consumer": "--consumer.config",
    "kafka-acls": "--command-config",
    "kafka-transactions": "--command-config",
    "kafka-groups": "--command-config",
    "kafka-share-groups": "--command-config",
    "kafka-console-share-consumer": "--consumer-config",
    "kafka-streams-groups": "--command-config",
}

# The options through which a caller already gave client settings: the testbed's are not added then.
_GIVEN_CONFIG = {
    "--command-config",
    "--admin.config",
    "--producer.config",
    "--consumer.config",
    "--consumer-config",
}


def main_class(name: str, kafka_version: str) -> str:
    """The tool's main class in this Kafka version: its kafka-tools class when the version's jars
    have it, else its former home (which release moved which tool is read from the jars, not
    kept in a table of versions)."""
    if name not in TOOLS:
        raise TestbedError(f"unknown tool {name!r}; one of: {', '.join(sorted(TOOLS))}")
    if not in_version(name, kafka_version):
        first = ".".join(map(str, FIRST_RELEASE[name]))
        raise TestbedError(f"{name} comes with Kafka {first}; this cluster runs Kafka {kafka_version}")
    main = TOOLS[name]
    former = FORMER_HOME.get(name)
    if former is None or _has_class(kafka_version, main):
        return main
    return former


def _has_class(kafka_version: str, name: str) -> bool:
    return f"{name.replace('.', '/')}.class" in _kafka_classes(kafka_version)


@functools.cache
def _kafka_classes(kafka_version: str) -> frozenset[str]:
    """The class files in this version's Kafka jars (empty before they are fetched)."""
    names: set[str] = set()
    for jar in distribution.libs_dir(kafka_version).glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as archive:
            names.update(n for n in archive.namelist() if n.endswith(".class"))
    return frozenset(names)


def tool_args(name: str, args: list[str], bootstrap_servers: str, properties: Path | None) -> list[str]:
    """`args` with the testbed's bootstrap servers and client settings added where the caller gave none."""
    if name not in TOOLS:
        raise TestbedError(f"unknown tool {name!r}; one of: {', '.join(sorted(TOOLS))}")
    args = list(args)
    takes_bootstrap = name not in ("kafka-storage",)
    if takes_bootstrap and not any(a in args for a in ("--bootstrap-server", "--bootstrap-controller")):
        args = ["--bootstrap-server", bootstrap_servers, *args]
    option = COMMAND_CONFIG_OPTION.get(name)
    # Not for --bootstrap-controller: the controller listener is PLAINTEXT.
    controller = "--bootstrap-controller" in args
    if option and properties is not None and not controller and not _GIVEN_CONFIG.intersection(args):
        # Before any subcommand: kafka-metadata-quorum takes its options ahead of `describe`.
        args = [option, str(properties), *args]
    return args
