"""Partitions that never stopped: what an incremental (cooperative) rebalance keeps running.

Contract
--------
* :func:`undisturbed`: per settled trigger window [t0, t1], long format (unit, tid, key, value):
  ``partitions_at_t0`` (distinct partitions owned by a live member at t0: an ``owned`` interval of
  the fold with start <= t0 < end), ``undisturbed`` (those whose owned interval also lasts past t1:
  never revoked or lost between t0 and t1 and its owner stayed live) and ``undisturbed_gap_ns`` (the
  longest processing gap of the undisturbed partitions inside [t0, t1]: between consecutive records,
  t0 and t1 counting as edges; absent when none is undisturbed).
* :func:`cooperative_fields`: a trigger's ``undisturbed_partitions``, ``undisturbed_fraction``
  (undisturbed / partitions at t0) and ``undisturbed_gap_s`` in the metrics document; None for a
  trigger that did not settle, the fraction None without partitions at t0.

An eager assignor revokes every partition in every round, so 0 there; cooperative-sticky keeps the
partitions it does not move (spec 2.13).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from harness.analysis.facts import Facts
from harness.analysis.frames import INF, NS, UNIT, Frames, unit_id
from harness.kernel.events import SETTLED


def undisturbed(facts: Facts, frames: Frames) -> DataFrame:
    """Per settled trigger window: partitions at t0, undisturbed ones and their longest gap (ns)."""
    w = facts.windows().where(F.col("outcome") == SETTLED).select(*UNIT, "tid", "t0", "t1")
    own = facts.intervals("owned").select(*UNIT, "p", "start", "end")
    at_t0 = own.join(F.broadcast(w), UNIT).where(
        (F.col("start") <= F.col("t0")) & (F.col("end") > F.col("t0"))
    )
    kept = at_t0.where(F.col("end") > F.col("t1")).select(*UNIT, "tid", "p", "t0", "t1").distinct()
    counts = at_t0.groupBy(*UNIT, "tid").agg(
        F.count_distinct("p").cast("double").alias("partitions_at_t0"),
        F.count_distinct(F.when(F.col("end") > F.col("t1"), F.col("p"))).cast("double").alias("undisturbed"),
    )
    rec = frames.hashed.where(~F.col("is_prod")).select("uid", F.col("partition").alias("p"), "ts_ns")
    kept_ids = kept.withColumn("uid", unit_id())
    inside = (
        rec.join(F.broadcast(kept_ids), ["uid", "p"])
        .where((F.col("ts_ns") >= F.col("t0")) & (F.col("ts_ns") <= F.col("t1")))
        .drop("uid")
    )
    edges = kept.select(*UNIT, "tid", "p", F.col("t0").alias("ts_ns")).unionByName(
        kept.select(*UNIT, "tid", "p", F.col("t1").alias("ts_ns"))
    )
    pts = inside.select(*UNIT, "tid", "p", "ts_ns").unionByName(edges)
    order = Window.partitionBy(*UNIT, "tid", "p").orderBy("ts_ns")
    gaps = (
        pts.withColumn("gap", F.col("ts_ns") - F.lag("ts_ns").over(order))
        .groupBy(*UNIT, "tid")
        .agg(F.max("gap").cast("double").alias("undisturbed_gap_ns"))
    )
    wide = counts.join(gaps, [*UNIT, "tid"], "left")
    names = ("partitions_at_t0", "undisturbed", "undisturbed_gap_ns")
    m = F.create_map(*[x for n in names for x in (F.lit(n), F.col(n))])
    return wide.select(*UNIT, "tid", F.explode(m).alias("key", "value")).where(F.col("value").isNotNull())


def cooperative_fields(outcome: str, values: dict[str, float]) -> dict[str, Any]:
    """A trigger's undisturbed-partition figures from its ``outcome`` and :func:`undisturbed` values."""
    if outcome != SETTLED:
        return {"undisturbed_partitions": None, "undisturbed_fraction": None, "undisturbed_gap_s": None}
    n = int(values.get("undisturbed") or 0)
    at_t0 = int(values.get("partitions_at_t0") or 0)
    gap = values.get("undisturbed_gap_ns")
    return {
        "undisturbed_partitions": n,
        "undisturbed_fraction": round(n / at_t0, 6) if at_t0 else None,
        "undisturbed_gap_s": None if gap is None or gap >= INF else round(gap / NS, 6),
    }
