"""Tags on a diagnosis's Spark jobs, so that a diagnosis past its deadline can be cancelled.

Spark keeps operation tags per thread (Spark Classic and Spark Connect alike), and a diagnosis
runs its jobs from several threads (its caller's, the check threads, the summary's). `tagged`
tags the calling thread's jobs; `carry` wraps a function so that the thread running it tags its
jobs the same way; `cancel` interrupts every job carrying the tag, in whichever thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from pyspark.sql import SparkSession

from kafka_health_spark.session import bind_to_thread, is_connect

T = TypeVar("T")

_current = threading.local()


def current_tag() -> str | None:
    """The tag this thread's jobs carry (innermost `tagged`), if any."""
    return getattr(_current, "tag", None)


@contextmanager
def tagged(spark: SparkSession, tag: str | None) -> Iterator[None]:
    """Within the block, `spark` is this thread's active session (`session.bind_to_thread`) and
    every Spark job this thread starts carries `tag` (None: no tag).

    The tag is removed on the way out: asyncio runs blocking work in pooled threads, and a tag
    left behind would ride on the next, unrelated diagnosis."""
    bind_to_thread(spark)
    if tag is None:
        yield
        return
    previous = current_tag()
    _add(spark, tag)
    _current.tag = tag
    try:
        yield
    finally:
        _current.tag = previous
        if tag != previous:
            _remove(spark, tag)


def carry(spark: SparkSession, fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, to be run in another thread with `spark` active there (`session.bind_to_thread`)
    and its jobs carrying this thread's tag."""
    tag = current_tag()

    def run(*args: object, **kwargs: object) -> T:
        with tagged(spark, tag):  # (which binds the session, tag or not)
            return fn(*args, **kwargs)

    return run


def cancel(spark: SparkSession, tag: str) -> None:
    """Cancel every running job carrying `tag`, whichever thread started it: the action waiting
    on it raises."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobsWithTag(tag)


# Spark Classic tags jobs through the SparkContext: `SparkSession.interruptTag` there only finds
# tags the calling thread added itself. Spark Connect has no SparkContext; its session tags are
# interrupted by the server, whichever client thread added them.
def _add(spark: SparkSession, tag: str) -> None:
    if is_connect(spark):
        spark.addTag(tag)
    else:
        spark.sparkContext.addJobTag(tag)


def _remove(spark: SparkSession, tag: str) -> None:
    if is_connect(spark):
        spark.removeTag(tag)
    else:
        spark.sparkContext.removeJobTag(tag)
