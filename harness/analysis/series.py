"""Series for the plots: the consumption rate per unit and ownership timelines of chosen units.

Contract
--------
:func:`fill_series` fills ``series["rate"]`` and ``series["timelines"]`` of the metrics document
from the assembled units (their origin, triggers and overlap totals):

* ``rate``: per unit with records, processed records per second in bins of ``bin_s`` (a multiple
  of the 100 ms gap bucket, at least :data:`RATE_BIN_BUCKETS` of them, coarse enough that the
  longest unit has at most about :data:`MAX_RATE_POINTS` points), with every trigger's
  [t0_s, key, t1_s] and the gaps;
* ``timelines``: per (case, impl), the repetition with the longest overlap (the lowest repetition
  on ties), at most :data:`MAX_TIMELINES` of them: claims, suspensions and overlap episodes of
  at most :data:`MAX_TIMELINE_PARTITIONS` partitions, in seconds since the unit's origin, clipped
  to the unit's last event.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from harness.analysis.facts import Facts
from harness.analysis.frames import UNIT, UnitKey, collect, local_frame, together, unit_key
from harness.analysis.latency import GAP_BUCKET_NS, Buckets
from harness.analysis.metrics_model import Series

MAX_TIMELINES = 12
MAX_TIMELINE_PARTITIONS = 64
MAX_RATE_POINTS = 1500
RATE_BIN_BUCKETS = 2  # rate series bins = 2 gap buckets = 0.2 s


def fill_series(
    spark: SparkSession,
    facts: Facts,
    buckets: Buckets,
    islands: DataFrame,
    units: dict[UnitKey, dict[str, Any]],
    series: Series,
) -> None:
    """Append the rate series and the timelines of ``units`` to ``series`` (see the module contract)."""
    got = together(
        rate=lambda: rate_series(buckets, units), timelines=lambda: timelines(spark, facts, islands, units)
    )
    series["rate"].extend(got["rate"])
    series["timelines"].extend(got["timelines"])


def _trigger_marks(u: dict[str, Any]) -> list[list[Any]]:
    return [[tr["t0_s"], tr["key"], tr["t1_s"]] for tr in u.get("triggers", [])]


def rate_series(buckets: Buckets, units: dict[UnitKey, dict[str, Any]]) -> list[dict[str, Any]]:
    """The consumption rate of every unit with records, by unit."""
    longest = max((u["t_last"] - u["t_first"]) / 1e9 for u in units.values())
    factor = max(RATE_BIN_BUCKETS, math.ceil(longest / 0.1 / MAX_RATE_POINTS))
    bin_s = factor * GAP_BUCKET_NS / 1e9
    rates: dict[UnitKey, dict[int, int]] = {}
    for k, rows in buckets.items():
        bins = rates.setdefault(k, {})
        for bucket, n, _, _ in rows:
            b = math.floor(bucket / factor)
            bins[b] = bins.get(b, 0) + n
    out = []
    for k in sorted(rates):
        u = units[k]
        pts = sorted(rates[k].items())
        lo, hi = pts[0][0], pts[-1][0]
        dense = dict(pts)
        out.append(
            {
                "case": k[0],
                "impl": k[1],
                "repetition": k[2],
                "bin_s": bin_s,
                "t_s": [round(b * bin_s - u["origin"] / 1e9, 3) for b in range(lo, hi + 1)],
                "rate": [round(dense.get(b, 0) / bin_s, 2) for b in range(lo, hi + 1)],
                "triggers": _trigger_marks(u),
                "gaps": [tr["gap"] for tr in u.get("triggers", []) if tr.get("gap")],
            }
        )
    return out


def timelines(
    spark: SparkSession, facts: Facts, islands: DataFrame, units: dict[UnitKey, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Ownership timelines of the chosen units (see the module contract)."""
    chosen: dict[tuple[str, str], UnitKey] = {}
    for k, u in sorted(units.items()):
        ck = (k[0], k[1])
        if ck not in chosen or (u.get("overlap_s") or 0) > (units[chosen[ck]].get("overlap_s") or 0):
            chosen[ck] = k
    picks = sorted(chosen.values(), key=lambda k: (k[0], k[1]))[:MAX_TIMELINES]
    if not picks:
        return []
    sel = local_frame(spark, [list(k) for k in picks], "case string, impl string, repetition int")
    got = together(
        claims=lambda: collect(facts.intervals("claim").join(F.broadcast(sel), UNIT)),
        susp=lambda: collect(facts.intervals("away").join(F.broadcast(sel), UNIT)),
        ov=lambda: collect(islands.join(F.broadcast(sel), UNIT)),
    )
    claims, susp, ov = got["claims"], got["susp"], got["ov"]
    by: dict[UnitKey, dict[str, list[Any]]] = {
        k: {"claims": [], "suspended": [], "overlaps": []} for k in picks
    }
    for name, rows in (("claims", claims), ("suspended", susp), ("overlaps", ov)):
        for r in rows:
            by[unit_key(r)][name].append(r)
    out = []
    for k in picks:
        u = units[k]
        o, end = u["origin"], u["t_last"]

        def clip(ns: int, o: int = o, end: int = end) -> float:
            return round((min(ns, end) - o) / 1e9, 4)

        parts = sorted({r["p"] for r in by[k]["claims"]} | set(range(u["partitions"] or 0)))
        shown = parts[:MAX_TIMELINE_PARTITIONS]
        out.append(
            {
                "case": k[0],
                "impl": k[1],
                "repetition": k[2],
                "partitions": shown,
                "partitions_total": len(parts),
                "start_s": clip(u["t_first"]),
                "end_s": clip(end),
                "claims": sorted(
                    [
                        [r["p"], r["ident"], clip(r["start"]), clip(r["end"])]
                        for r in by[k]["claims"]
                        if r["p"] in shown
                    ],
                    key=lambda x: (x[0], x[2]),
                ),
                "suspended": sorted(
                    [[r["ident"], clip(r["start"]), clip(r["end"])] for r in by[k]["suspended"]],
                    key=lambda x: x[1],
                ),
                "overlaps": sorted(
                    [
                        [r["p"], clip(r["istart"]), clip(r["iend"])]
                        for r in by[k]["overlaps"]
                        if r["p"] in shown
                    ],
                    key=lambda x: (x[0], x[1]),
                ),
                "triggers": _trigger_marks(u),
            }
        )
    return out
