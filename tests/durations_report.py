"""Where a run's time went, written to files: `pytest --durations-report DIR` (hack/test.sh passes
build/test-reports).

- DIR/durations.txt: the wall time, each worker's busy time, then every file and every test with
  its seconds (setup + call + teardown), longest first, and the worker that ran it.
- DIR/file-seconds.json: {file: seconds}, the table tests/parallel.py orders files by (copy it to
  tests/file_seconds.json when files grew or moved).

Written by the process that reports (xdist's controller, or the only process of a serial run),
from the reports every test sends it.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.parallel import file_of


@dataclass
class _TestTime:
    seconds: dict[str, float] = field(default_factory=dict)  # setup / call / teardown
    worker: str = "-"
    outcome: str = "passed"

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


@dataclass
class DurationsLog:
    started: float = field(default_factory=time.monotonic)
    tests: dict[str, _TestTime] = field(default_factory=lambda: defaultdict(_TestTime))
    last_report: dict[str, float] = field(default_factory=dict)  # worker -> seconds since start

    def add(self, report: pytest.TestReport) -> None:
        entry = self.tests[report.nodeid]
        entry.seconds[report.when] = entry.seconds.get(report.when, 0.0) + report.duration
        node = getattr(report, "node", None)  # xdist: the worker that ran it
        gateway = getattr(node, "gateway", None)
        entry.worker = str(getattr(gateway, "id", entry.worker))
        self.last_report[entry.worker] = time.monotonic() - self.started
        if report.failed or (report.when == "call" and report.outcome != "passed"):
            entry.outcome = report.outcome

    def file_seconds(self) -> dict[str, float]:
        files: dict[str, float] = defaultdict(float)
        for nodeid, entry in self.tests.items():
            files[file_of(nodeid)] += entry.total
        return {name: round(s, 1) for name, s in sorted(files.items(), key=lambda kv: -kv[1])}

    def text(self, wall: float) -> str:
        workers: dict[str, float] = defaultdict(float)
        file_worker: dict[str, str] = {}
        counts: dict[str, int] = defaultdict(int)
        for nodeid, entry in self.tests.items():
            workers[entry.worker] += entry.total
            file_worker[file_of(nodeid)] = entry.worker
            counts[file_of(nodeid)] += 1
        total = sum(workers.values())
        lines = [f"wall {wall:.1f} s; {len(self.tests)} tests; {total:.1f} s of test time", ""]
        lines += ["seconds per worker: busy in tests, and when its last test ended"]
        lines += [f"  {s:9.1f}  {self.last_report.get(w, 0):9.1f}  {w}" for w, s in sorted(workers.items())]
        lines += ["", "seconds per file (setup + call + teardown), longest first:"]
        for name, s in self.file_seconds().items():
            lines.append(f"  {s:9.1f}  {counts[name]:4d} tests  {file_worker[name]:>4}  {name}")
        lines += ["", "seconds per test, longest first:"]
        for nodeid, entry in sorted(self.tests.items(), key=lambda kv: -kv[1].total):
            parts = " ".join(f"{k} {v:.1f}" for k, v in entry.seconds.items())
            mark = "" if entry.outcome == "passed" else f"  [{entry.outcome}]"
            lines.append(f"  {entry.total:9.2f}  {entry.worker:>4}  {nodeid}  ({parts}){mark}")
        return "\n".join(lines) + "\n"

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "file-seconds.json").write_text(json.dumps(self.file_seconds(), indent=1) + "\n")
        path = directory / "durations.txt"
        path.write_text(self.text(time.monotonic() - self.started))
        return path


class DurationsPlugin:
    """Collects every test report and writes the files when the session ends."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log = DurationsLog()
        self.written: Path | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.log.add(report)

    def pytest_sessionfinish(self) -> None:
        self.written = self.log.write(self.directory)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.written is not None:
            terminalreporter.write_line(f"durations report: {self.written}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--durations-report",
        metavar="DIR",
        default=None,
        help="write DIR/durations.txt (every file and test, longest first) and DIR/file-seconds.json",
    )


def pytest_configure(config: pytest.Config) -> None:
    directory = config.getoption("durations_report")
    if directory and not hasattr(config, "workerinput"):  # xdist's workers send their reports on
        config.pluginmanager.register(DurationsPlugin(Path(directory)), "durations-report")
