"""PySpark diagnostics over Kafka cluster snapshots (DataFrame API only, no Python UDFs)."""
