"""Where the history's files live, and how they are written so readers never see half a file.

`<root>/<table>/cluster=<escaped name>/date=<YYYY-MM-DD>/<part>.parquet` (see `schema`).
Every file is written under a name starting with `.` (skipped by Spark and pyarrow) and then
renamed into place; a whole date directory is replaced by swapping it with a staged one.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import uuid
from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_health._kits import file_lock

LATEST = "latest"
LOCKS = ".locks"
TMP_PREFIX = ".tmp-"

# The characters Hive/Spark escape in partition values (`ExternalCatalogUtils.escapePathName`),
# so a cluster named after its bootstrap servers (`host:9092,...`) is a valid Hadoop path.
_ESCAPE = {
    *(chr(c) for c in range(0x20)),
    '"',
    "#",
    "%",
    "'",
    "*",
    "/",
    ":",
    "=",
    "?",
    "\\",
    "\x7f",
    "{",
    "[",
    "]",
    "^",
}


def escape(value: str) -> str:
    if not value:
        raise ValueError("a cluster name must not be empty")
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def unescape(value: str) -> str:
    from urllib.parse import unquote

    return unquote(value)


def cluster_dir(root: Path, table: str, cluster: str) -> Path:
    return root / table / f"cluster={escape(cluster)}"


def date_dir(root: Path, table: str, cluster: str, day: date) -> Path:
    return cluster_dir(root, table, cluster) / f"date={day.isoformat()}"


def latest_dir(root: Path, cluster: str) -> Path:
    return root / LATEST / f"cluster={escape(cluster)}"


def dates(root: Path, table: str, cluster: str) -> list[date]:
    """The date partitions present for one table and cluster, oldest first."""
    base = cluster_dir(root, table, cluster)
    if not base.is_dir():
        return []
    found = []
    for child in base.iterdir():
        if child.is_dir() and child.name.startswith("date="):
            with contextlib.suppress(ValueError):
                found.append(date.fromisoformat(child.name[len("date=") :]))
    return sorted(found)


def data_files(directory: Path) -> list[Path]:
    """The visible Parquet files of a date directory (temporaries excluded), in name order."""
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.iterdir() if p.suffix == ".parquet" and not p.name.startswith((".", "_"))
    )


def part_name(ts: datetime) -> str:
    """Per-cycle file name: sorts by time, unique across writers."""
    return f"part-{ts.strftime('%Y%m%dT%H%M%S%f')}-{uuid.uuid4().hex[:8]}.parquet"


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write `table` to `path` atomically (hidden temporary, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{uuid.uuid4().hex}-{path.name}")
    try:
        pq.write_table(table, tmp, compression="zstd")
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{uuid.uuid4().hex}-{path.name}")
    try:
        tmp.write_text(text)
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def cluster_lock(root: Path, cluster: str) -> contextlib.AbstractContextManager[None]:
    """Serialises appends, compaction and retention of one cluster (across processes too)."""
    return file_lock.exclusive(root / LOCKS / f"{escape(cluster)}.lock")


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def swap_dirs(a: Path, b: Path) -> None:
    """Exchange two directories atomically (Linux renameat2); elsewhere two renames.

    With the fallback a reader may find neither for an instant, but never a mix of both.
    """
    libc_name = ctypes.util.find_library("c")
    renameat2 = getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2", None) if libc_name else None
    if renameat2 is not None:
        rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
        if rc == 0:
            return
    aside = a.with_name(f".swap-{uuid.uuid4().hex}")
    os.rename(a, aside)
    os.rename(b, a)
    os.rename(aside, b)
