"""The legacy fidelity summary: herdlab's ZooKeeper-era member beside Kafka 0.8.2.2's own consumer.

Contract
--------
:func:`summary` (pure, from the document's units) returns None unless the run has legacy_zk units of
more than one legacy client (the unit's ``client``: ``""`` for herdlab's Python member, shown as
:data:`OURS`, or ``kafka-0.8.2.2``, the original). Otherwise ``{"clients": [...], "rows": [...]}``:
``clients`` with :data:`OURS` first, and one row per (pairing, trigger key), in case and trigger order,
where the pairing is a case's parameters without ``group.legacy_zk.client`` (so the case ``members=10``
of each client meet in one row):

* ``pairing`` (the parameters that made the row, ``"group.members=10"``, ``""`` for none), ``trigger``
  (``"#1 join"``), ``action``;
* ``metrics``: metric name (:data:`METRICS`, then ``zk_requests[<op>]`` for every ZooKeeper operation any
  repetition of either column made) -> client -> ``{"median", "ci95", "coverage", "n"}``: the median of the
  repetitions' values (:func:`harness.analysis.samples.trigger_sample`'s rule: latency never is
  +infinity, reported as ``"never"``; an operation a unit's trigger did not make counts 0 there), and
  the distribution-free interval of that median (:func:`median_interval`: order statistics, at least 95 %
  where the sample allows, else the widest there is, [min, max], with the coverage it has); None values
  for a client without repetitions;
* ``differs``: the metrics whose two intervals do not overlap (a difference to explain from the
  original's code).

Every count comes from the units' herd figures, which in a run with the ZooKeeper tap are the tap's for
both columns (:func:`harness.kernel.events.zk_counter`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from harness.analysis.definitions import metric
from harness.analysis.samples import breakdown_metric, case_order, trigger_sample
from harness.kernel.events import NEVER

#: herdlab's own legacy member (the unit's client is "" for it) and the setting that picks the client.
OURS = "python"
CLIENT_PARAM = "group.legacy_zk.client"
#: What the fidelity table compares, per trigger: latency, the herd figures and the split-brain figures.
METRICS = (
    "latency_s",
    "watches",
    "zk_requests",
    "owner_writes",
    "registration_reads",
    "conflicts",
    "rebalance_attempts",
    "failed_attempts",
    "overlap_episodes",
    "overlap_s",
    "commits_non_owner",
)
LEVEL = 0.95


def median_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float] | None:
    """The distribution-free confidence interval of the median of ``values`` (order statistics: the
    interval [x(j), x(n+1-j)] of the sorted sample covers the median with probability
    1 - 2 P(Binomial(n, 1/2) <= j - 1)): the narrowest such interval whose coverage is at least ``level``,
    or, when even [min, max] covers less (5 values or fewer for 95 %), [min, max]. Returns (low, high,
    coverage); None for an empty sample."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return None

    def coverage(j: int) -> float:
        tail = sum(math.comb(n, i) for i in range(j)) / 2**n
        return 1.0 - 2.0 * tail

    j = 1
    while j + 1 <= (n + 1) // 2 and coverage(j + 1) >= level:
        j += 1
    return xs[j - 1], xs[n - j], round(coverage(j), 4)


def _stat(values: list[float]) -> dict[str, Any]:
    """One column's figure of one metric: median, its interval and coverage, and n."""
    if not values:
        return {"median": None, "ci95": None, "coverage": None, "n": 0}
    xs = sorted(values)
    mid = len(xs) // 2
    med = xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
    iv = median_interval(xs)
    assert iv is not None
    return {
        "median": _show(med),
        "ci95": [_show(iv[0]), _show(iv[1])],
        "coverage": iv[2],
        "n": len(xs),
    }


def _show(v: float) -> float | str:
    return NEVER if math.isinf(v) else round(v, 3)


def _num(v: Any) -> float:
    return math.inf if v == NEVER else float(v)


def _disjoint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two columns' median intervals do not overlap (False when either has none)."""
    if a.get("ci95") is None or b.get("ci95") is None:
        return False
    (alo, ahi), (blo, bhi) = (map(_num, a["ci95"]), map(_num, b["ci95"]))
    return ahi < blo or bhi < alo


def client_of(u: Mapping[str, Any]) -> str:
    """A legacy unit's column: its client, :data:`OURS` for herdlab's member."""
    return str(u.get("client") or OURS)


def pairing(params: Mapping[str, Any] | None) -> str:
    """The parameters of a case that pair its units with the other client's (its client left out)."""
    return " ".join(f"{k}={v}" for k, v in sorted((params or {}).items()) if k != CLIENT_PARAM)


def summary(
    units: Sequence[Mapping[str, Any]], cases: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any] | None:
    """The legacy fidelity summary (see the module contract)."""
    legacy = [u for u in units if u.get("impl") == "legacy_zk" and not u.get("failed")]
    clients = sorted({client_of(u) for u in legacy}, key=lambda c: (c != OURS, c))
    if len(clients) < 2:
        return None
    params = {str(c.get("label")): c.get("params") or {} for c in cases}
    by: dict[tuple[str, str], dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    order: dict[tuple[str, str], tuple[int, int]] = {}
    action: dict[tuple[str, str], Any] = {}
    for u in legacy:
        p = pairing(params.get(str(u.get("case")), u.get("params")))
        for t in u.get("triggers") or []:
            key = (p, str(t.get("key")))
            by[key][client_of(u)].append(t)
            order.setdefault(key, (case_order(str(u.get("case")), cases), int(t.get("index") or 0)))
            action.setdefault(key, t.get("action"))
    rows = []
    for key in sorted(by, key=lambda k: order[k]):
        cols = by[key]
        ops = sorted({op for ts in cols.values() for t in ts for op in (t.get("zk_requests_by_op") or {})})
        names = [*METRICS, *(breakdown_metric("zk_requests", op) for op in ops)]
        figures: dict[str, dict[str, Any]] = {}
        for name in names:
            figures[name] = {}
            for c in clients:
                figures[name][c] = _stat(_sample(name, cols.get(c, [])))
        differs = [
            n for n, per in figures.items() if any(_disjoint(per[clients[0]], per[c]) for c in clients[1:])
        ]
        rows.append(
            {
                "pairing": key[0],
                "trigger": key[1],
                "action": action[key],
                "metrics": figures,
                "differs": differs,
            }
        )
    return {"clients": clients, "rows": rows}


def _sample(name: str, triggers: Sequence[Mapping[str, Any]]) -> list[float]:
    """The repetitions' values of ``name`` (a metric, or ``zk_requests[<op>]``: 0 where a measured trigger
    made no request of that operation)."""
    if not name.startswith("zk_requests["):
        return trigger_sample(metric(name), triggers)
    op = name[len("zk_requests[") : -1]
    total = metric("zk_requests")
    return [
        float((t.get("zk_requests_by_op") or {}).get(op, 0))
        for t, v in zip(triggers, (trigger_sample(total, [t]) for t in triggers), strict=True)
        if v
    ]
