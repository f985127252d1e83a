"""The Coordinators summary: the same triggers served by different brokers, side by side.

Contract
--------
:func:`summary` (pure, from the document's units and aggregates) returns None unless the run's units
have more than one ``broker`` (:func:`harness.analysis.units.columns`: ``herdlab``, ``tansu``,
``apache-kafka 3.9.2``, ...). Otherwise ``{"brokers": [...], "reference": [...], "rows": [...]}``:
``brokers`` with herdlab first, ``reference`` the others (the third parties herdlab is compared with),
and one row per (implementation, trigger key, client, assignor), in trigger order:

* ``impl``, ``trigger`` (``"#1 join"``), ``action``, ``client``, ``assignor``;
* ``latency_s`` and ``coordination_requests``: broker -> the median (p50) of that metric's aggregate row
  of the case with that broker (a number, ``"never"``, or None when absent);
* ``requests_by_kind``: request kind (``JoinGroup``, ``Heartbeat``, ...) -> broker -> the median count
  of that kind (``broker_group_requests[KIND]``; a kind one broker saw and another did not is 0 there
  when that broker measured requests at all);
* ``vs``: reference broker -> ``latency_ratio`` and ``latency_ci95`` (herdlab / it: the ratio of the
  means of the repetitions' finite latencies with its 95 % confidence interval,
  :func:`harness.analysis.stats.ratio_of_means`; never-settled repetitions left out and counted in
  ``latency_never``), ``latency_n`` (finite values on each side), ``requests_ratio`` (of the medians),
  ``latency_outside`` (the interval lies wholly outside :data:`FIDELITY_BAND`; None without an
  interval) and ``kinds_differ`` (the kinds whose median counts differ).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, cast

from harness.analysis.definitions import metric
from harness.analysis.metrics_model import Aggregate, CoordinatorRow, Coordinators, Unit
from harness.analysis.samples import breakdown_op, trigger_sample
from harness.analysis.stats import ratio_of_means

#: The broker every ratio has as numerator.
OURS = "herdlab"
METRICS = ("latency_s", "coordination_requests")
#: The metric whose per-kind breakdown rows (``broker_group_requests[JoinGroup]``) feed ``requests_by_kind``.
KIND_METRIC = "broker_group_requests"
#: A latency ratio whose whole 95 % interval lies outside this band is a fidelity difference to explain.
FIDELITY_BAND = (0.9, 1.1)

Key = tuple[str, str, str, str]


def ratio(a: Any, b: Any) -> float | None:
    """a / b rounded to 3 decimals; None unless both are finite numbers and b is not 0."""
    if not isinstance(a, int | float) or not isinstance(b, int | float) or isinstance(a, bool):
        return None
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return None
    return round(a / b, 3)


def _latency_vs(ours: list[float], theirs: list[float]) -> dict[str, Any]:
    """The latency comparison of two samples (+infinity = never settled) under ``vs``."""
    fin_a = [v for v in ours if math.isfinite(v)]
    fin_b = [v for v in theirs if math.isfinite(v)]
    r = ratio_of_means(fin_a, fin_b)
    lo, hi = FIDELITY_BAND
    outside = None if r.ci95 is None else (r.ci95[1] < lo or r.ci95[0] > hi)
    return {
        "latency_ratio": r.ratio,
        "latency_ci95": None if r.ci95 is None else list(r.ci95),
        "latency_n": list(r.n),
        "latency_never": [len(ours) - len(fin_a), len(theirs) - len(fin_b)],
        "latency_outside": outside,
    }


def summary(units: Sequence[Unit], aggregates: Sequence[Aggregate]) -> Coordinators | None:
    """The Coordinators summary (see the module contract)."""
    col: dict[tuple[str, str], Mapping[str, Any]] = {
        (u["impl"], u["case"]): u for u in units if u.get("broker")
    }
    brokers = sorted({u["broker"] for u in col.values()}, key=lambda b: (b != OURS, b))
    if len(brokers) < 2:
        return None
    reference = [b for b in brokers if b != OURS]
    rows: dict[Key, dict[str, Any]] = {}
    order: dict[Key, int] = {}
    measured: dict[Key, set[str]] = defaultdict(set)  # brokers with a coordination_requests row
    for a in aggregates:
        name = a.get("metric") or ""
        kind = breakdown_op(name, KIND_METRIC)
        if a.get("trigger") == "unit" or (name not in METRICS and kind is None):
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
                "requests_by_kind": {},
            },
        )
        if kind is None:
            row[name][u["broker"]] = a.get("p50")
            if name == "coordination_requests":
                measured[k].add(u["broker"])
        else:
            row["requests_by_kind"].setdefault(kind, {b: None for b in brokers})[u["broker"]] = a.get("p50")
    samples = _latency_samples(units)
    out = []
    for k in sorted(rows, key=lambda k: (k[0], order[k], k[2], k[3])):
        r = rows[k]
        kinds = r["requests_by_kind"]
        for kind in kinds:
            for b in measured[k]:
                if kinds[kind][b] is None:
                    kinds[kind][b] = 0
        r["requests_by_kind"] = {kind: kinds[kind] for kind in sorted(kinds)}
        r["vs"] = {}
        for b in reference:
            v = _latency_vs(samples.get((*k, OURS), []), samples.get((*k, b), []))
            v["requests_ratio"] = ratio(
                r["coordination_requests"].get(OURS), r["coordination_requests"].get(b)
            )
            v["kinds_differ"] = [
                kind
                for kind, by in r["requests_by_kind"].items()
                if OURS in measured[k] and b in measured[k] and by.get(OURS) != by.get(b)
            ]
            r["vs"][b] = v
        out.append(r)
    return {"brokers": brokers, "reference": reference, "rows": cast(list[CoordinatorRow], out)}


def _latency_samples(units: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str, str, str], list[float]]:
    """(impl, trigger key, client, assignor, broker) -> the latency sample over the repetitions of the
    live units with that column (:func:`harness.analysis.samples.trigger_sample`)."""
    by: dict[tuple[str, str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for u in units:
        if u.get("failed") or not u.get("broker"):
            continue
        for t in u.get("triggers") or []:
            by[(u["impl"], t["key"], u.get("client") or "", u.get("assignor") or "", u["broker"])].append(t)
    latency = metric("latency_s")
    return {k: trigger_sample(latency, ts) for k, ts in by.items()}
