"""The process's one SparkSession (the same one tests/spark uses: get_session returns it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from kafka_health_spark.session import get_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    yield get_session(master="local[2]", shuffle_partitions=4, driver_memory="1g")
