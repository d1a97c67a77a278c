"""PySpark diagnostics over Kafka cluster snapshots (DataFrame API only, no Python UDFs).

The same code runs embedded (`local[*]`), on a Spark cluster, or through Spark Connect:
`session.get_session` → `frames.build_frames` → `runner.run_checks` (and `summary.summarize`).
Each rule lives in `checks/<family>.py`; every limit is in `thresholds.Thresholds`.
"""
