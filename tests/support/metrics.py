"""Metrics dicts written by hand in the shape the checker produces (units and triggers of the metrics
contract), with aggregates, verdict and alerts computed by the real :mod:`harness.analysis.aggregate`:
for statistics, rendering and comparison tests that need no Spark.

The default run (:func:`metrics`): implementations legacy_zk and coordinator, cases ``members=3`` and
``members=6`` (N), three repetitions, one crash trigger ``#1 crash`` of m1. Per repetition r (0, 1, 2):

* latency: legacy 2 N / 3 + (r - 1) * 0.2 s, coordinator N / 3 + (r - 1) * 0.2 s
  (members=3: legacy 1.8 / 2.0 / 2.2 s, coordinator 0.8 / 1.0 / 1.2 s);
* coordination requests: legacy N^2 + r (ZooKeeper only), coordinator 2 N + r (broker only).
"""

from __future__ import annotations

import copy
from typing import Any

from harness.analysis.aggregate import aggregate, alerts
from harness.analysis.definitions import DEFINITIONS

CASES = (("members=3", 3), ("members=6", 6))
IMPLS = ("legacy_zk", "coordinator")
#: Every implementation, in the order a run names them (a hand-built run may have a consumer column too).
ORDER = (*IMPLS, "consumer")


def trigger(
    index: int = 0,
    action: str = "crash",
    outcome: str = "settled",
    latency: float | None = 1.0,
    requests: int = 10,
    impl: str = "legacy_zk",
    **kw: Any,
) -> dict[str, Any]:
    """One trigger of the metrics contract; latency parts only when settled."""
    settled = outcome == "settled"
    legacy = impl == "legacy_zk"
    t: dict[str, Any] = {
        "index": index,
        "key": f"#{index + 1} {action}",
        "action": action,
        "targets": ["m1"],
        "outcome": outcome,
        "settled": settled,
        "t0_s": 5.0,
        "t1_s": 5.0 + latency if settled and latency is not None else None,
        "latency_s": latency if settled else None,
        "detection_s": round(latency / 4, 6) if settled and latency is not None else None,
        "convergence_s": round(latency * 3 / 4, 6) if settled and latency is not None else None,
        "resumed_s": round(latency + 0.1, 6) if settled and latency is not None else None,
        "startup_s": 0.7 if action == "join" else None,
        "watches": requests // 2 if legacy else 0,
        "zk_requests": requests if legacy else 0,
        "zk_requests_by_op": {"getChildren": requests // 2, "create": requests - requests // 2}
        if legacy
        else {},
        "zk_packets": None,
        "broker_group_requests": None if legacy else requests,
        "broker_requests_by_api": {}
        if legacy
        else {"JoinGroup": requests // 2, "SyncGroup": requests - requests // 2},
        "coordination_requests": requests,
        "conflicts": 1 if legacy else 0,
        "failed_attempts": 0,
        "rebalance_attempts": 3,
        "group_rebalances": None if legacy else 1,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "duplicates": 0,
        "commits_non_owner": 0,
        "commits_stale_generation": None if legacy else 0,
    }
    t.update(kw)
    return t


def unit(impl: str, case: str, rep: int, triggers: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    """One unit of the metrics contract."""
    legacy = impl == "legacy_zk"
    u: dict[str, Any] = {
        "case": case,
        "impl": impl,
        "repetition": rep,
        "produced": 50,
        "processed": 50,
        "lost": 0,
        "not_drained": 0,
        "duplicates": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "commits_non_owner": 0,
        "commits_stale_generation": None if legacy else 0,
        "commits_rejected": 0,
        "session_failures": 0,
        "steady": {"window_s": 10.0, "zk_commits_per_s": 2.0 if legacy else None, "broker_per_s": {}},
        "startup": {},
        "triggers": triggers,
    }
    u.update(kw)
    return u


def default_units() -> list[dict[str, Any]]:
    """The units of the default run (see the module docstring)."""
    units = []
    for impl in IMPLS:
        for case, n in CASES:
            for rep in range(3):
                base = 2 * n / 3 if impl == "legacy_zk" else n / 3
                latency = round(base + (rep - 1) * 0.2, 6)
                requests = n * n + rep if impl == "legacy_zk" else 2 * n + rep
                units.append(unit(impl, case, rep, [trigger(latency=latency, requests=requests, impl=impl)]))
    return units


def build(units: list[dict[str, Any]], repetitions: int | None = None, **run: Any) -> dict[str, Any]:
    """A metrics dict around ``units``: run header, cases, definitions; aggregates, verdict and
    alerts from :mod:`harness.analysis.aggregate`."""
    labels = []
    for u in units:
        if u["case"] not in labels:
            labels.append(u["case"])
    impls = [i for i in ORDER if any(u["impl"] == i for u in units)]
    reps = repetitions if repetitions is not None else 1 + max((u["repetition"] for u in units), default=-1)
    out: dict[str, Any] = {
        "format": "herdlab-metrics/2",
        "run": {
            "run_id": "r1",
            "scenario": "herd",
            "implementations": impls,
            "repetitions": reps,
            "settle_window_s": 3.0,
            **run,
        },
        "spark": {"master": "local[2]", "version": "4.3.0", "analysis_s": 1.0},
        "definitions": [list(d) for d in DEFINITIONS],
        "cases": [
            {"index": i, "label": c, "members": int(c.split("=")[1]) if "=" in c else None}
            for i, c in enumerate(labels)
        ],
        "units": copy.deepcopy(units),
        "aggregates": [],
        "series": {"rate": [], "gaps": [], "timelines": []},
        "alerts": [],
    }
    aggregate(out)
    alerts(out)
    return out


def metrics(lost: int = 0, not_drained: int = 0) -> dict[str, Any]:
    """The default run; ``lost`` / ``not_drained`` records in every unit of legacy_zk members=3."""
    units = default_units()
    for u in units:
        if (u["impl"], u["case"]) == ("legacy_zk", "members=3"):
            u["lost"] = lost
            u["not_drained"] = not_drained
            u["processed"] = 50 - lost - not_drained
            if lost:
                u["lost_sample"] = [[0, 7]]
    out = build(units)
    out["series"] = copy.deepcopy(SERIES)
    return out


def row(m: dict[str, Any], impl: str, case: str, trigger: str, metric: str) -> dict[str, Any]:
    """The one aggregate row of (impl, case, trigger, metric)."""
    (a,) = [
        a
        for a in m["aggregates"]
        if (a["impl"], a["case"], a["trigger"], a["metric"]) == (impl, case, trigger, metric)
    ]
    return a


def units_of(m: dict[str, Any], impl: str, case: str) -> list[dict[str, Any]]:
    return [u for u in m["units"] if (u["impl"], u["case"]) == (impl, case)]


SERIES: dict[str, Any] = {
    "rate": [
        {
            "case": "members=3",
            "impl": "legacy_zk",
            "repetition": 0,
            "bin_s": 0.5,
            "t_s": [i * 0.5 for i in range(24)],
            "rate": [100.0 if not 10 <= i < 14 else 0.0 for i in range(24)],
            "triggers": [[5.0, "#1 crash", 7.0]],
            "gaps": [[5.0, 7.0]],
        }
    ],
    "gaps": [],
    "timelines": [
        {
            "case": "members=3",
            "impl": "legacy_zk",
            "repetition": 0,
            "partitions": [0, 1, 2],
            "partitions_total": 3,
            "start_s": -1.0,
            "end_s": 12.0,
            "claims": [[0, "m0", 0.0, 12.0], [1, "m1", 0.0, 7.0], [1, "m2", 6.5, 12.0], [2, "m2", 0.0, 12.0]],
            "suspended": [["m1", 5.0, 7.0]],
            "overlaps": [[1, 6.8, 7.0]],
            "triggers": [[5.0, "#1 crash", 7.0]],
        }
    ],
}
