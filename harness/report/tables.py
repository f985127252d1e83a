"""The tables every report shows, as plain data (rendered by :mod:`.html`, :mod:`.markdown` and
:mod:`.terminal`), and the formatting of values.

Nothing here computes a figure: it arranges the aggregates of ``metrics.json`` side by side per
implementation. A missing value reads ``never`` when the metric is censored and some repetition
never got there, and ``—`` when it was not measured.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.definitions import TRIGGER_METRICS, UNIT_METRICS, metric

DASH = "—"
STATS = ("p50", "p95", "p99", "max")


def fmt(v: Any, unit: str = "", never: bool = False) -> str:
    """One value: ``1.234 s``, ``12``, ``3.5``; None -> ``never`` or ``—``."""
    if v is None:
        return "never" if never else DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        if unit == "s":
            return f"{v:.3f} s"
        if float(v).is_integer():
            return f"{int(v)}"
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def fmt_stat(a: dict[str, Any], stat: str) -> str:
    """One statistic of an aggregate row."""
    m = metric(a["metric"])
    return fmt(a.get(stat), m.unit, never=bool(a.get("never")))


def fmt_mean(a: dict[str, Any]) -> str:
    """``mean [lo, hi]``, or ``mean (n=1)`` / with the never count."""
    m = metric(a["metric"])
    if a.get("mean") is None:
        return "never" if a.get("never") else DASH
    s = fmt(a["mean"], m.unit)
    if a.get("ci95"):
        lo, hi = a["ci95"]
        s += f" [{fmt(lo, m.unit)}, {fmt(hi, m.unit)}]"
    if a.get("ci_note"):
        s += f" ({a['ci_note']})"
    return s


@dataclass
class SideBySide:
    """One table: rows are metrics, column groups are implementations."""

    case: str
    trigger: str
    targets: list[str]
    impls: list[str]
    rows: list[tuple[str, dict[str, dict[str, Any]]]] = field(
        default_factory=list
    )  # (metric, impl -> aggregate)


def implementations(metrics: dict[str, Any]) -> list[str]:
    """Implementations in the run, in the scenario's order."""
    named = (metrics.get("run") or {}).get("implementations") or []
    seen = {u["impl"] for u in metrics.get("units", [])}
    return [i for i in named if i in seen] + sorted(seen - set(named))


def cases(metrics: dict[str, Any]) -> list[str]:
    """Case labels in the manifest's order (then any others found in the units)."""
    out = [c.get("label") for c in metrics.get("cases") or []]
    for u in metrics.get("units", []):
        if u["case"] not in out:
            out.append(u["case"])
    return out


def side_by_side(metrics: dict[str, Any], breakdown: bool = False) -> list[SideBySide]:
    """Per case and trigger key (then ``all``, then ``unit``): the aggregates side by side.

    ``breakdown``: the by-operation / by-API metrics instead of the headline ones. Metrics no
    implementation has a value or a never for are left out.
    """
    impls = implementations(metrics)
    by: dict[tuple[str, str], dict[str, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    targets: dict[tuple[str, str], list[str]] = {}
    order: dict[tuple[str, str], int] = {}
    for a in metrics.get("aggregates", []):
        k = (a["case"], a["trigger"])
        by[k][a["metric"]][a["impl"]] = a
        targets.setdefault(k, a.get("targets") or [])
        order.setdefault(
            k,
            a["trigger_index"]
            if a["trigger_index"] >= 0
            else (10**6 if a["trigger"] == "all" else 10**6 + 1),
        )
    tables = []
    for case in cases(metrics):
        keys = sorted((k for k in by if k[0] == case), key=lambda k: order[k])
        singles = [k for k in keys if k[1] not in ("all", "unit")]
        for k in keys:
            if k[1] == "all" and len(singles) < 2:
                continue  # pooling one trigger repeats its table
            if breakdown:
                names = sorted(n for n in by[k] if "[" in n)
            else:
                names = [m.name for m in (UNIT_METRICS if k[1] == "unit" else TRIGGER_METRICS)]
            t = SideBySide(case=case, trigger=k[1], targets=targets[k], impls=impls)
            for n in names:
                cells = by[k].get(n, {})
                if any(c.get("k") or c.get("never") for c in cells.values()):
                    t.rows.append((f"unit.{n}" if k[1] == "unit" else n, cells))
            if t.rows:
                tables.append(t)
    return tables


def trigger_title(t: SideBySide) -> str:
    if t.trigger == "unit":
        return f"{t.case}: whole units"
    if t.trigger == "all":
        return f"{t.case}: all triggers pooled"
    tg = f" {','.join(t.targets)}" if t.targets else ""
    return f"{t.case}: trigger {t.trigger}{tg}"


UNIT_COLUMNS = [
    ("trigger", ""),
    ("t0_s", "s"),
    ("settled", ""),
    ("latency_s", "s"),
    ("detection_s", "s"),
    ("convergence_s", "s"),
    ("resumed_s", "s"),
    ("gap_s", "s"),
    ("watches", ""),
    ("zk_requests", ""),
    ("zk_packets", ""),
    ("broker_group_requests", ""),
    ("conflicts", ""),
    ("failed_attempts", ""),
    ("overlaps", ""),
    ("overlap_s", "s"),
    ("duplicates", ""),
    ("commits_non_owner", ""),
    ("commits_stale_generation", ""),
]


def unit_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-unit detail table: per unit a row per trigger (``cells`` under :data:`UNIT_COLUMNS`),
    then a ``totals`` row (``text``); a failed unit gets a ``failed`` row."""
    out: list[dict[str, Any]] = []
    for u in metrics.get("units", []):
        label = f"{u['impl']} {u['case']} r{u['repetition']}"
        if u.get("failed"):
            out.append({"unit": label, "kind": "failed", "text": f"FAILED: {u['failed']}"})
        for t in u.get("triggers", []):
            cells = []
            for name, unit in UNIT_COLUMNS:
                if name == "trigger":
                    cells.append(f"{t['key']} {','.join(t.get('targets') or [])}".strip())
                elif name in ("latency_s", "convergence_s", "resumed_s"):
                    cells.append(fmt(t.get(name), unit, never=not t.get("settled") or name == "resumed_s"))
                else:
                    cells.append(fmt(t.get(name), unit))
            out.append({"unit": label, "kind": "trigger", "cells": cells})
        if not u.get("events"):
            continue
        text = (
            f"produced {u.get('produced', 0)}, processed {u.get('processed', 0)}, lost {u.get('lost', 0)}, "
            f"duplicates {u.get('duplicates', 0)}, overlaps {u.get('overlaps', 0)} ({fmt(u.get('overlap_s'), 's')}), "
            f"non-owner commits {u.get('commits_non_owner', 0)}, stale-generation commits "
            f"{fmt(u.get('commits_stale_generation'))}, rejected commits {u.get('commits_rejected', 0)}"
        )
        out.append({"unit": label, "kind": "totals", "text": text, "lost": bool(u.get("lost"))})
    return out
