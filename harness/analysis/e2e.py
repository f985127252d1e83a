"""End-to-end latency: per record, from the producer's acknowledgement to its first processing.

Contract
--------
* A record is a (unit, partition, offset) of :func:`harness.analysis.records.record_keys`. Its
  end-to-end latency is ``first`` (its first processing's ts) minus ``acked`` (the ts of its
  ``produced`` event, when the producer saw the acknowledgement). A record processed twice counts
  once, at its first processing; a record never processed (lost or not drained) or never
  acknowledged (a phantom) has no latency. A latency below 0 (the consumer fetched the record
  before the acknowledgement reached the producer) counts as 0 and is counted in ``clamped``.
* Precision: latencies are kept in whole microseconds, floored to :data:`SIGNIFICANT` significant
  decimal digits (:func:`quantize`: 1234567 us -> 1230000 us), a relative error below 1 %. Spark
  computes only value counts at that precision, per unit, 1 s bucket of the processing time
  (:data:`BUCKET_NS`, epoch seconds) and trigger window (:meth:`~harness.analysis.facts.Facts.windows`,
  by the processing time; -1 outside every window): :func:`counts`, one job (with the per-bucket
  counts of acknowledgements for the consumer lag). The quantiles are then exact on the quantized
  values, not Spark's ``percentile_approx``: :func:`quantiles` takes the nearest rank, the q-quantile
  of N values being the smallest value whose cumulative count reaches ceil(q N).
* :func:`fill`: each unit's ``e2e`` (:func:`e2e_fields`: count, p50_s, p90_s, p99_s, p999_s,
  max_s, clamped) and flat ``e2e_p50_s`` ... ``e2e_max_s`` (the aggregates' metrics), the same
  per trigger window; and ``series["e2e"]``: per unit with latencies, 1 s buckets by processing
  time (``t_s``: the bucket's start in seconds since the unit's origin, ``epoch_s``: its start in
  seconds since the epoch), per bucket the count, the quantiles (None in an empty bucket),
  ``lag`` (acknowledged records acknowledged before the bucket's end minus those of them processed
  before it), the triggers' marks and ``hdr``: the bucket's latencies as an HdrHistogram
  (:func:`histogram`: microseconds, 3 significant digits) in HdrHistogram's compressed base64
  encoding, the interval histograms of the unit's ``.hlog`` (:mod:`harness.report.hdr`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from harness.analysis.facts import Facts
from harness.analysis.frames import NS, UNIT, Frames, UnitKey, collect, unit_id, unit_key

BUCKET_NS = NS  # 1 s buckets of the processing time
SIGNIFICANT = 3  # significant decimal digits of a latency in microseconds
#: name, rank as a fraction of 1000 (integers: no floating-point rank off by one)
QUANTILES: tuple[tuple[str, int], ...] = (("p50", 500), ("p90", 900), ("p99", 990), ("p999", 999))
FIELDS = (*(q for q, _ in QUANTILES), "max")
HDR_HIGHEST_US = 3_600_000_000  # an hour: the histograms' highest trackable value
HDR_DIGITS = 3

Counts = dict[int, int]  # quantized latency (us) -> records


def quantize(us: int) -> int:
    """``us`` floored to :data:`SIGNIFICANT` significant decimal digits (0 stays 0)."""
    step = 10 ** max(len(str(us)) - SIGNIFICANT, 0)
    return us // step * step


def _quantize_expr(us: str) -> Column:
    """:func:`quantize` of the long column named ``us`` (>= 0) in Spark, in integer arithmetic: the
    step is the power of ten below which ``us`` has :data:`SIGNIFICANT` digits, by comparisons with
    the powers of ten (a decimal string per row cost seconds at 10^7 records); ``us - us % step`` is
    the floor."""
    step = F.when(F.col(us) < 10**SIGNIFICANT, F.lit(1).cast("long"))
    for e in range(SIGNIFICANT + 1, 19):  # a long is below 10^19
        step = step.when(F.col(us) < 10**e, F.lit(10 ** (e - SIGNIFICANT)).cast("long"))
    step = step.otherwise(F.lit(10 ** (19 - SIGNIFICANT)).cast("long"))
    return F.col(us) - F.col(us) % step


def counts(facts: Facts, keys: DataFrame, frames: Frames) -> list[dict[str, Any]]:
    """One collected row per (unit, ``sec``, ``kind``, ``tid``, ``us``, ``neg``) with ``n`` records.

    ``kind`` "p": records acknowledged and processed, ``sec`` the epoch second of the first
    processing, ``tid`` its trigger window (-1: none), ``us`` the quantized latency, ``neg`` whether
    it was clamped from below 0. ``kind`` "a": acknowledged records by the epoch second of the
    acknowledgement (``tid``, ``us`` and ``neg`` null). ``keys`` must carry ``uid``
    (:func:`.frames.unit_id`), ``produced``, ``n``, ``first`` and ``acked``; ``frames`` map ``uid``
    back to units (:meth:`.frames.Frames.unit_ids`)."""
    # keyed by the unit's hash, as record_keys is: grouping and joining 10^7 rows on two string
    # columns costs far more than on one long
    acked = keys.where(F.col("produced") == 1).select("uid", "n", "first", "acked")
    done = acked.where(F.col("n") > 0)
    w = facts.windows().select(unit_id().alias("w_uid"), "tid", "t0", "wend")
    # windows are disjoint (each ends at the next one's t0): a record falls in at most one; a left
    # join keeps the records outside every window (tid -1)
    on = (F.col("uid") == F.col("w_uid")) & (F.col("first") >= F.col("t0")) & (F.col("first") < F.col("wend"))
    lat = done.join(F.broadcast(w), on, "left").select(
        "uid",
        F.expr(f"`first` div {BUCKET_NS}").alias("sec"),
        F.expr("greatest(`first` - `acked`, 0) div 1000").alias("raw_us"),
        (F.col("first") < F.col("acked")).alias("neg"),
        F.coalesce(F.col("tid").cast("long"), F.lit(-1).cast("long")).alias("tid"),
    )
    # grouped by the hash alone: first() of a string column in the aggregation buffer would turn each
    # hash aggregation into a sort of every row; the units (few) are mapped back on the driver
    per = lat.groupBy(
        "uid", "sec", F.lit("p").alias("kind"), "tid", _quantize_expr("raw_us").alias("us"), "neg"
    ).agg(F.count("*").alias("n"))
    acks = acked.groupBy("uid", F.expr(f"`acked` div {BUCKET_NS}").alias("sec")).agg(F.count("*").alias("n"))
    acks = acks.select(
        "uid",
        "sec",
        F.lit("a").alias("kind"),
        F.lit(None).cast("long").alias("tid"),
        F.lit(None).cast("long").alias("us"),
        F.lit(None).cast("boolean").alias("neg"),
        "n",
    )
    by_uid = {uid: dict(zip(UNIT, k, strict=True)) for uid, k in frames.units_by_id.items()}
    return [{**by_uid[r.pop("uid")], **r} for r in collect(per.unionByName(acks))]


def quantiles(c: Mapping[int, int]) -> dict[str, int | None]:
    """The :data:`QUANTILES` and ``max`` of the values counted in ``c`` (value -> count), nearest
    rank (see the module contract); all None when ``c`` counts nothing."""
    total = sum(c.values())
    if total <= 0:
        return {f: None for f in FIELDS}
    ranks = [(name, (total * k + 999) // 1000) for name, k in QUANTILES]
    out: dict[str, int | None] = {}
    cum, i = 0, 0
    for v, n in sorted(c.items()):
        cum += n
        while i < len(ranks) and cum >= ranks[i][1]:
            out[ranks[i][0]] = v
            i += 1
    out["max"] = max(c)
    return out


def _s(us: int | None) -> float | None:
    return None if us is None else round(us / 1e6, 6)


def e2e_fields(c: Mapping[int, int], clamped: int = 0) -> dict[str, Any]:
    """A unit's or trigger window's ``e2e`` entry: ``count`` (records with a latency), the
    quantiles and max in seconds (None without records) and ``clamped`` (latencies below 0)."""
    q = quantiles(c)
    return {"count": sum(c.values()), **{f"{f}_s": _s(q[f]) for f in FIELDS}, "clamped": clamped}


def flat_fields(e2e: Mapping[str, Any]) -> dict[str, float | None]:
    """The flat ``e2e_<q>_s`` fields of an ``e2e`` entry (what the aggregates read)."""
    return {f"e2e_{f}_s": e2e[f"{f}_s"] for f in FIELDS}


def histogram(c: Mapping[int, int], start_ms: int | None = None, end_ms: int | None = None) -> Any:
    """An HdrHistogram (microseconds, 1 us .. an hour, :data:`HDR_DIGITS` significant digits) of the
    values counted in ``c``; a value above the highest trackable is recorded as the highest."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, HDR_HIGHEST_US, HDR_DIGITS)
    for v, n in c.items():
        h.record_value(min(v, HDR_HIGHEST_US), n)
    if start_ms is not None:
        h.set_start_time_stamp(start_ms)
    if end_ms is not None:
        h.set_end_time_stamp(end_ms)
    return h


