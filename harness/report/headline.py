"""The headline every report opens with: one sentence summarising the verdict's ratio rows.

``headline(metrics)`` reads ``metrics["verdict"]["ratios"]`` (:mod:`harness.analysis.verdict`) and
computes no metric: per pair of implementations (``numerator`` / ``denominator``) it names the
smallest and largest coordination-request ratio and latency ratio over the pair's rows (one row per
case and trigger kind), then says how far the repetitions carry: ``n=1, no CI`` with the advice to
repeat when some ratio rests on one repetition on a side, else the fewest repetitions behind a
ratio. Ratios print as in the verdict table (three significant digits, :func:`.tables.sig3`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.analysis.metrics_model import MetricsDocument
from harness.report.tables import sig3, verdict_of

#: The repetitions the headline advises when a ratio rests on one repetition per side.
ADVISED_REPETITIONS = 5


def _span(values: Sequence[float]) -> str:
    """``4.95×`` for one value (or equal ones), ``4.95–8.76×`` for a range."""
    lo, hi = sig3(min(values)), sig3(max(values))
    return f"{lo}×" if lo == hi else f"{lo}–{hi}×"


def _missing(rows: Sequence[Mapping[str, Any]], name: str) -> str:
    """`` (none in 1 of 6)``: how many of the pair's rows have no ratio of ``name``."""
    none = sum(1 for r in rows if r[name].get("ratio") is None)
    return f" (none in {none} of {len(rows)})" if none else ""


def _pair(rows: Sequence[Mapping[str, Any]]) -> str:
    """The clause of one pair of implementations."""
    num, den = rows[0]["numerator"], rows[0]["denominator"]
    req = [
        r["coordination_requests"]["ratio"]
        for r in rows
        if r["coordination_requests"].get("ratio") is not None
    ]
    lat = [r["latency_s"]["ratio"] for r in rows if r["latency_s"].get("ratio") is not None]
    if req:
        out = f"{num} sent {_span(req)} the coordination requests of {den}"
    else:
        out = f"{num} and {den}: no coordination-request ratio"
    out += _missing(rows, "coordination_requests") if req else ""
    out += f"; latency ratio {_span(lat)}{_missing(rows, 'latency_s')}" if lat else "; no latency ratio"
    return out


def _repetitions(rows: Sequence[Mapping[str, Any]]) -> str:
    """How far the repetitions carry: the fewest finite values on either side of any ratio."""
    sides = [
        n for r in rows for name in ("latency_s", "coordination_requests") for n in r[name].get("n") or []
    ]
    counted = [n for n in sides if n]
    if not counted:
        return ""
    fewest = min(counted)
    if fewest < 2:
        return f"n=1, no CI: use {ADVISED_REPETITIONS} or more repetitions"
    n = f"n={fewest}" if max(counted) == fewest else f"n≥{fewest}"
    return f"{n} per side, 95% CIs in the verdict table"


def headline(metrics: MetricsDocument) -> str | None:
    """The headline sentence (see the module docstring); None when the verdict has no ratio row."""
    ratios = verdict_of(metrics).get("ratios") or []
    if not ratios:
        return None
    pairs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in ratios:
        pairs.setdefault((r["numerator"], r["denominator"]), []).append(r)
    clauses = [_pair(rows) for rows in pairs.values()]
    if reps := _repetitions(ratios):
        clauses.append(reps)
    return "; ".join(clauses)
