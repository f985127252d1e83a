"""The Coordinators summary: the same triggers served by different brokers, side by side.

Contract
--------
:func:`summary` (pure, from the document's units and aggregates) returns None unless the run's units
have more than one ``broker`` (:func:`harness.analysis.units.columns`). Otherwise
``{"brokers": [...], "rows": [...]}`` with one row per (implementation, trigger key, client,
assignor), in trigger order: ``impl``, ``trigger`` (``"#1 join"``), ``action``, ``client``,
``assignor``, ``latency_s`` and ``coordination_requests`` (broker -> the median (p50) of that
metric's aggregate row of the case with that broker: a number, ``"never"``, or None when absent),
and ``latency_ratio`` / ``requests_ratio``: herdlab / tansu, None when either side has no finite
value or tansu's is 0.
"""

from __future__ import annotations

import math
from typing import Any

#: The brokers whose ratio the summary states (ours over the third party's).
RATIO = ("herdlab", "tansu")
METRICS = ("latency_s", "coordination_requests")


def ratio(a: Any, b: Any) -> float | None:
    """a / b rounded to 3 decimals; None unless both are finite numbers and b is not 0."""
    if not isinstance(a, int | float) or not isinstance(b, int | float) or isinstance(a, bool):
        return None
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return None
    return round(a / b, 3)


def summary(units: list[dict[str, Any]], aggregates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Coordinators summary (see the module contract)."""
    col = {(u["impl"], u["case"]): u for u in units if u.get("broker")}
    brokers = sorted(
        {u["broker"] for u in col.values()},
        key=lambda b: (b not in RATIO, RATIO.index(b) if b in RATIO else 0, b),
    )
    if len(brokers) < 2:
        return None
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    order: dict[tuple[str, str, str, str], int] = {}
    for a in aggregates:
        if a.get("trigger") == "unit" or a.get("metric") not in METRICS:
            continue
        u = col.get((a["impl"], a["case"]))
        if u is None:
            continue
        k = (a["impl"], a["trigger"], u.get("client") or "", u.get("assignor") or "")
        order.setdefault(k, int(a.get("trigger_index") or 0))
        row = rows.setdefault(
            k,
            {
                "impl": k[0],
                "trigger": k[1],
                "action": a.get("action"),
                "client": k[2],
                "assignor": k[3],
                **{m: {b: None for b in brokers} for m in METRICS},
            },
        )
        row[a["metric"]][u["broker"]] = a.get("p50")
    out = []
    for k in sorted(rows, key=lambda k: (k[0], order[k], k[2], k[3])):
        r = rows[k]
        r["latency_ratio"] = ratio(r["latency_s"].get(RATIO[0]), r["latency_s"].get(RATIO[1]))
        r["requests_ratio"] = ratio(
            r["coordination_requests"].get(RATIO[0]), r["coordination_requests"].get(RATIO[1])
        )
        out.append(r)
    return {"brokers": brokers, "rows": out}