def _add(c: Counts, us: int, n: int) -> None:
    c[us] = c.get(us, 0) + n


def fill(rows: Iterable[dict[str, Any]], units: dict[UnitKey, dict[str, Any]], series: list[Any]) -> None:
    """Put ``e2e`` (and the flat fields) into every unit and trigger of ``units`` and append the
    per-unit series to ``series`` from the rows of :func:`counts` (see the module contract). The
    units' ``triggers`` must be filled; their ``index`` is the window's tid."""
    per_unit: dict[UnitKey, Counts] = {}
    per_tid: dict[tuple[UnitKey, int], Counts] = {}
    per_sec: dict[UnitKey, dict[int, Counts]] = {}
    acks: dict[UnitKey, dict[int, int]] = {}
    clamped: dict[UnitKey, int] = {}
    clamped_tid: dict[tuple[UnitKey, int], int] = {}
    for r in rows:
        k, sec, n = unit_key(r), int(r["sec"]), int(r["n"])
        if r["kind"] == "a":
            acks.setdefault(k, {})[sec] = acks.get(k, {}).get(sec, 0) + n
            continue
        us, tid = int(r["us"]), int(r["tid"])
        _add(per_unit.setdefault(k, {}), us, n)
        _add(per_tid.setdefault((k, tid), {}), us, n)
        _add(per_sec.setdefault(k, {}).setdefault(sec, {}), us, n)
        if r["neg"]:
            clamped[k] = clamped.get(k, 0) + n
            clamped_tid[(k, tid)] = clamped_tid.get((k, tid), 0) + n
    for k, u in units.items():
        u["e2e"] = e2e_fields(per_unit.get(k, {}), clamped.get(k, 0))
        u.update(flat_fields(u["e2e"]))
        for t in u.get("triggers") or []:
            tk = (k, int(t["index"]))
            t["e2e"] = e2e_fields(per_tid.get(tk, {}), clamped_tid.get(tk, 0))
            t.update(flat_fields(t["e2e"]))
    for k in sorted(per_sec):
        series.append(_series(k, units[k], per_sec[k], acks.get(k, {})))


