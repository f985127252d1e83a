"""The one place herdlab makes a SparkSession.

Contract
--------
:func:`spark_session` returns the process's SparkSession, creating it on first use: local mode on
two cores (``local[2]``) unless ``master`` names a cluster (``spark://host:7077``, ``yarn``, ...),
the web UI and console progress bars off, UTC session time zone, Spark's own logging at ERROR,
and adaptive query execution off: the jobs run many small stages, where AQE's re-planning costs
more than it saves (measured: 3-4x slower on a small history). The number of shuffle partitions is
set per analysis from the history's size (:func:`shuffle_partitions_for`). Calling it again
returns the same session (Spark allows one per JVM); a different ``master`` than the running
session's raises :class:`~harness.kernel.errors.ConfigError` rather than silently using the wrong cluster. :func:`stop_spark` stops it (tests and the bench use it).

Settings that only take effect when the JVM starts (``driver_memory``) are ignored once a session
runs.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from harness.kernel.errors import ConfigError, EnvironmentProblem

log = logging.getLogger("harness.analysis.spark")

DEFAULT_MASTER = "local[2]"


def spark_session(
    master: str | None = None,
    *,
    driver_memory: str | None = None,
    shuffle_partitions: int = 4,
    app_name: str = "herdlab-analysis",
) -> Any:
    """The SparkSession for herdlab's analysis (see the module contract)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - pyspark is a dependency
        raise EnvironmentProblem(f"pyspark is not importable: {e}") from None

    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and master != running:
            raise ConfigError(
                f"a Spark session on {running} is already running in this process; cannot switch to {master}"
            )
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors use this interpreter
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", "-XX:+UseG1GC")
    )
    if (master or DEFAULT_MASTER).startswith("local"):
        # Local mode talks only to itself: keep the driver on loopback (herdlab sends no traffic
        # beyond 127.0.0.0/8). A remote --spark-master needs a driver address its executors reach.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    if driver_memory:
        builder = builder.config("spark.driver.memory", driver_memory)
    try:
        session = builder.getOrCreate()
    except Exception as e:  # the JVM did not start: Java missing, bad master URL, ...
        raise EnvironmentProblem(
            f"could not start Spark ({master or DEFAULT_MASTER}): {e}".splitlines()[0]
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    log.info("Spark %s on %s", session.version, session.sparkContext.master)
    return session


def shuffle_partitions_for(rows: int, cores: int = 2) -> int:
    """Shuffle partitions for a history of ``rows`` events: 1 below a million (task overhead
    dominates), then one per ~2.5 million rows, at least ``cores`` and at most 4 x ``cores``."""
    if rows < 1_000_000:
        return 1
    return max(cores, min(4 * cores, rows // 2_500_000 + 1))


def stop_spark() -> None:
    """Stop the process's SparkSession if one runs (idempotent)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
