"""Shared fixtures: the real local Kafka cluster (session-scoped), unique names, fault helpers.

Environment knobs (all optional):
- KAFKA_HEALTH_TEST_PORT: first client port of the test cluster (default 29092, clear of the demo's 19092).
- KAFKA_HEALTH_TEST_TESTBED_DIR: reuse this state dir instead of a fresh temporary one.
- KAFKA_HEALTH_KEEP_TESTBED=1: leave the cluster running after the session (faster local reruns).

Under pytest-xdist (`-n N`, as hack/test.sh runs the suite) worker gwN runs with its own
KAFKA_HEALTH_TEST_PORT, N * 3200 from the base (down from 29092: 25892, 22692, …; up from a base in
the kernel's ephemeral range) and its testbed under KAFKA_HEALTH_TEST_TESTBED_DIR/gwN
(tests/parallel.py): each worker brings its own clusters and control plane.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_health.testbed import archive_build, distribution, faults
from kafka_health.testbed.cluster import Testbed
from tests import parallel

# An undocumented reason (kafka_health.models.reasons) raises instead of being logged, here and in
# the operator processes the tests start.
os.environ.setdefault("KAFKA_HEALTH_STRICT_REASONS", "1")
# Every Spark driver JVM the suite starts (its own, the operators', the CLI's) compiles with the
# JIT's first tier only and collects with the serial collector, like its brokers: an operator here
# lives for a few cycles, too short for C2 and G1's threads to pay back on 2 cores. One operator's
# JVM through a one-cycle test 23.8 -> 13.5 CPU-s; tests/spark/test_reuse.py with test_windows.py
# 367 -> 289 CPU-s (docs/testbed.md). Set it empty to run the product's own flags.
os.environ.setdefault("KAFKA_HEALTH_SPARK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
# ... and maps the class archive even when it lives long (kafka_health_spark.class_archive): the
# suite's operators live minutes, its RSS matters less than ~3 CPU-s at each of ~30 starts.
os.environ.setdefault("KAFKA_HEALTH_SPARK_CLASS_ARCHIVE_LONG_LIVED", "1")

# One control plane per session for every folder that needs it (tests/k8s, tests/ship, …);
# `--durations-report DIR` (where the run's time went, written to files).
pytest_plugins = ["tests.k8s_fixtures", "tests.durations_report"]


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker's own ports and state dir, in os.environ before any fixture or child process
    reads them."""
    parallel.isolate_worker(os.environ)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist the longest files go first (every worker orders alike: xdist checks that they
    collected the same list); a serial run keeps the collection order."""
    if parallel.worker_index(os.environ) is not None:
        items[:] = parallel.longest_files_first(items, parallel.load_file_seconds())


@pytest.fixture(scope="session")
def testbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    state_dir = os.environ.get("KAFKA_HEALTH_TEST_TESTBED_DIR")
    tb = Testbed(Path(state_dir) if state_dir else tmp_path_factory.mktemp("testbed"))
    archive_build.ensure(distribution.KAFKA_VERSION)  # (built by `make test`'s fetch: a no-op there)
    tb.up(3, int(os.environ.get("KAFKA_HEALTH_TEST_PORT", "29092")))
    yield tb
    if os.environ.get("KAFKA_HEALTH_KEEP_TESTBED") != "1":
        tb.down(purge=state_dir is None)


@pytest.fixture
def kafka(testbed: Testbed) -> Iterator[Testbed]:
    """The test cluster, healed before the test (whatever an earlier test left, e.g. leaders moved by
    a pod restart) and after it (whatever this test did)."""
    faults.heal(testbed)
    yield testbed
    faults.heal(testbed)


@pytest.fixture
def bootstrap(testbed: Testbed) -> str:
    return testbed.require().bootstrap_servers


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A topic/group name unique to this test run: `t-<test>-<6 hex>`.

    After the test, topics named with it (prefix) and groups named with it are deleted when
    the test used the Kafka cluster, so one test's leftovers (an RF-1 topic, a lagging group)
    never become another test's findings.
    """
    base = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name).strip("-")[:40]
    name = f"t-{base}-{uuid.uuid4().hex[:6]}"
    yield name
    if "testbed" in request.fixturenames:
        testbed: Testbed = request.getfixturevalue("testbed")
        faults.delete_named(testbed.require().bootstrap_servers, name)
