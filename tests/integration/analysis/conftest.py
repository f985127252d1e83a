"""One SparkSession for the whole test session (local[2], UI off): starting one costs ~10 s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from harness.analysis.spark import spark_session, stop_spark

    session = spark_session()
    yield session
    stop_spark()
