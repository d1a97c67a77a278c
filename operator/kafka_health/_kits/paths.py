"""Where the project keeps caches and state outside the repository."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`${XDG_CACHE_HOME:-~/.cache}/kafka-health`: jars, binaries, venvs, keyed by version."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-health"


def state_root() -> Path:
    """`${XDG_STATE_HOME:-~/.local/state}/kafka-health`: data and logs of local test clusters."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kafka-health"
