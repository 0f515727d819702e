"""Fixtures shared by the tests: one local SparkSession for the whole test session (the engine
tests, and the bad files run through every engine)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession (two cores, no UI, four shuffle partitions), stopped at the end.

    Build DataFrames from pyarrow tables or lists of rows (not pandas: pyspark warns about
    pandas 3)."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("calibkit-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def pytest_configure(config: pytest.Config) -> None:
    # pyspark checks the pandas version when it first touches pandas; these tests use none
    config.addinivalue_line(
        "filterwarnings", "ignore:PySpark does not yet fully support pandas:FutureWarning"
    )
