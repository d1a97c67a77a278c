"""Lag in seconds: how long ago the log end was where a group's committed offset is now.

"How far behind is billing, in minutes?" is the first question of a lag incident, and records
behind do not answer it (a thousand records are a second on one topic and a day on another).
Every snapshot samples each group partition's log end offset beside its committed offset, so
the history already holds the log end's path through time. For a group partition with
committed offset C now:

1. lag 0 (C at or past the log end) → 0 s;
2. the newest sample whose log end was at most C, (t1, e1), and the oldest sample after it whose
   log end was past C, (t2, e2): the log end crossed C between them, at
   t* = t1 + (C - e1) / (e2 - e1) * (t2 - t1), read linearly; the lag is now - t*. The answer
   is within one sampling interval of the truth whatever the produce rate does in between, and
   exact for a steady rate;
3. no sample of the window had its log end at or below C: the log end passed C before the
   oldest sample, so the lag is *at least* now - that sample's time, and says so
   (`lag_seconds_lower_bound`); the window (`window_minutes`) bounds what can be known, and
   nothing beyond it is guessed. With no sample before now (a new policy, a new group), the
   lag in seconds is unknown (null), never 0.

Exact (the policy's consumerLag.timeLag, the CLI's `--time-lag exact`): where the collector
fetched the record at the committed offset (`GroupOffset.committed_timestamp`), the lag in
seconds is now minus that record's timestamp, in place of the interpolation, and never a lower
bound. Where it could not be fetched, the interpolation stands.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

KEY = ["group_id", "topic", "partition"]


def _seconds(a: Column, b: Column) -> Column:
    """a - b in seconds (both timestamps), as a double."""
    return (F.unix_micros(a) - F.unix_micros(b)) / F.lit(1e6)


def lag_seconds(samples: DataFrame, current: DataFrame, now: Column, exact: DataFrame) -> DataFrame:
    """KEY, `lag_seconds` and `lag_seconds_lower_bound` for each row of `current` (KEY,
    `committed_offset`, `lag`), from `samples` (KEY, ts, log_end_offset) of the window, or from
    `exact` (KEY, `committed_timestamp`: the snapshot's group offsets) where it has a time."""
    committed = current.select(*KEY, F.col("committed_offset").alias("c"), F.col("lag").alias("lag_now"))
    paths = samples.select(*KEY, "ts", "log_end_offset").join(committed, KEY)
    below = F.col("log_end_offset") <= F.col("c")
    crossing = paths.groupBy(*KEY).agg(
        F.first("lag_now").alias("lag_now"),
        F.first("c").alias("c"),
        F.max(F.when(below, F.struct("ts", "log_end_offset"))).alias("before"),
        F.min(F.when(~below, F.struct("ts", "log_end_offset"))).alias("after"),
        F.min("ts").alias("oldest"),
    )
    before_ts, before_end = F.col("before.ts"), F.col("before.log_end_offset")
    after_ts, after_end = F.col("after.ts"), F.col("after.log_end_offset")
    crossed = F.unix_micros(before_ts) + (F.col("c") - before_end) / (after_end - before_end) * (
        F.unix_micros(after_ts) - F.unix_micros(before_ts)
    )
    fetched = F.col("committed_timestamp").isNotNull()
    seconds = (
        F.when(F.col("lag_now") <= 0, F.lit(0.0))
        .when(fetched, _seconds(now, F.col("committed_timestamp")))
        .when(
            F.col("before").isNotNull() & F.col("after").isNotNull(),
            (F.unix_micros(now) - crossed) / F.lit(1e6),
        )
        # Only the sample of now: nothing is known of the time before it (unknown, not 0 s).
        .when(F.col("before").isNull() & (F.col("oldest") < now), _seconds(now, F.col("oldest")))
    )
    times = exact.select(*KEY, "committed_timestamp").where(F.col("committed_timestamp").isNotNull())
    return crossing.join(times, KEY, "left").select(
        *KEY,
        F.when(seconds.isNotNull(), F.greatest(seconds, F.lit(0.0))).alias("lag_seconds"),
        (~fetched & F.col("before").isNull() & (F.col("lag_now") > 0) & (F.col("oldest") < now)).alias(
            "lag_seconds_lower_bound"
        ),
    )