def _series(
    k: UnitKey, u: Mapping[str, Any], secs: dict[int, Counts], acks: dict[int, int]
) -> dict[str, Any]:
    lo, hi = min(min(secs), min(acks, default=min(secs))), max(max(secs), max(acks, default=max(secs)))
    origin_s = u["origin"] / 1e9
    out: dict[str, Any] = {
        "case": k[0],
        "impl": k[1],
        "repetition": k[2],
        "bucket_s": BUCKET_NS / 1e9,
        "t_s": [],
        "epoch_s": [],
        "count": [],
        **{f: [] for f in FIELDS},
        "acked": [],
        "lag": [],
        "hdr": [],
        "triggers": [[t["t0_s"], t["key"], t["t1_s"]] for t in u.get("triggers") or []],
    }
    acked_cum = done_cum = 0
    for sec in range(lo, hi + 1):
        c = secs.get(sec, {})
        n = sum(c.values())
        acked_cum += acks.get(sec, 0)
        done_cum += n
        q = quantiles(c)
        out["t_s"].append(round(sec - origin_s, 3))
        out["epoch_s"].append(sec)
        out["count"].append(n)
        for f in FIELDS:
            out[f].append(_s(q[f]))
        out["acked"].append(acks.get(sec, 0))
        out["lag"].append(acked_cum - done_cum)
        out["hdr"].append(histogram(c, sec * 1000, (sec + 1) * 1000).encode().decode() if n else None)
    return out
