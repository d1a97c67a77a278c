"""The history of snapshots: Parquet tables partitioned by cluster and date (stage 2 of the flow).

`store.HistoryStore` appends a snapshot per cycle (changes + samples), reads windows back,
compacts and applies retention; `schema` is the table contract Spark reads; `changes` holds the
pure per-cycle rules; `layout` the paths and atomic file operations.
"""
