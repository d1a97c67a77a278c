"""HistoryStore on a temporary directory: appends, reads, restarts, retention, compaction."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from kafka_health.history import layout
from kafka_health.history.schema import TABLES
from kafka_health.history.store import HistoryStore
from kafka_health.models.snapshot import Missing

from .synthetic import T0, healthy, snapshot

SECOND = timedelta(seconds=30)


def _files(root: Path, table: str) -> list[Path]:
    return sorted(p for p in (root / table).rglob("*.parquet"))


def test_append_records_changes_only_and_reads_them_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    state = healthy()
    first = store.append(snapshot(T0, state))
    assert first.full_state and first.rows["partition_state"] == len(state)

    assert store.append(snapshot(T0 + SECOND, state)).rows["partition_state"] == 0
    shrunk = dict(state)
    shrunk[("orders", 1)] = (1, [1, 2, 0], [1, 2])
    third = store.append(snapshot(T0 + 2 * SECOND, shrunk))
    assert third.rows["partition_state"] == 1 and not third.full_state

    rows = store.read("partition_state", "prod", since=T0 + SECOND).to_pylist()
    assert [(r["topic"], r["partition"], r["isr"]) for r in rows] == [("orders", 1, [1, 2])]
    # Samples are written every cycle.
    assert store.read("broker_samples", "prod").num_rows == 3 * 3
    assert store.read("group_samples", "prod").column("ts").to_pylist() == [T0, T0 + SECOND, T0 + 2 * SECOND]
    latest = store.latest("prod")
    assert latest is not None and latest.taken_at == T0 + 2 * SECOND
    assert latest.partitions == snapshot(T0 + 2 * SECOND, shrunk).partitions


def test_read_window_is_half_open_and_schema_typed_when_empty(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    for i in range(3):
        store.append(snapshot(T0 + i * SECOND))
    window = store.read("group_samples", "prod", since=T0 + SECOND, until=T0 + 2 * SECOND)
    assert window.column("ts").to_pylist() == [T0 + SECOND]
    empty = store.read("partition_removed", "prod")
    assert empty.num_rows == 0 and empty.schema == TABLES["partition_removed"]
    assert store.read("broker_samples", "other-cluster").num_rows == 0
    with pytest.raises(ValueError, match="unknown history table"):
        store.read("nope", "prod")


def test_duplicate_or_older_snapshot_is_skipped(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    store.append(snapshot(T0 + SECOND))
    again = store.append(snapshot(T0 + SECOND))
    older = store.append(snapshot(T0))
    assert again.skipped and older.skipped
    assert store.read("broker_samples", "prod").num_rows == 3


def test_restarted_store_continues_from_the_saved_baseline(tmp_path: Path) -> None:
    HistoryStore(tmp_path).append(snapshot(T0))
    restarted = HistoryStore(tmp_path)
    result = restarted.append(snapshot(T0 + SECOND))
    assert not result.full_state and result.rows["partition_state"] == 0
    assert restarted.append(snapshot(T0 + SECOND)).skipped  # remembers the last appended snapshot


def test_outage_writes_no_partition_rows_and_keeps_the_baseline(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    store.append(snapshot(T0))
    down = store.append(snapshot(T0 + SECOND, missing=[Missing(part="metadata", reason="timed out")]))
    assert down.rows.get("partition_state") is None and down.rows["broker_samples"] == 0
    latest = store.latest("prod")
    assert latest is not None and not latest.reachable  # latest is honest about the outage
    back = store.append(snapshot(T0 + 2 * SECOND))
    assert back.rows["partition_state"] == 0  # compared with the state before the outage


def test_append_never_reads_older_history(tmp_path: Path) -> None:
    """Cost of a cycle ∝ changes + samples: corrupt every older file and appending still works."""
    store = HistoryStore(tmp_path)
    for i in range(5):
        store.append(snapshot(T0 + i * SECOND))
    for table in TABLES:
        for f in _files(tmp_path, table):
            f.write_bytes(b"not parquet")
    before = {t: len(_files(tmp_path, t)) for t in TABLES}
    result = store.append(snapshot(T0 + 10 * SECOND))
    assert result.skipped is None
    after = {t: len(_files(tmp_path, t)) for t in TABLES}
    assert after["broker_samples"] == before["broker_samples"] + 1
    assert after["partition_state"] == before["partition_state"]  # nothing changed


def test_deleted_topic_goes_to_partition_removed(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    store.append(snapshot(T0))
    store.append(snapshot(T0 + SECOND, {k: v for k, v in healthy().items() if k[0] != "payments"}))
    removed = store.read("partition_removed", "prod").to_pylist()
    assert [(r["topic"], r["partition"]) for r in removed] == [("payments", 0), ("payments", 1)]


def test_cluster_names_are_escaped_in_paths_and_decoded_by_hive_readers(tmp_path: Path) -> None:
    name = "kafka-1:9092,kafka-2:9092/a=b"
    store = HistoryStore(tmp_path)
    store.append(snapshot(T0, cluster=name))
    directory = layout.cluster_dir(tmp_path, "broker_samples", name)
    assert directory.name == "cluster=kafka-1%3A9092,kafka-2%3A9092%2Fa%3Db"
    assert store.clusters() == [name]
    assert store.read("broker_samples", name).num_rows == 3
    # What Spark does: read the table directory with Hive partitioning.
    table = ds.dataset(store.table_path("broker_samples"), format="parquet", partitioning="hive").to_table()
    assert set(table.column("cluster").to_pylist()) == {name}
    assert set(table.column("date").to_pylist()) == {T0.date().isoformat()}


def test_retention_drops_whole_old_dates_only(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    for day in range(5):
        store.append(snapshot(T0 + timedelta(days=day)))
    now = T0 + timedelta(days=4, hours=1)
    dropped = store.apply_retention(keep_days=2, now=now)
    assert {p.name for p in dropped} == {f"date={(T0 + timedelta(days=d)).date()}" for d in (0, 1)}
    assert store.dates("prod") == [(T0 + timedelta(days=d)).date() for d in (2, 3, 4)]
    assert store.read("broker_samples", "prod").num_rows == 3 * 3
    assert store.latest("prod") is not None  # latest/ is never subject to retention
    assert store.apply_retention(keep_days=2, now=now) == []


def test_compaction_merges_a_dates_files_into_one_without_changing_the_rows(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    state = healthy()
    for i in range(6):
        if i % 2:
            state[("orders", 0)] = (state[("orders", 0)][0], [0, 1, 2], [0, 1] if i % 4 == 1 else [0, 1, 2])
        store.append(snapshot(T0 + i * SECOND, state))
    store.append(snapshot(T0 + timedelta(days=1)))
    before = {t: store.read(t, "prod") for t in TABLES}
    files_before = len(_files(tmp_path, "broker_samples"))
    assert files_before == 7

    compacted = store.compact("prod")
    day0 = layout.date_dir(tmp_path, "broker_samples", "prod", T0.date())
    assert day0 in compacted
    assert len(layout.data_files(day0)) == 1
    for table, rows in before.items():
        assert store.read(table, "prod").equals(rows), table
    assert not [p for p in day0.parent.iterdir() if p.name.startswith(".")]  # no staging left behind
    assert store.compact("prod") == []  # nothing left to merge

    store.append(snapshot(T0 + timedelta(days=1) + SECOND))  # appending goes on after compaction
    day1 = layout.date_dir(tmp_path, "broker_samples", "prod", (T0 + timedelta(days=1)).date())
    assert len(layout.data_files(day1)) == 2
    assert store.read("broker_samples", "prod").num_rows == before["broker_samples"].num_rows + 3


def test_readers_ignore_in_flight_temporaries(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    store.append(snapshot(T0))
    day = layout.date_dir(tmp_path, "broker_samples", "prod", T0.date())
    (day / f"{layout.TMP_PREFIX}half-written.parquet").write_bytes(b"partial")
    assert store.read("broker_samples", "prod").num_rows == 3
    table = ds.dataset(store.table_path("broker_samples"), format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 3


def test_swap_dirs_exchanges_contents(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "old").write_text("a")
    (b / "new").write_text("b")
    layout.swap_dirs(a, b)
    assert [p.name for p in a.iterdir()] == ["new"]
    assert [p.name for p in b.iterdir()] == ["old"]


def test_escape_round_trips() -> None:
    for name in ["prod", "host:9092,other:9092", "weird/%=name", "ünïcode"]:
        assert layout.unescape(layout.escape(name)) == name
    with pytest.raises(ValueError):
        layout.escape("")


def test_written_files_have_exactly_the_contract_schema(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path)
    store.append(snapshot(T0))
    store.append(snapshot(T0 + SECOND, {k: v for k, v in healthy().items() if k[0] != "payments"}))
    store.append(snapshot(T0 + 2 * SECOND, {**healthy(), ("orders", 0): (0, [0, 1, 2], [0, 1])}))
    for table, schema in TABLES.items():
        files = _files(tmp_path, table)
        assert files, table
        for f in files:
            assert pa.parquet.read_schema(f).remove_metadata() == schema, f


def test_compaction_racing_appends_loses_nothing(tmp_path: Path) -> None:
    """Appends and compaction of the same date serialise on the cluster lock."""
    import threading

    store = HistoryStore(tmp_path)
    appended = 40
    done = threading.Event()

    def compact_until_done() -> None:
        compactor = HistoryStore(tmp_path)  # another instance, as another process would be
        while not done.is_set():
            compactor.compact("prod")

    worker = threading.Thread(target=compact_until_done)
    worker.start()
    try:
        for i in range(appended):
            store.append(snapshot(T0 + i * SECOND))
    finally:
        done.set()
        worker.join()
    assert store.read("group_samples", "prod").num_rows == appended
