"""Retention by age and compaction of small files (callers hold the cluster's lock).

A day at one snapshot every 30 s is 2,880 files per table and date; Spark pays per file, so
`compact_date` merges them into one file sorted by time and swaps the date directory in one
step. Retention drops whole date directories, so it never rewrites data.
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_health.history import layout
from kafka_health.history.schema import TABLES

log = logging.getLogger(__name__)

STALE_TMP_SECONDS = 3600  # temporaries older than this were left by a crashed writer


def compact_date(directory: Path, schema: pa.Schema, *, min_files: int = 2) -> bool:
    """Merge the visible files of one date directory into one; True when it did.

    The merged file is written into a hidden sibling directory which is then exchanged with
    the date directory, so a reader lists either all the small files or the one merged file.
    """
    _remove_stale_temporaries(directory)
    files = layout.data_files(directory)
    if len(files) < min_files:
        return False
    merged = pa.concat_tables([pq.read_table(f, schema=schema) for f in files])
    sort_keys = [
        (name, "ascending")
        for name in ("ts", "topic", "group_id", "partition", "broker")
        if name in schema.names
    ]
    merged = merged.sort_by(sort_keys)
    staging = directory.with_name(f".compact-{uuid.uuid4().hex}")
    staging.mkdir()
    try:
        layout.write_parquet(merged, staging / f"compacted-{uuid.uuid4().hex[:8]}.parquet")
        layout.swap_dirs(directory, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # after the swap: the old small files
    log.info("compacted %d files into one in %s", len(files), directory)
    return True


def drop_old_dates(root: Path, cluster: str, keep_days: int, today: date) -> list[Path]:
    """Delete the date partitions before `today - keep_days` in every table of `cluster`."""
    if keep_days < 0:
        raise ValueError("keep_days must be >= 0")
    cutoff = today - timedelta(days=keep_days)
    dropped = []
    for table in TABLES:
        for day in layout.dates(root, table, cluster):
            if day < cutoff:
                directory = layout.date_dir(root, table, cluster, day)
                # Rename first so a reader never sees a half-deleted directory.
                doomed = directory.with_name(f".drop-{uuid.uuid4().hex}")
                directory.rename(doomed)
                shutil.rmtree(doomed, ignore_errors=True)
                dropped.append(directory)
    return dropped


def _remove_stale_temporaries(directory: Path) -> None:
    if not directory.is_dir():
        return
    now = time.time()
    for path in directory.iterdir():
        if path.name.startswith(layout.TMP_PREFIX) and now - path.stat().st_mtime > STALE_TMP_SECONDS:
            path.unlink(missing_ok=True)
