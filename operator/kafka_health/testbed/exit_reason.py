"""Why a testbed node exited during start-up, read from its own files: a test session's teardown
removes them, so the reason must travel in the error itself."""

from __future__ import annotations

from pathlib import Path

SIGNS = ("ERROR", "FATAL", "WARN", "Exception")


def last_error_lines(log_dir: Path, node_id: int, lines: int = 15) -> str:
    """The last ERROR/FATAL/WARN/Exception lines of node `node_id`'s log and stdout."""
    found: list[str] = []
    for path in (log_dir / f"broker-{node_id}.log", log_dir / f"broker-{node_id}.out"):
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        found += [line for line in text if any(sign in line for sign in SIGNS)]
    return "\n".join(found[-lines:]) or "(no ERROR, FATAL, WARN or Exception line)"
