"""An exclusive `flock` on a file, for work that several processes may start at once (history
appends of one cluster, the testbed's node starts): the kernel drops it when a holder dies, so a
crashed process never leaves a stale lock behind, unlike a lock file that must be removed."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created with its directory if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
