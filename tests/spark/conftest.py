"""One embedded SparkSession for the whole test process (local[2], 4 shuffle partitions, UI off, UTC)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from kafka_health_spark.session import get_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    yield get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g")
