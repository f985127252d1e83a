"""Steady-state traffic: per unit, from ``stable`` to ``settling_end``, as a rate per second.

Contract
--------
* :func:`unit_values`: per unit, long format (unit, key, value): ``steady_window_ns`` (settling_end,
  else the unit's last event, minus stable), ``zk_commits`` (legacy members' offset writes to
  ZooKeeper in that window) and ``broker:<api>`` (the broker's counter reports in that window of
  every API that is not a coordination API: Heartbeat, OffsetCommit, Fetch, Produce ...).
* :func:`steady_fields`: the unit's ``steady`` entry in the metrics document: ``window_s`` and the
  rates ``zk_commits_per_s`` (None without a window) and ``broker_per_s`` (by API).

Steady-state traffic is never part of the herd (:mod:`.herd`).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.analysis.facts import Facts
from harness.analysis.frames import UNIT, Frames, role_col, zk_steady_col
from harness.kernel.events import COORDINATION_APIS, Kind, Role


def unit_values(facts: Facts, frames: Frames) -> DataFrame:
    """The steady phase's length and traffic per unit (see the module contract)."""
    cm = frames.control.join(F.broadcast(facts.steady_marks()), UNIT, "left")
    in_run = (F.col("ts_ns") >= F.col("stable")) & (F.col("ts_ns") < F.col("send"))
    member, broker, kind = role_col(Role.MEMBER), role_col(Role.BROKER), F.col("kind")
    steady_broker = (
        cm.where(broker & (kind == Kind.BROKER_REQUEST) & in_run)
        .select(*UNIT, F.explode("requests").alias("api", "n"))
        .where(~F.col("api").isin(*COORDINATION_APIS))
        .groupBy(*UNIT, "api")
        .agg(F.sum("n").alias("value"))
        .select(*UNIT, F.concat(F.lit("broker:"), F.col("api")).alias("key"), F.col("value").cast("double"))
    )
    simple = cm.groupBy(*UNIT).agg(
        F.sum(
            F.when(
                member & (kind == Kind.ZK_REQUEST) & zk_steady_col() & in_run,
                F.coalesce(F.col("count"), F.lit(1)),  # a simulated zk_request stands for `count` (events.py)
            ).otherwise(0)
        )
        .cast("double")
        .alias("zk_commits"),
        (F.max("send") - F.max("stable")).cast("double").alias("steady_window_ns"),
    )
    m = F.create_map(*[x for col in ("zk_commits", "steady_window_ns") for x in (F.lit(col), F.col(col))])
    return simple.select(*UNIT, F.explode(m).alias("key", "value")).unionByName(steady_broker)


def steady_fields(pu: dict[str, float]) -> dict[str, Any]:
    """The ``steady`` entry of a unit from its values ``pu`` (see :func:`unit_values`)."""
    window_ns = pu.get("steady_window_ns") or 0.0
    per_s = 1e9 / window_ns if window_ns > 0 else None
    return {
        "window_s": round(window_ns / 1e9, 3),
        "zk_commits_per_s": round(pu.get("zk_commits", 0.0) * per_s, 3) if per_s else None,
        "broker_per_s": {
            key.split(":", 1)[1]: round(v * per_s, 3)
            for key, v in sorted(pu.items())
            if key.startswith("broker:") and per_s
        },
    }
