"""The history of snapshots: Parquet tables partitioned by cluster and date (stage 2 of the flow)."""
