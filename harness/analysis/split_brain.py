"""Split brain: overlap episodes of processing intervals, and the split-brain figures of each phase.

Contract
--------
* :func:`segments`: processing intervals (unit, ident, p, seg, start, end, n): runs of a member's
  records of a partition with no gap between two consecutive ones above the unit's processing gap
  bound (:func:`gap_table`, :mod:`harness.scenario.processing`), also cut by a ``close`` fact of the
  fold (its revocation of p, its stop, or the complete of a crash, leave, stop, pause, stall or cut of it);
  an interval ends at its last record, or at the close that ends it when that follows within the
  bound. An isolated record is an interval of 0 s. Pinned.
* :func:`overlap_islands`: per partition, maximal intervals in which processing intervals of two
  different members intersect (unit, p, island, istart, iend); one record inside another member's
  interval is an episode of 0 s. Optionally only pairs of members that differ in a column (the
  migration proof: members of two kinds). Pinned.
* :func:`episode_records` and :func:`episodes_by_unit`: per episode its members (those whose
  interval intersects it) and the records each processed inside it (count, first and last offset),
  with how many of those another member of the episode processed at any time: each unit's
  ``overlaps`` in the metrics document.
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
from harness.analysis.frames import (
    NS,
    UNIT,
    Frames,
    UnitKey,
    collect,
    join,
    local_frame,
    member_id,
    pin,
    unit_key,
)


def segments(facts: Facts, frames: Frames, gaps: DataFrame) -> DataFrame:
    """Processing intervals: (unit, ident, p, seg) -> start (first record), end, n (records).

    ``gaps``: (uid, gap_ns), each unit's processing gap bound (:func:`gap_table`). A member's records of
    p fall first into spans cut by its closes of p (a close with p < 0 closes every partition it
    processed): span k holds the records after the k-th close and at or before the next one (a record
    stamped with a close's instant belongs before it). Each span is then cut wherever two consecutive
    records lie more than the bound apart; a piece ends at its last record, or at the close that ends
    its span when that is its span's last piece and the close follows its last record within the bound.

    No sort of the records: the closes are few, so their span bounds are a small table joined to the
    records by (unit, ident, p), as their hashes (:attr:`.frames.Frames.hashed`), and time; the gaps
    are found on each span's records counted into buckets as wide as the bound (within one bucket no
    two records lie further apart than the bound, so the only gaps above it are between a bucket's
    last record and the next non-empty bucket's first), a table of at most one row per bound of each
    member's processing of p."""
    # keyed by the unit's and the member's hashes (frames.hashed): no string in the jobs over every record
    key = ["uid", "mid", "p"]
    rec = frames.hashed.where(~F.col("is_prod")).select("uid", "mid", F.col("partition").alias("p"), "ts_ns")
    bounds = local_frame(
        frames.control.sparkSession,
        span_bounds(facts, frames),
        "uid long, mid long, p int, seg int, hi long, lo long",
    )
    cond = (F.col("r_lo").isNull() | (F.col("ts_ns") > F.col("r_lo"))) & (
        F.col("r_hi").isNull() | (F.col("ts_ns") <= F.col("r_hi"))
    )
    b = bounds.select(*(F.col(c).alias(f"r_{c}") for c in bounds.columns))
    on = cond
    for c in key:
        on = on & (F.col(c) == F.col(f"r_{c}"))
    cut = rec.join(F.broadcast(b), on, "left").join(F.broadcast(gaps), "uid")
    span = [*key, "seg"]
    buckets = cut.groupBy(
        *key,
        F.coalesce("r_seg", F.lit(0)).alias("seg"),
        F.expr("ts_ns div gap_ns").alias("bucket"),
    ).agg(
        F.min("ts_ns").alias("bmin"),
        F.max("ts_ns").alias("bmax"),
        F.count("*").alias("n"),
        F.first("r_hi", ignorenulls=True).alias("close"),
        F.first("gap_ns").alias("gap_ns"),
    )
    w = Window.partitionBy(*span).orderBy("bucket")
    gap_before = F.col("bmin") - F.lag("bmax").over(w)
    runs = buckets.withColumn(
        "new", F.when(gap_before.isNull() | (gap_before > F.col("gap_ns")), 1).otherwise(0)
    ).withColumn("run", F.sum("new").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    pieces = runs.groupBy(*span, "run").agg(
        F.min("bmin").alias("start"),
        F.max("bmax").alias("last"),
        F.sum("n").alias("n"),
        F.first("close", ignorenulls=True).alias("close"),
        F.first("gap_ns").alias("gap_ns"),
    )
    is_last = F.col("run") == F.max("run").over(Window.partitionBy(*span))
    closed = is_last & F.col("close").isNotNull() & (F.col("close") - F.col("last") <= F.col("gap_ns"))
    ends = pieces.select(
        *key,
        F.row_number().over(Window.partitionBy(*key).orderBy("start")).alias("seg"),
        "start",
        F.when(closed, F.col("close")).otherwise(F.col("last")).alias("end"),
        "n",
    )
    named = ends.join(F.broadcast(frames.names.select("uid", "mid", *UNIT, "ident")), ["uid", "mid"])
    return pin(named.select(*UNIT, "ident", "p", "seg", "start", "end", "n"))


def span_bounds(facts: Facts, frames: Frames) -> list[tuple[int, int, int, int, int | None, int | None]]:
    """The spans of :func:`segments`, computed in the driver from the fold's closes and the partitions
    each member processed (:attr:`.frames.Frames.source_rows`): (uid, mid, p, seg, hi, lo) per member
    and partition with a close, span ``seg`` holding the records after ``lo`` (the seg-th close; None
    for the first span) and at or before ``hi`` (the next close; None for the last)."""
    uids = frames.unit_hashes()
    processed: dict[tuple[int, int], set[int]] = {}
    for r in frames.source_rows:
        if not r["is_prod"]:
            processed.setdefault((r["uid"], r["mid"]), set()).add(r["partition"])
    closes: dict[tuple[int, int, int], list[int]] = {}
    for c in facts.rows("close"):
        uid, mid = uids.get(unit_key(c)), frames.member_ids.get(c["ident"])
        if uid is None or mid is None or c["p"] is None:
            continue
        # a close with p < 0 closes every partition the member processed
        for p in [c["p"]] if c["p"] >= 0 else sorted(processed.get((uid, mid), ())):
            closes.setdefault((uid, mid, p), []).append(c["start"])
    out: list[tuple[int, int, int, int, int | None, int | None]] = []
    for (uid, mid, p), ts in closes.items():
        ts.sort()
        edges: list[int | None] = [None, *ts, None]
        out.extend((uid, mid, p, seg, edges[seg + 1], edges[seg]) for seg in range(len(ts) + 1))
    return out


def gap_table(frames: Frames, units: dict[UnitKey, dict[str, Any]]) -> DataFrame:
    """(uid, gap_ns): each unit's processing gap bound (its ``processing_gap_s``) in ns, by unit hash."""
    uids = frames.unit_hashes()
    rows = [(uids[k], int(round(float(u["processing_gap_s"]) * NS))) for k, u in units.items() if k in uids]
    return local_frame(frames.control.sparkSession, rows, "uid long, gap_ns long")


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


def episode_records(
    islands: DataFrame, segs: DataFrame, frames: Frames, phases: DataFrame
) -> list[dict[str, Any]]:
    """Every overlap episode with what each of its members processed in it (see the module contract):
    rows (unit, p, island, istart, iend, tid, ident, n, lo, hi, dups), one per episode and member; a
    member of an episode is one whose processing interval of p intersects it, so one that processed
    nothing inside it has n 0 (lo and hi None). ``dups``: how many of the member's records of the
    episode (distinct offsets) some other member of the episode processed at any time. Empty, with no
    job over the records, when there is no episode."""
    isl = pin(to_phase(islands, phases, "istart").join(F.broadcast(frames.unit_ids()), UNIT))
    if isl.isEmpty():
        return []
    i = isl.select("uid", *UNIT, "p", "island", "istart", "iend", "tid")
    members = pin(
        join(
            segs.select(*UNIT, "p", "ident", "start", "end"),
            F.broadcast(i),
            [*UNIT, "p"],
            (F.col("start") <= F.col("r_iend")) & (F.col("end") >= F.col("r_istart")),
        )
        .select(F.col("r_uid").alias("uid"), "p", F.col("r_island").alias("island"), "ident")
        .distinct()
        .withColumn("mid", member_id())
    )
    rec = frames.hashed.where(~F.col("is_prod")).select(
        "uid", "mid", F.col("partition").alias("p"), "offset", "ts_ns"
    )
    ri = i.select(*(F.col(c).alias(f"r_{c}") for c in ("uid", "p", "island", "istart", "iend")))
    on = (
        (F.col("uid") == F.col("r_uid"))
        & (F.col("p") == F.col("r_p"))
        & (F.col("ts_ns") >= F.col("r_istart"))
        & (F.col("ts_ns") <= F.col("r_iend"))
    )
    inside = pin(
        rec.join(F.broadcast(ri), on)
        .select("uid", "mid", "p", F.col("r_island").alias("island"), "offset")
        .distinct()
    )
    # every delivery of the offsets processed inside an episode, by a member of that episode
    wanted = inside.select("uid", "p", "island", "offset").distinct()
    by_members = (
        rec.join(F.broadcast(wanted), ["uid", "p", "offset"])
        .join(F.broadcast(members.select("uid", "p", "island", "mid")), ["uid", "p", "island", "mid"])
        .select("uid", "p", "island", "offset", F.col("mid").alias("other"))
        .distinct()
    )
    dup = (
        inside.join(by_members, ["uid", "p", "island", "offset"])
        .where(F.col("other") != F.col("mid"))
        .select("uid", "p", "island", "mid", "offset")
        .distinct()
        .groupBy("uid", "p", "island", "mid")
        .agg(F.count("*").alias("dups"))
    )
    counts = inside.groupBy("uid", "p", "island", "mid").agg(
        F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi")
    )
    per_member = (
        members.join(counts, ["uid", "p", "island", "mid"], "left")
        .join(dup, ["uid", "p", "island", "mid"], "left")
        .join(F.broadcast(i), ["uid", "p", "island"])
        .select(
            *UNIT,
            "p",
            "island",
            "istart",
            "iend",
            "tid",
            "ident",
            F.coalesce("n", F.lit(0)).alias("n"),
            "lo",
            "hi",
            F.coalesce("dups", F.lit(0)).alias("dups"),
        )
    )
    return collect(per_member)


def episodes_by_unit(
    rows: list[dict[str, Any]], origins: dict[UnitKey, int]
) -> dict[UnitKey, list[dict[str, Any]]]:
    """The rows of :func:`episode_records` as each unit's ``overlaps`` list: per episode (by start,
    then partition) its partition, phase (``tid``: a trigger's index, -1 startup, -2 drain), start and
    end in seconds since the unit's origin, duration, and per member (by name) its records in it:
    count, first and last offset, and duplicates (see :func:`episode_records`)."""
    eps: dict[tuple[UnitKey, int, int], dict[str, Any]] = {}
    for r in rows:
        k = unit_key(r)
        o = origins[k]
        e = eps.setdefault(
            (k, r["p"], r["island"]),
            {
                "p": r["p"],
                "tid": r["tid"],
                "start_s": round((r["istart"] - o) / NS, 6),
                "end_s": round((r["iend"] - o) / NS, 6),
                "duration_s": round((r["iend"] - r["istart"]) / NS, 6),
                "members": [],
            },
        )
        e["members"].append(
            {
                "member": r["ident"],
                "records": int(r["n"]),
                "offsets": None if r["lo"] is None else [int(r["lo"]), int(r["hi"])],
                "duplicates": int(r["dups"]),
            }
        )
    out: dict[UnitKey, list[dict[str, Any]]] = {}
    for (k, _, _), e in sorted(eps.items(), key=lambda kv: (kv[0][0], kv[1]["start_s"], kv[1]["p"])):
        e["members"].sort(key=lambda m: m["member"])
        out.setdefault(k, []).append(e)
    return out


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
