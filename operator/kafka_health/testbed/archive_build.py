"""Build the class archives `jvm_archive` maps: a throwaway one-node cluster records them.

Steps: (1) start a one-node KRaft cluster in a temporary directory on free ports, its JVMs
recording (`Testbed.record_classes_to`); (2) `kafka-topics` creates a topic (the `tool` archive,
written when that JVM exits); (3) the node is stopped with SIGTERM (the `node` archive, written
as it exits); (4) both files move into the Kafka version's cache, under a lock, so two processes
building at once leave one pair. ~15 s once per Kafka version and JDK.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

from kafka_health._kits.file_lock import exclusive
from kafka_health.testbed import distribution, jvm_archive
from kafka_health.testbed.cluster import Testbed
from kafka_health.testbed.controlplane import bindable
from kafka_health.testbed.state import TestbedError

# Where the throwaway cluster looks for free ports: clear of the testbed's defaults (19092+) and
# of the suite's per-worker blocks.
_PORT_RANGE = (33000, 34500)


def _free_base_port() -> int:
    """A client port whose controller (+100) and internal (+200) ports are free as well."""
    for _ in range(50):
        base = random.randrange(*_PORT_RANGE)
        if all(bindable(base + offset) for offset in (0, 100, 200)):
            return base
    raise TestbedError(f"no free ports in {_PORT_RANGE} to record the class archives")


def ensure(version: str) -> list[Path]:
    """The `node` and `tool` archives of this Kafka version for this JDK, built if missing;
    [] when there is no java to build them with."""
    paths = [jvm_archive.archive_path(version, kind) for kind in jvm_archive.KINDS]
    if any(p is None for p in paths):
        return []
    done = [p for p in paths if p is not None]
    if all(p.exists() for p in done):
        return done
    with exclusive(distribution.kafka_home(version) / ".class-archives.lock"):
        if not all(p.exists() for p in done):
            _record(version, done)
    return done


def _record(version: str, into: list[Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="kafka-classes-") as tmp:
        record = Path(tmp) / "record"
        record.mkdir()
        tb = Testbed(Path(tmp) / "testbed")
        tb.record_classes_to = record
        try:
            tb.up(1, _free_base_port(), kafka_version=version)
            topic = ["--create", "--topic", "classes", "--partitions", "1", "--replication-factor", "1"]
            created = tb.tool("kafka-topics", topic)
            if created.returncode != 0:
                raise TestbedError(f"recording the tool archive failed: {created.stderr.strip()[-500:]}")
            tb.stop(0)
        finally:
            tb.down(purge=True)
        for kind, path in zip(jvm_archive.KINDS, into, strict=True):
            written = record / f"{kind}.jsa"
            if not written.exists():
                raise TestbedError(f"the {kind} JVM wrote no class archive; see {tb.state_dir / 'logs'}")
            os.replace(written, path)
