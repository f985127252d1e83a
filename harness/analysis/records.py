"""Records: completeness (produced, processed, lost, not drained) and duplicates, per (partition, offset).

Contract
--------
* :func:`record_keys`: one row per (unit, partition, offset) produced or processed: ``n``
  deliveries, ``produced`` (0/1: acknowledged by the producer), ``last`` and ``first`` delivery ts,
  ``acked`` (the ``produced`` event's ts; the end-to-end latency's, :mod:`.e2e`), ``cross``
  (delivered to two or more members) and ``top`` (the partition's highest processed offset).
* :func:`unit_values`: per unit, long format (unit, key, value): produced; processed (acknowledged
  and processed); lost (acknowledged, never processed, below ``top``: a skip); not_drained
  (acknowledged, never processed, above ``top`` or on a partition with none processed: an
  unconsumed tail); phantom (processed, never acknowledged); duplicates, duplicate_deliveries
  (the extra deliveries) and duplicates_cross_member. :func:`produce_errors`: per unit, the
  producer's errors.
* :func:`phase_values`: duplicates per phase (unit, tid, key, value), each attributed to the phase
  of its last delivery (:func:`harness.analysis.facts.to_phase`).
* :func:`lost_samples`: per unit with lost records, the first :data:`LOST_SAMPLE` of them as
  [partition, offset], by partition then offset (collected only when some unit lost records).
* :func:`records_fields`: the unit's completeness and duplicate counts in the metrics document.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from harness.analysis.control import Control, UnitValues
from harness.analysis.facts import per_phase, to_phase
from harness.analysis.frames import UNIT, Frames, UnitKey, collect, local_frame, long_values, unit_key
from harness.kernel.events import Kind

LOST_SAMPLE = 20


def record_keys(frames: Frames) -> DataFrame:
    """Per (unit, partition, offset) produced or processed: ``n`` deliveries, ``produced`` (0/1),
    ``last`` and ``first`` delivery ts, ``acked`` (the produced event's ts), ``cross`` (members
    differ), ``top``: the partition's highest processed offset (lost is below it, not drained above
    it), and ``uid``, the unit's hash (:func:`.frames.unit_id`).

    The aggregation over every delivery is the analysis's largest. It reads
    :attr:`.frames.Frames.hashed` (the unit and the member as 64-bit hashes: grouping on the unit's
    strings cost it about 40 %, and a string's min and max in the aggregation buffer, to compare the
    processing members, made it a sort of every delivery) and is cached keyed by ``uid``, with no
    string in the cached table (the families that read all its rows, such as the end-to-end latency,
    read ``uid``); the returned frame joins the unit's columns back (:meth:`.frames.Frames.unit_ids`)
    as it is read. ``top`` comes from :attr:`.frames.Frames.sources` (no further pass over the
    deliveries; its rows collected by :func:`.frames.prepare`). The cache is filled by the first action on the
    frame (the caller's ``count()``) and emptied by ``spark.catalog.clearCache()``."""
    table = frames.unit_ids()
    d = frames.hashed
    member = F.when(~F.col("is_prod"), F.col("mid"))  # who processed it, by its name's hash
    # A key has about two deliveries (produced once, processed once), so a partial aggregation
    # before the shuffle halves little and hashes every delivery twice: the deliveries are
    # shuffled by the key first, and Spark then aggregates each key once, after the exchange
    # (``spark.sql.execution.combineAdjacentAggregation``, on by default).
    key = ["uid", "partition", "offset"]
    keyed = (
        d.repartition(frames.wide, *key)
        .groupBy(*key)
        .agg(
            F.sum(F.when(~F.col("is_prod"), 1).otherwise(0)).alias("n"),
            F.max(F.col("is_prod").cast("int")).alias("produced"),
            F.max(F.when(~F.col("is_prod"), F.col("ts_ns"))).alias("last"),
            F.min(F.when(~F.col("is_prod"), F.col("ts_ns"))).alias("first"),
            F.min(F.when(F.col("is_prod"), F.col("ts_ns"))).alias("acked"),
            F.coalesce(F.min(member) != F.max(member), F.lit(False)).alias("cross"),
        )
    )
    # the partition's highest processed offset: from the per-member maxima that filling the
    # deliveries' cache computed (frames.sources, collected), not a window over the keys (a sort of all
    # of them) nor another pass over every delivery; a table of Python rows, so that the cached plan
    # holds no checkpointed RDD (with one, a later job's lookup of the cache recomputed the keys)
    tops: dict[tuple[int, int], int] = {}
    for r in frames.source_rows:
        if not r["is_prod"] and r["top"] is not None:
            k = (r["uid"], r["partition"])
            tops[k] = max(tops.get(k, r["top"]), r["top"])
    top = local_frame(d.sparkSession, [(*k, v) for k, v in tops.items()], "uid long, partition int, top long")
    cached = keyed.join(F.broadcast(top), ["uid", "partition"], "left").cache()
    return cached.join(F.broadcast(table), "uid")


def _acked() -> Column:
    return F.col("produced") == 1


def _seen() -> Column:
    return F.col("n") > 0


def _lost() -> Column:
    return _acked() & ~_seen() & (F.col("offset") < F.col("top"))


def lost_condition() -> Column:
    """A row of :func:`record_keys` that is a lost record (acknowledged, never processed, below
    the partition's highest processed offset): the one definition, also for the migration proof."""
    return _lost()


def _count(cond: Column) -> Column:
    return F.sum(F.when(cond, 1).otherwise(0))


def unit_values(keys: DataFrame, frames: Frames) -> DataFrame:
    """Completeness and duplicate counts per unit, long format (see the module contract); the keys are
    counted by the unit's hash, mapped back by :meth:`.frames.Frames.unit_ids`."""
    acked, seen = _acked(), _seen()
    aggs: list[tuple[str, Column]] = [
        ("produced", F.sum("produced")),
        ("processed", _count(acked & seen)),
        ("lost", _count(_lost())),
        ("not_drained", _count(acked & ~seen & (F.col("top").isNull() | (F.col("offset") > F.col("top"))))),
        ("phantom", _count((F.col("produced") == 0) & seen)),
        ("duplicates", _count(F.col("n") > 1)),
        ("duplicate_deliveries", F.sum(F.when(F.col("n") > 1, F.col("n") - 1).otherwise(0))),
        ("duplicates_cross_member", _count((F.col("n") > 1) & F.col("cross"))),
    ]
    by_uid = keys.groupBy("uid").agg(*(a.alias(n) for n, a in aggs))
    counted = by_uid.join(F.broadcast(frames.unit_ids()), "uid")
    return long_values(counted, UNIT, [n for n, _ in aggs])


def produce_errors(control: Control) -> UnitValues:
    """Per unit, ``produce_errors``: the producer's ``produce_error`` events (from the collected control
    events)."""
    return {
        k: {"produce_errors": float(sum(1 for e in rows if e["kind"] == Kind.PRODUCE_ERROR))}
        for k, rows in control.rows().items()
    }


def phase_values(keys: DataFrame, phases: DataFrame) -> DataFrame:
    """Duplicates per phase (unit, tid, ``duplicates``, count), by the phase of the last delivery."""
    return per_phase(to_phase(keys.where(F.col("n") > 1), phases, "last"), "duplicates", F.count("*"))


def lost_samples(
    keys: DataFrame, per_unit: dict[UnitKey, dict[str, float]]
) -> dict[UnitKey, list[list[int]]]:
    """The first lost records of each unit (see the module contract); no Spark job without any."""
    out: dict[UnitKey, list[list[int]]] = {}
    if not any(v.get("lost") for v in per_unit.values()):
        return out
    ranked = keys.where(_lost()).withColumn(
        "rn", F.row_number().over(Window.partitionBy(*UNIT).orderBy("partition", "offset"))
    )
    for r in collect(ranked.where(F.col("rn") <= LOST_SAMPLE)):
        out.setdefault(unit_key(r), []).append([r["partition"], r["offset"]])
    return out


def records_fields(pu: dict[str, float], lost_sample: list[list[int]]) -> dict[str, Any]:
    """A unit's completeness and duplicate counts from its values ``pu`` (0 when absent)."""

    def iv(name: str) -> int:
        return int(pu.get(name) or 0)

    return {
        "produced": iv("produced"),
        "processed": iv("processed"),
        "lost": iv("lost"),
        "lost_sample": lost_sample,
        "not_drained": iv("not_drained"),
        "processed_not_produced": iv("phantom"),
        "produce_errors": iv("produce_errors"),
        "duplicates": iv("duplicates"),
        "duplicate_deliveries": iv("duplicate_deliveries"),
        "duplicates_cross_member": iv("duplicates_cross_member"),
    }
