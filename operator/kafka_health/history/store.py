"""`HistoryStore`: appends one snapshot per cycle to the Parquet tables, reads windows back.

An append costs what changed plus the samples, never the history's size: the partition state
is compared with the baseline kept in memory (reloaded from `latest/` after a restart), and
each table gets one new small file in today's partition. `compact()` later merges those files
and `apply_retention()` drops old dates (both in `maintenance`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kafka_health.history import changes, layout, maintenance, reconciliation
from kafka_health.history.schema import TABLES
from kafka_health.models.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "snapshot.json"
BASELINE_FILE = "partition_state.parquet"


@dataclass
class AppendResult:
    """What one append wrote: rows per table, and why nothing was written if so."""

    rows: dict[str, int] = field(default_factory=dict)
    # The rows themselves (only tables that got rows): what an in-memory window folds in.
    tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    full_state: bool = False  # partition_state got every partition (first snapshot of the day)
    skipped: str | None = None


class HistoryStore:
    """The history under one root directory (a local or mounted volume), for any number of clusters."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        # Per cluster: (file mtime, value), reloaded when another writer changed the file.
        self._baselines: dict[str, tuple[int, changes.Baseline | None]] = {}
        self._last_ts: dict[str, tuple[int, datetime | None]] = {}

    # ------------------------------------------------------------------ writing
    def append(self, snapshot: ClusterSnapshot) -> AppendResult:
        """Record one snapshot: partition changes, samples, and the new `latest/` state. Sets
        `mismatch_since` on the snapshot's reconciling group members (`history.reconciliation`)."""
        cluster = snapshot.cluster
        ts = changes.utc(snapshot.taken_at)
        with layout.cluster_lock(self.root, cluster):
            last = self._last_appended(cluster)
            if last is not None and ts <= last:
                return AppendResult(skipped=f"not newer than the last recorded snapshot ({last.isoformat()})")
            previous = self._baseline(cluster)
            reconciling = layout.latest_dir(self.root, cluster) / reconciliation.RECONCILING_FILE
            record = reconciliation.carry(reconciliation.load(reconciling), snapshot)
            result = AppendResult()
            tables: dict[str, pa.Table] = {
                "broker_samples": changes.broker_samples(snapshot),
                "group_samples": changes.group_samples(snapshot),
                "group_offset_samples": changes.group_offset_samples(snapshot),
                "replica_lag_samples": changes.replica_lag_samples(snapshot),
            }
            diff = changes.diff_partitions(previous, snapshot)
            if diff is not None:
                states = diff.baseline.states
                tables["partition_state"] = changes.partition_state_table(ts, states, diff.changed)
                tables["partition_removed"] = changes.removed_table(ts, diff.removed)
                result.full_state = diff.full
            for name in TABLES:  # every table directory exists, so readers never miss a path
                (self.root / name).mkdir(parents=True, exist_ok=True)
            for name, table in tables.items():
                result.rows[name] = table.num_rows
                if table.num_rows:
                    result.tables[name] = table
                    path = layout.date_dir(self.root, name, cluster, ts.date()) / layout.part_name(ts)
                    layout.write_parquet(table, path)
            if diff is not None and (diff.changed or diff.removed or previous is None):
                self._save_baseline(cluster, diff.baseline)
            layout.write_text(reconciliation.dumps(record, ts), reconciling)
            latest = layout.latest_dir(self.root, cluster) / SNAPSHOT_FILE
            layout.write_text(snapshot.model_dump_json(), latest)
            self._last_ts[cluster] = (latest.stat().st_mtime_ns, ts)
            return result

    def _last_appended(self, cluster: str) -> datetime | None:
        path = layout.latest_dir(self.root, cluster) / SNAPSHOT_FILE
        mtime = path.stat().st_mtime_ns if path.exists() else 0
        cached = self._last_ts.get(cluster)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        last = (
            changes.utc(datetime.fromisoformat(json.loads(path.read_text())["taken_at"])) if mtime else None
        )
        self._last_ts[cluster] = (mtime, last)
        return last

    def _baseline(self, cluster: str) -> changes.Baseline | None:
        """The previous partition state: from memory unless the file changed (another writer)."""
        path = layout.latest_dir(self.root, cluster) / BASELINE_FILE
        mtime = path.stat().st_mtime_ns if path.exists() else 0
        cached = self._baselines.get(cluster)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        baseline = changes.baseline_from_table(pq.read_table(path)) if mtime else None
        self._baselines[cluster] = (mtime, baseline)
        return baseline

    def _save_baseline(self, cluster: str, baseline: changes.Baseline) -> None:
        path = layout.latest_dir(self.root, cluster) / BASELINE_FILE
        layout.write_parquet(changes.baseline_table(baseline), path)
        self._baselines[cluster] = (path.stat().st_mtime_ns, baseline)

    # ------------------------------------------------------------------ reading
    def latest(self, cluster: str) -> ClusterSnapshot | None:
        """The newest snapshot appended for `cluster` (None when there is none)."""
        path = layout.latest_dir(self.root, cluster) / SNAPSHOT_FILE
        if not path.exists():
            return None
        return ClusterSnapshot.model_validate_json(path.read_text())

    def clusters(self) -> list[str]:
        base = self.root / layout.LATEST
        if not base.is_dir():
            return []
        return sorted(
            layout.unescape(p.name[len("cluster=") :]) for p in base.glob("cluster=*") if p.is_dir()
        )

    def dates(self, cluster: str, table: str = "broker_samples") -> list[date]:
        return layout.dates(self.root, _known(table), cluster)

    def table_path(self, table: str) -> Path:
        """The directory Spark reads a table from (`spark.read.parquet(path)`)."""
        return self.root / _known(table)

    def read(
        self,
        table: str,
        cluster: str,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> pa.Table:
        """Rows of `table` for `cluster` with `since <= ts < until`, oldest first.

        Only the date directories the window touches are opened. Columns: the table's schema
        (the partition columns `cluster` and `date` are implied by the arguments).
        """
        schema = TABLES[_known(table)]
        base = layout.cluster_dir(self.root, table, cluster)
        files = [
            f
            for day in layout.dates(self.root, table, cluster)
            if (since is None or day >= changes.utc(since).date())
            and (until is None or day <= changes.utc(until).date())
            for f in layout.data_files(base / f"date={day.isoformat()}")
        ]
        if not files:
            return schema.empty_table()
        dataset = ds.dataset([str(f) for f in files], schema=schema, format="parquet")
        condition = None
        if since is not None:
            condition = ds.field("ts") >= pa.scalar(changes.utc(since), type=schema.field("ts").type)
        if until is not None:
            before = ds.field("ts") < pa.scalar(changes.utc(until), type=schema.field("ts").type)
            condition = before if condition is None else condition & before
        out = dataset.to_table(filter=condition)
        return out.sort_by([("ts", "ascending")])

    # ------------------------------------------------------------------ maintenance
    def compact(self, cluster: str | None = None, *, min_files: int = 2) -> list[Path]:
        """Merge each date's per-cycle files into one file (see `maintenance.compact_date`)."""
        done: list[Path] = []
        for name in self._clusters_or(cluster):
            with layout.cluster_lock(self.root, name):
                for table in TABLES:
                    for day in layout.dates(self.root, table, name):
                        directory = layout.date_dir(self.root, table, name, day)
                        if maintenance.compact_date(directory, TABLES[table], min_files=min_files):
                            done.append(directory)
        return done

    def apply_retention(self, keep_days: int, now: datetime, cluster: str | None = None) -> list[Path]:
        """Drop date partitions older than `keep_days` days before `now`'s UTC date."""
        dropped: list[Path] = []
        for name in self._clusters_or(cluster):
            with layout.cluster_lock(self.root, name):
                dropped += maintenance.drop_old_dates(self.root, name, keep_days, changes.utc(now).date())
        return dropped

    def _clusters_or(self, cluster: str | None) -> list[str]:
        return [cluster] if cluster is not None else self.clusters()


def _known(table: str) -> str:
    if table not in TABLES:
        raise ValueError(f"unknown history table {table!r}; one of {', '.join(TABLES)}")
    return table
