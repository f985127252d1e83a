"""Split brain: overlap episodes of processing intervals, and the split-brain figures of each phase.

Contract
--------
* :func:`segments`: processing intervals (unit, ident, p, seg, start, end, n): a member's records
  on a partition from its first record until the interval closes (a ``close`` fact of the fold:
  its revocation of p, its stop, or the complete of a crash, leave, stop, pause or cut of it), else
  its last record; it reopens at its next record. Pinned.
* :func:`overlap_islands`: per partition, maximal intervals in which processing intervals of two
  different members intersect (unit, p, island, istart, iend); one record inside another member's
  interval is an episode of 0 s. Optionally only pairs of members that differ in a column (the
  migration proof: members of two kinds). Pinned.
* :func:`phase_values`: ``overlap_episodes`` and ``overlap_s`` per phase (unit, tid, key, value),
  each episode attributed to the phase in which it starts.
* :func:`split_brain`: a phase's split-brain entry in the metrics document from its values (these
  two, ``duplicates`` from :mod:`.records` and the commit counts from :mod:`.commits`);
  commits_stale_generation is None where no accepted commit carried a generation.
* :func:`unit_totals`: a unit's totals over its startup and trigger windows (the drain is reported
  apart).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from harness.analysis.facts import Facts, per_phase, to_phase
from harness.analysis.frames import NS, UNIT, Frames, join, member_id, pin, unit_id


def segments(facts: Facts, frames: Frames) -> DataFrame:
    """Processing intervals: (unit, ident, p, seg) -> start (first record), end (the close that
    ended it, else its last record), n (records).

    A member's records of p fall into segments cut by its closes of p (a close with p < 0 closes every
    partition it processed): segment k holds the records after the k-th close and at or before the
    next one (a record stamped with a close's instant belongs before it), and ends at that close. The
    closes are few, so their segment bounds are a small table joined to the records by (unit, ident,
    p), as their hashes (:attr:`.frames.Frames.hashed`), and time: no sort of the records."""
    # keyed by the unit's and the member's hashes (frames.hashed): no string in the jobs over every record
    key = ["uid", "mid", "p"]
    rec = frames.hashed.where(~F.col("is_prod")).select("uid", "mid", F.col("partition").alias("p"), "ts_ns")
    closes = facts.of("close").select(
        unit_id().alias("uid"), member_id().alias("mid"), "p", F.col("start").alias("ts_ns")
    )
    # the partitions each member processed: from frames.sources (no pass over every record)
    pairs = (
        frames.sources.where(~F.col("is_prod")).select("uid", "mid", F.col("partition").alias("p")).distinct()
    )
    every = closes.where(F.col("p") < 0).drop("p").join(pairs, ["uid", "mid"])
    closes = closes.where(F.col("p") >= 0).unionByName(every.select(*key, "ts_ns"))
    k = F.row_number().over(Window.partitionBy(*key).orderBy("ts_ns"))
    numbered = closes.withColumn("k", k)
    # segment k - 1 ends at the k-th close (hi); segment k starts after it (lo); the first has no lo,
    # the last no hi
    his = numbered.select(*key, (F.col("k") - 1).alias("seg"), F.col("ts_ns").alias("hi"))
    los = numbered.select(*key, F.col("k").alias("seg"), F.col("ts_ns").alias("lo"))
    bounds = pin(his.join(los, [*key, "seg"], "full"))
    cond = (F.col("r_lo").isNull() | (F.col("ts_ns") > F.col("r_lo"))) & (
        F.col("r_hi").isNull() | (F.col("ts_ns") <= F.col("r_hi"))
    )
    b = bounds.select(*(F.col(c).alias(f"r_{c}") for c in bounds.columns))
    on = cond
    for c in key:
        on = on & (F.col(c) == F.col(f"r_{c}"))
    cut = rec.join(F.broadcast(b), on, "left")
    segs = cut.groupBy(*key, F.coalesce("r_seg", F.lit(0)).alias("seg")).agg(
        F.min("ts_ns").alias("start"),
        F.max("ts_ns").alias("last"),
        F.count("*").alias("n"),
        F.first("r_hi", ignorenulls=True).alias("close"),
    )
    named = segs.join(F.broadcast(frames.names.select("uid", "mid", *UNIT, "ident")), ["uid", "mid"])
    return pin(
        named.select(*UNIT, "ident", "p", "seg", "start", F.coalesce("close", "last").alias("end"), "n")
    )


def overlap_islands(segs: DataFrame, differ: str | None = None) -> DataFrame:
    """Overlap episodes per partition: maximal intervals in which processing intervals of two
    different members intersect (unit, p, istart, iend); with ``differ`` (a column of ``segs``, such
    as the member's kind) only pairs of members whose ``differ`` values differ count."""
    a = segs.select(*UNIT, "p", "ident", "start", "end", *([differ] if differ else []))
    cond = (
        (F.col("ident") < F.col("r_ident"))
        & (F.col("start") <= F.col("r_end"))
        & (F.col("r_start") <= F.col("end"))
    )
    if differ:
        cond = cond & (F.col(differ) != F.col(f"r_{differ}"))
    pairs = join(a, a, [*UNIT, "p"], cond).select(
        *UNIT,
        "p",
        F.greatest("start", "r_start").alias("ostart"),
        F.least("end", "r_end").alias("oend"),
    )
    w = Window.partitionBy(*UNIT, "p").orderBy("ostart", "oend")
    prev_end = F.max("oend").over(w.rowsBetween(Window.unboundedPreceding, -1))
    isl = pairs.withColumn("new", F.when(prev_end.isNull() | (F.col("ostart") > prev_end), 1).otherwise(0))
    isl = isl.withColumn(
        "island", F.sum("new").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    return pin(
        isl.groupBy(*UNIT, "p", "island").agg(F.min("ostart").alias("istart"), F.max("oend").alias("iend"))
    )


def phase_values(islands: DataFrame, phases: DataFrame) -> DataFrame:
    """Overlap episodes and their total seconds per phase, by the phase in which each starts."""
    by_start = to_phase(islands, phases, "istart")
    return per_phase(by_start, "overlap_episodes", F.count("*")).unionByName(
        per_phase(by_start, "overlap_s", F.sum(F.col("iend") - F.col("istart")) / NS)
    )


def split_brain(sb: dict[str, Any]) -> dict[str, Any]:
    """A phase's split-brain figures from its values ``sb`` (0 when absent; see the module contract)."""
    return {
        "overlap_episodes": int(sb.get("overlap_episodes") or 0),
        "overlap_s": round(float(sb.get("overlap_s") or 0.0), 6),
        "duplicates": int(sb.get("duplicates") or 0),
        "commits_non_owner": int(sb.get("commits_non_owner") or 0),
        "commits_stale_generation": int(sb.get("commits_stale_generation") or 0)
        if sb.get("commits_with_generation")
        else None,
    }


def unit_totals(phases: list[dict[str, Any]], phase_values: list[dict[str, Any]]) -> dict[str, Any]:
    """A unit's split-brain totals from the entries of its startup and trigger windows (``phases``)
    and those phases' values (for whether any accepted commit carried a generation)."""
    gen_known = sum((v.get("commits_with_generation") or 0) for v in phase_values)
    return {
        "overlap_episodes": int(sum(t.get("overlap_episodes") or 0 for t in phases)),
        "overlap_s": round(sum(t.get("overlap_s") or 0 for t in phases), 6),
        "commits_non_owner": int(sum(t.get("commits_non_owner") or 0 for t in phases)),
        "commits_stale_generation": int(sum((t.get("commits_stale_generation") or 0) for t in phases))
        if gen_known
        else None,
    }
