"""Latency family: per trigger window, t0, t1 and the latency's parts, resumed and the consumption gap.

Contract
--------
* :func:`buckets`: records per 100 ms bucket (:data:`GAP_BUCKET_NS`) per unit (n, first, last):
  the base of the gaps and of the rate series (:mod:`.series`). Collected (a row per unit and
  bucket with records).
* :func:`trigger_rows`: one row per trigger window (``t_resumed`` from Spark, the rest in the driver):
  the fold's window
  (:meth:`~harness.analysis.facts.Facts.windows`) with ``t_resumed`` (when every partition 0..P1-1
  had a record processed at or after t1, within the window; None if one got none or the trigger
  did not settle) and ``gap_start`` / ``gap_end`` (the longest pause in consumption overlapping
  [t0, resumed], or [t0, window end) if it never resumed; None if there was none).
* :func:`window_fields`: a trigger's entry in the metrics document up to its latency figures
  (index, key, action, targets, outcome, reason, settled; invoke_s, t0_s, t1_s, window_end_s
  relative to the unit's origin; startup_s, latency_s, detection_s, convergence_s, reaction_s,
  resumed_s, gap_s and gap). Only a settled trigger has a latency, detection, convergence and
  resumed; reaction_s is there whenever something reacted.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from harness.analysis.facts import Facts
from harness.analysis.frames import UNIT, Frames, UnitKey, at_s, collect, dur_s, unit_id, unit_key
from harness.kernel.events import SETTLED

GAP_BUCKET_NS = 100_000_000  # 100 ms buckets for consumption gaps (exact gaps between buckets)


def resumed(facts: Facts, frames: Frames) -> DataFrame:
    """Per settled trigger: t_resumed, when every partition < P1 had a record at or after t1."""
    t = facts.windows().where(F.col("t1").isNotNull()).select(*UNIT, "tid", "t1", "wend", "P1")
    t = t.withColumn("uid", unit_id())
    rec = frames.hashed.where(~F.col("is_prod")).select("uid", "ts_ns", "partition")
    j = rec.join(F.broadcast(t.select("uid", "tid", "t1", "wend", "P1")), "uid").where(
        (F.col("ts_ns") >= F.col("t1"))
        & (F.col("ts_ns") < F.col("wend"))
        & (F.col("partition") < F.col("P1"))
    )
    first = j.groupBy("uid", "tid", "partition", "P1").agg(F.min("ts_ns").alias("first"))
    agg = first.groupBy("uid", "tid", "P1").agg(F.count("*").alias("np"), F.max("first").alias("last_first"))
    agg = agg.join(F.broadcast(t.select("uid", "tid", *UNIT)), ["uid", "tid"])
    return agg.select(
        *UNIT, "tid", F.when(F.col("np") == F.col("P1"), F.col("last_first")).alias("t_resumed")
    )


#: Per unit, its consumption buckets (bucket, n, first, last), by bucket.
Buckets = dict[UnitKey, list[tuple[int, int, int, int]]]


def buckets(frames: Frames) -> Buckets:
    """Records per 100 ms bucket per unit: n, first and last ts (the base of gaps and rates), collected."""
    rec = frames.hashed.where(~F.col("is_prod"))
    per = rec.groupBy("uid", F.floor(F.col("ts_ns") / GAP_BUCKET_NS).alias("bucket")).agg(
        F.count("*").alias("n"), F.min("ts_ns").alias("first"), F.max("ts_ns").alias("last")
    )
    out: Buckets = {}
    for r in per.toArrow().to_pylist():
        k = frames.units_by_id.get(r["uid"])
        if k is not None:
            out.setdefault(k, []).append((r["bucket"], r["n"], r["first"], r["last"]))
    for rows in out.values():
        rows.sort()
    return out


def trigger_gap(unit_buckets: list[tuple[int, int, int, int]], t0: int, end: int) -> tuple[int, int] | None:
    """The longest pause in consumption overlapping [t0, end]: of the pauses between consecutive
    non-empty buckets (a bucket's last record to the next one's first), the longest with its end after
    t0 and its start before ``end``; None if there is none."""
    best: tuple[int, int] | None = None
    for (_, _, _, last), (_, _, first, _) in zip(unit_buckets, unit_buckets[1:], strict=False):
        if first > t0 and last < end and (best is None or first - last > best[1] - best[0]):
            best = (last, first)
    return best


def trigger_rows(facts: Facts, frames: Frames, buckets: Buckets) -> list[dict[str, Any]]:
    """Every trigger window of the run with its resume time and longest gap (see the module contract)."""
    res = {(*unit_key(r), r["tid"]): r["t_resumed"] for r in collect(resumed(facts, frames))}
    out = []
    for r in facts.window_rows():
        k = unit_key(r)
        r["t_resumed"] = res.get((*k, r["tid"]))
        end = r["t_resumed"] if r["t_resumed"] is not None else r["wend"]
        gap = None
        if r["t0"] is not None and end is not None:
            gap = trigger_gap(buckets.get(k, []), r["t0"], end)
        r["gap_start"], r["gap_end"] = gap if gap is not None else (None, None)
        out.append(r)
    return out


def window_fields(r: dict[str, Any], origin: int) -> dict[str, Any]:
    """A trigger's identity, outcome and latency figures from its row of :func:`trigger_rows`."""
    settled = r["outcome"] == SETTLED
    t0, t1, react = r["t0"], r["t1"], r["t_react"]
    return {
        "index": r["tid"],
        "key": f"#{r['tid'] + 1} {r['action']}",
        "action": r["action"],
        "targets": r["targets"] or [],
        "outcome": r["outcome"],
        "reason": r["reason"],
        "settled": settled,
        "invoke_s": at_s(r["invoke"], origin),
        "t0_s": at_s(t0, origin),
        "t1_s": at_s(t1, origin),
        "window_end_s": at_s(r["wend"], origin),
        "startup_s": dur_s(r["invoke"], r["invoke"] + r["startup"]) if r["startup"] is not None else None,
        "latency_s": dur_s(t0, t1) if settled else None,
        "detection_s": dur_s(t0, react) if settled else None,
        "convergence_s": dur_s(react, t1) if settled else None,
        "reaction_s": dur_s(t0, react),
        "resumed_s": dur_s(t0, r["t_resumed"]) if settled else None,
        "gap_s": dur_s(r["gap_start"], r["gap_end"]),
        "gap": [at_s(r["gap_start"], origin), at_s(r["gap_end"], origin)]
        if r["gap_start"] is not None
        else None,
    }
