"""The diagnosis's computation in DuckDB SQL: the bench's single-process baseline.

Same inputs (the snapshot as the Arrow tables of `kafka_health_spark.tables`, the same Parquet
history and windows), same rules as `kafka_health_spark.checks`, so the bench compares engines
on one workload. It returns the number of findings per check, which the bench checks against
Spark's, so a faster baseline that computed something else would be caught.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb

from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health_spark import tables
from kafka_health_spark.thresholds import Thresholds


def _history(root: str, table: str, cluster: str, since: datetime, until: datetime) -> str:
    return f"""(
        SELECT * EXCLUDE (cluster, date) FROM read_parquet('{root}/{table}/*/*/*.parquet',
            hive_partitioning = true, hive_types = {{'cluster': VARCHAR, 'date': VARCHAR}})
        WHERE cluster = '{cluster}' AND date BETWEEN '{since.date()}' AND '{until.date()}'
          AND ts >= TIMESTAMPTZ '{since.isoformat()}' AND ts < TIMESTAMPTZ '{until.isoformat()}')"""


def diagnose(
    con: duckdb.DuckDBPyConnection, snapshot: ClusterSnapshot, root: str, t: Thresholds
) -> dict[str, int]:
    """Findings per check (before any cap) for `snapshot` and the history under `root`."""
    now = tables.utc(snapshot.taken_at)
    for name, table in tables.snapshot_tables(snapshot).items():
        con.register(name, table)
    cl = snapshot.cluster
    recent = now - timedelta(minutes=t.window_minutes)
    ts_now = f"TIMESTAMPTZ '{now.isoformat()}'"
    sql = f"""
    CREATE OR REPLACE TEMP VIEW alive AS SELECT broker FROM brokers WHERE alive;
    CREATE OR REPLACE TEMP VIEW pstate AS
      SELECT p.*, len(replicas) AS rf, len(isr) AS isr_size, c.min_insync_replicas AS min_isr,
             coalesce(p.leader IN (SELECT broker FROM alive), false) AS leader_live
      FROM partitions p LEFT JOIN topic_configs c USING (topic);

    CREATE OR REPLACE TEMP VIEW cur_group_offsets AS
      SELECT {ts_now} AS ts, g.group_id, g.topic, g.partition, g.committed_offset, o.log_start_offset, o.log_end_offset
      FROM group_offsets g LEFT JOIN offsets o USING (topic, partition);
    CREATE OR REPLACE TEMP VIEW cur_groups AS
      SELECT {ts_now} AS ts, group_id, state, members, member_hash FROM groups;
    CREATE OR REPLACE TEMP VIEW cur_brokers AS
      SELECT {ts_now} AS ts, b.broker, b.alive, d.used_bytes, d.total_bytes
      FROM brokers b LEFT JOIN (
        SELECT broker, sum(used_bytes) AS used_bytes,
               CASE WHEN count(total_bytes) = count(*) THEN sum(total_bytes) END AS total_bytes
        FROM log_dirs GROUP BY broker) d USING (broker);

    CREATE OR REPLACE TEMP VIEW win_pstate_hist AS
      SELECT * FROM {_history(root, "partition_state", cl, recent, now)};
    CREATE OR REPLACE TEMP VIEW ps AS
      SELECT * FROM (
        SELECT arg_max(ts, ts) AS ts, topic, partition, arg_max(leader, ts) AS leader,
               arg_max(replicas, ts) AS replicas, arg_max(isr, ts) AS isr
        FROM {_history(root, "partition_state", cl, recent - timedelta(days=1), recent)}
        WHERE (topic, partition) IN (SELECT DISTINCT topic, partition FROM win_pstate_hist)
        GROUP BY topic, partition)
      UNION ALL BY NAME SELECT * FROM win_pstate_hist
      UNION ALL BY NAME SELECT {ts_now} AS ts, topic, partition, leader, replicas, isr FROM partitions;
    CREATE OR REPLACE TEMP VIEW transitions AS
      SELECT *, lag(leader) OVER w AS prev_leader, lag(isr) OVER w AS prev_isr, row_number() OVER w AS seq
      FROM ps WINDOW w AS (PARTITION BY topic, partition ORDER BY ts);

    CREATE OR REPLACE TEMP VIEW gos AS
      SELECT * FROM {_history(root, "group_offset_samples", cl, recent, now)}
      UNION ALL BY NAME SELECT * FROM cur_group_offsets;
    CREATE OR REPLACE TEMP VIEW gs AS
      SELECT * FROM {_history(root, "group_samples", cl, recent, now)}
      UNION ALL BY NAME SELECT * FROM cur_groups;
    CREATE OR REPLACE TEMP VIEW activity AS
      SELECT * FROM {_history(root, "group_samples", cl, now - timedelta(hours=t.offsets_retention_hours), now)}
      UNION ALL BY NAME SELECT * FROM cur_groups;
    CREATE OR REPLACE TEMP VIEW bs AS
      SELECT * FROM {_history(root, "broker_samples", cl, now - timedelta(hours=t.disk_growth_window_hours), now)}
      UNION ALL BY NAME SELECT * FROM cur_brokers;

    CREATE OR REPLACE TEMP VIEW lag_status AS
      WITH s AS (
        SELECT *, log_end_offset - committed_offset AS lag,
               row_number() OVER (PARTITION BY group_id, topic, partition ORDER BY ts DESC) AS age
        FROM gos WHERE committed_offset IS NOT NULL AND log_end_offset IS NOT NULL),
      r AS (
        SELECT *, lag(committed_offset) OVER w AS prev_c, lag(lag) OVER w AS prev_lag
        FROM s WHERE age <= {t.lag_window_samples}
        WINDOW w AS (PARTITION BY group_id, topic, partition ORDER BY ts)),
      a AS (
        SELECT group_id, topic, partition, count(*) AS samples, max(ts) AS last_ts, arg_max(lag, ts) AS lag,
               arg_max(committed_offset, ts) AS committed_offset, arg_max(log_end_offset, ts) AS log_end_offset,
               min(lag) AS min_lag, sum((committed_offset < prev_c)::INT) AS rewinds,
               min(committed_offset) AS min_c, max(committed_offset) AS max_c,
               sum((lag < prev_lag)::INT) AS decreases
        FROM r GROUP BY ALL),
      b AS (
        SELECT a.*, g.members, o.last_stable_offset,
          CASE WHEN o.last_stable_offset IS NOT NULL THEN greatest(o.last_stable_offset - a.committed_offset, 0) END AS stable_lag,
          (a.committed_offset = o.last_stable_offset AND o.last_stable_offset < a.log_end_offset) AS held,
          CASE WHEN samples < {t.lag_min_samples} THEN (CASE WHEN lag >= {t.lag_warn_messages} THEN 'WARN' ELSE 'OK' END)
               WHEN lag <= 0 OR min_lag <= 0 THEN 'OK'
               WHEN rewinds > 0 THEN 'REWIND'
               WHEN min_c = max_c THEN (CASE WHEN coalesce(g.members, 0) > 0 THEN 'STALL' ELSE 'STOP' END)
               WHEN decreases = 0 THEN 'WARN'
               ELSE 'OK' END AS burrow
        FROM a LEFT JOIN groups g USING (group_id) LEFT JOIN offsets o USING (topic, partition)
        WHERE last_ts = {ts_now})
      SELECT * EXCLUDE (burrow, held),
        CASE WHEN burrow IN ('OK', 'WARN') AND lag >= {t.lag_critical_messages} THEN 'CRITICAL_LAG'
             WHEN burrow = 'STALL' AND coalesce(held, false) THEN 'BLOCKED'
             ELSE burrow END AS status
      FROM b;

    CREATE OR REPLACE TEMP VIEW disk_now AS
      SELECT broker, used_bytes, total_bytes,
             coalesce((total_bytes - usable_bytes) * 100.0 / total_bytes, used_bytes * 100.0 / total_bytes) AS percent,
             coalesce(usable_bytes, total_bytes - used_bytes) AS free_bytes
      FROM (SELECT broker, sum(used_bytes) AS used_bytes,
                   CASE WHEN count(total_bytes) = count(*) THEN sum(total_bytes) END AS total_bytes,
                   CASE WHEN count(usable_bytes) = count(*) THEN sum(usable_bytes) END AS usable_bytes
            FROM log_dirs WHERE error IS NULL OR upper(error) = 'NONE' GROUP BY broker)
      WHERE total_bytes > 0;

    CREATE OR REPLACE TEMP VIEW topics_rf AS
      SELECT topic, max(len(replicas)) AS rf, c.min_insync_replicas AS min_isr, c.unclean_leader_election_enable AS unclean
      FROM partitions LEFT JOIN topic_configs c USING (topic) GROUP BY topic, c.min_insync_replicas, c.unclean_leader_election_enable;
    """
    con.execute(sql)
    checks = {
        "offline_partition": "SELECT count(*) FROM pstate WHERE NOT leader_live",
        "under_replicated": "SELECT count(*) FROM pstate WHERE isr_size < rf",
        "under_min_isr": "SELECT count(*) FROM pstate WHERE leader IS NULL OR (min_isr IS NOT NULL AND isr_size < min_isr)",
        "at_min_isr": "SELECT count(*) FROM pstate WHERE min_isr IS NOT NULL AND isr_size = min_isr",
        "leader_imbalance": f"""
            SELECT count(*) FROM (
              SELECT replicas[1] AS broker, count(*) AS n, sum((leader <> replicas[1])::INT) AS notp
              FROM partitions WHERE leader IS NOT NULL AND len(replicas) > 0 GROUP BY 1)
            WHERE broker IN (SELECT broker FROM alive) AND notp / n > {t.leader_imbalance_ratio}""",
        "leader_skew": f"""
            WITH c AS (
              SELECT a.broker, coalesce(l.n, 0) AS leaders FROM alive a
              LEFT JOIN (SELECT leader AS broker, count(*) AS n FROM partitions WHERE leader IS NOT NULL GROUP BY 1) l
              USING (broker))
            SELECT count(*) FROM (SELECT max(leaders) - min(leaders) AS spread, avg(leaders) AS mean FROM c)
            WHERE spread > greatest({t.leader_skew_min_partitions}, mean * {t.leader_skew_ratio})""",
        "leader_flapping": f"""
            SELECT count(*) FROM (
              SELECT topic, partition FROM transitions
              WHERE seq > 1 AND leader IS DISTINCT FROM prev_leader GROUP BY ALL
              HAVING count(*) >= {t.leader_flapping_changes})""",
        "isr_churn": f"""
            SELECT count(*) FROM (
              SELECT broker FROM (
                SELECT ts, replicas, unnest(list_filter(prev_isr, lambda x: NOT list_contains(isr, x))) AS broker
                FROM transitions WHERE seq > 1)
              WHERE list_contains(replicas, broker) GROUP BY broker
              HAVING count(DISTINCT ts) >= {t.isr_churn_episodes})""",
        "consumer_lag": """
            SELECT (SELECT count(*) FROM lag_status WHERE status <> 'OK')
                 + (SELECT count(DISTINCT group_id) FROM lag_status WHERE status <> 'OK')""",
        "offset_out_of_range": """
            SELECT count(*) FROM group_offsets g JOIN offsets o USING (topic, partition)
            WHERE g.committed_offset < o.log_start_offset OR g.committed_offset > o.log_end_offset""",
        "offset_expiry": f"""
            WITH e AS (
              SELECT DISTINCT g.group_id FROM groups g JOIN group_offsets o USING (group_id)
              WHERE g.state = 'Empty' AND o.committed_offset IS NOT NULL),
            act AS (
              SELECT group_id, max(CASE WHEN state NOT IN ('Empty', 'Dead') THEN ts END) AS last_active,
                     min(ts) AS first_seen FROM activity GROUP BY group_id)
            SELECT count(*) FROM e LEFT JOIN act USING (group_id)
            WHERE {t.offsets_retention_hours}
                  - epoch({ts_now} - coalesce(last_active, first_seen, {ts_now})) / 3600.0
                  <= {t.offset_expiry_warn_hours}""",
        "rebalance_storm": f"""
            SELECT count(*) FROM (
              SELECT group_id, count(*) AS n,
                     sum((state IN ('PreparingRebalance', 'CompletingRebalance')
                          OR (prev_hash IS NOT NULL AND member_hash <> prev_hash))::INT) AS r
              FROM (SELECT *, lag(member_hash) OVER (PARTITION BY group_id ORDER BY ts) AS prev_hash FROM gs)
              GROUP BY group_id)
            WHERE group_id IN (SELECT group_id FROM groups)
              AND r >= {t.rebalance_storm_samples} AND r / n >= {t.rebalance_storm_fraction}""",
        "disk_usage": f"SELECT count(*) FROM disk_now WHERE percent >= {t.disk_warn_percent}",
        "disk_time_to_full": f"""
            SELECT count(*) FROM disk_now d JOIN (
              SELECT broker, regr_slope(used_bytes::DOUBLE, epoch(ts - {ts_now})) AS slope, count(*) AS n
              FROM bs WHERE used_bytes IS NOT NULL GROUP BY broker) g USING (broker)
            WHERE n >= {t.disk_min_samples} AND slope > 0
              AND greatest(free_bytes, 0) / slope / 3600 <= {t.disk_full_warn_hours}""",
        "log_dir_error": "SELECT count(*) FROM log_dirs WHERE error IS NOT NULL AND trim(error) <> '' AND upper(error) <> 'NONE'",
        "low_replication_factor": f"SELECT count(*) FROM topics_rf WHERE rf < {t.min_replication_factor}",
        "low_min_isr": f"SELECT count(*) FROM topics_rf WHERE min_isr < {t.min_insync_replicas} AND rf > min_isr",
        "min_isr_too_high": "SELECT count(*) FROM topics_rf WHERE min_isr >= rf",
        "unclean_leader_election": "SELECT count(*) FROM topics_rf WHERE unclean",
        "quorum_no_leader": "SELECT count(*) FROM quorum WHERE leader_id IS NULL",
        "quorum_voter_lagging": f"""
            SELECT count(*) FROM quorum_voters v, quorum q
            WHERE NOT v.observer AND v.voter IS DISTINCT FROM q.leader_id AND (
              v.log_end_offset IS NULL OR v.last_caught_up_ms IS NULL OR v.lag > {t.quorum_lag_records}
              OR (epoch_ms({ts_now}) - v.last_caught_up_ms) / 1000.0 > {t.quorum_caught_up_seconds})""",
        "quorum_observer_lagging": f"""
            SELECT count(*) FROM quorum_voters v JOIN brokers b ON b.broker = v.voter AND b.alive
            WHERE v.observer AND (v.lag > {t.quorum_lag_records}
              OR (epoch_ms({ts_now}) - v.last_caught_up_ms) / 1000.0 > {t.quorum_caught_up_seconds})""",
        "broker_missing": f"""
            SELECT count(*) FROM (
              SELECT unnest(replicas) AS broker FROM partitions
              UNION SELECT broker FROM bs WHERE ts < {ts_now}
              UNION SELECT broker FROM brokers WHERE NOT alive)
            WHERE broker NOT IN (SELECT broker FROM alive)""",
    }
    out = {}
    for check, query in checks.items():
        rows = con.execute(query).fetchall()
        out[check] = int(rows[0][0]) if rows else 0
    return {k: v for k, v in out.items() if v}
