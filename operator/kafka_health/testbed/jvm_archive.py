"""Class-data-sharing archives for the testbed's Kafka JVMs: a node or a tool maps the classes a
recording run loaded, instead of loading and verifying them one by one from Kafka's jars.

Why: the testbed's JVMs are short-lived and many (the suite starts ~140 nodes and a few hundred
tools), and class loading is half of what each costs. Measured on the project machine (idle,
2026-11-27, Kafka 4.1.2, JDK 17): a node's CPU time until "Kafka Server started" 2.5 s → 1.25 s,
a `kafka-topics --describe` 0.8 s → 0.4 s (docs/testbed.md "The brokers' JVM").

Two archives per Kafka version and JDK (HotSpot's dynamic AppCDS, JDK 13+): `node`, recorded by
a node of a throwaway one-node cluster until it stops, and `tool`, recorded by `kafka-topics`
creating a topic there. Every tool maps `tool`: the admin client and Kafka's common classes are
what they share; a tool's own classes still load from the jars. The archives are written by
`kafka-health testbed fetch` (`archive_build`), never by a node of a user's cluster. An archive
belongs to the JDK and the jars that wrote it, so its name carries a digest of both; the JVM
checks again when it maps one and runs without it if it does not match (`-Xshare:auto`: slower,
never wrong), with its warning on stderr, never on a tool's stdout.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from pathlib import Path

from kafka_health.testbed import distribution

KINDS = ("node", "tool")
NODE_MAIN = "kafka.Kafka"
# The JVM's own log lines: warnings to stderr (by default stdout, where the tools print answers).
_LOG_TO_STDERR = ["-Xlog:disable", "-Xlog:all=warning:stderr"]
# Recording warns once per class it cannot archive (hundreds): errors only.
_QUIET_RECORDING = ["-Xlog:disable", "-Xlog:all=error:stderr"]


def kind_of(main: str) -> str:
    """`node` for a Kafka node's JVM, `tool` for every command-line tool."""
    return "node" if main == NODE_MAIN else "tool"


@functools.lru_cache(maxsize=16)
def fingerprint(version: str) -> str | None:
    """A digest of the JDK (`java` on PATH, its `release` file) and this version's jar names;
    None when there is no java or the jars are not fetched yet."""
    found = shutil.which("java")
    libs = distribution.libs_dir(version)
    if found is None or not libs.is_dir():
        return None
    java = Path(found).resolve()
    digest = hashlib.sha256(f"{version}\n{java}\n".encode())
    release = java.parent.parent / "release"
    if release.exists():
        digest.update(release.read_bytes())
    digest.update("\n".join(sorted(p.name for p in libs.glob("*.jar"))).encode())
    return digest.hexdigest()[:16]


def archive_path(version: str, kind: str) -> Path | None:
    """Where this version's `kind` archive is (or would be written) for this JDK."""
    key = fingerprint(version)
    return None if key is None else distribution.kafka_home(version) / f"classes-{kind}-{key}.jsa"


def java_options(version: str, main: str, record_to: Path | None = None) -> list[str]:
    """The options that map the archive for `main` (none while it is not built), or with
    `record_to` the ones that record one there (`<kind>.jsa`, written when the JVM exits)."""
    kind = kind_of(main)
    if record_to is not None:
        return [f"-XX:ArchiveClassesAtExit={record_to / f'{kind}.jsa'}", *_QUIET_RECORDING]
    path = archive_path(version, kind)
    if path is None or not path.exists():
        return []
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto", *_LOG_TO_STDERR]
