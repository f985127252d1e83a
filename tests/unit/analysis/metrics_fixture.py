"""A small metrics dict written by hand (the shape analyze_run returns), for rendering and
comparison tests that need no Spark."""

from __future__ import annotations

import copy
from typing import Any

from harness.analysis.definitions import DEFINITIONS


def agg(
    impl: str,
    case: str,
    trigger: str,
    metric: str,
    p50: float | None,
    *,
    n: int = 3,
    never: int = 0,
    index: int = 0,
    **kw: Any,
) -> dict[str, Any]:
    k = n - never
    return {
        "impl": impl,
        "case": case,
        "trigger": trigger,
        "trigger_index": -1 if trigger == "unit" else (-2 if trigger == "all" else index),
        "action": trigger.split()[-1] if trigger.startswith("#") else trigger,
        "targets": ["m1"] if trigger.startswith("#") else [],
        "metric": metric,
        "n": n,
        "k": k,
        "never": never,
        "p50": p50,
        "p95": kw.get("p95", p50),
        "p99": kw.get("p99", p50),
        "max": kw.get("max", p50),
        "mean": kw.get("mean", p50),
        "ci95": kw.get("ci95"),
        "ci_note": kw.get("ci_note", ""),
    }


def metrics(lost: int = 0) -> dict[str, Any]:
    """Two implementations, cases N=3 and N=6, one crash trigger, repetitions 3."""
    aggs = []
    units = []
    for impl, base in (("legacy_zk", 2.0), ("coordinator", 1.0)):
        for case, n in (("members=3", 3), ("members=6", 6)):
            t = "#1 crash"
            aggs += [
                agg(impl, case, t, "latency_s", base * n / 3, ci95=[base * n / 3 - 0.2, base * n / 3 + 0.2]),
                agg(impl, case, t, "detection_s", 0.5),
                agg(impl, case, t, "watches", float(n) if impl == "legacy_zk" else 0.0),
                agg(impl, case, t, "zk_requests", 1.5 * n * n if impl == "legacy_zk" else 0.0),
                agg(impl, case, "all", "zk_requests", 1.5 * n * n if impl == "legacy_zk" else 0.0),
                agg(impl, case, "all", "watches", float(n) if impl == "legacy_zk" else 0.0),
                agg(impl, case, t, "zk_requests[getChildren]", float(n) if impl == "legacy_zk" else 0.0),
                agg(impl, case, "unit", "lost", float(lost)),
                agg(impl, case, "unit", "duplicates", 2.0),
            ]
            for rep in range(3):
                units.append(
                    {
                        "case": case,
                        "impl": impl,
                        "repetition": rep,
                        "events": 100,
                        "partitions": n,
                        "members": n,
                        "params": {"group.members": n},
                        "produced": 50,
                        "processed": 50 - lost,
                        "lost": lost,
                        "lost_sample": [[0, 7]] if lost else [],
                        "duplicates": 2,
                        "overlaps": 0,
                        "overlap_s": 0.0,
                        "commits_non_owner": 0,
                        "commits_stale_generation": None,
                        "startup": {},
                        "triggers": [
                            {
                                "index": 0,
                                "key": "#1 crash",
                                "action": "crash",
                                "targets": ["m1"],
                                "t0_s": 5.0,
                                "t1_s": 5.0 + base,
                                "settled": True,
                                "latency_s": base * n / 3,
                                "detection_s": 0.5,
                                "watches": n,
                            }
                        ],
                    }
                )
    timeline = {
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
    rate = {
        "case": "members=3",
        "impl": "legacy_zk",
        "repetition": 0,
        "bin_s": 0.5,
        "t_s": [i * 0.5 for i in range(24)],
        "rate": [100.0 if not 10 <= i < 14 else 0.0 for i in range(24)],
        "triggers": [[5.0, "#1 crash", 7.0]],
        "gaps": [[5.0, 7.0]],
    }
    alerts = [f"LOST {lost} produced records in legacy_zk members=3 rep 0 (e.g. p0@7)"] if lost else []
    return copy.deepcopy(
        {
            "format": "herdlab-metrics/1",
            "run": {
                "run_id": "r1",
                "scenario": "herd",
                "implementations": ["legacy_zk", "coordinator"],
                "repetitions": 3,
                "settle_window_s": 3.0,
            },
            "spark": {"master": "local[2]", "version": "4.3.0", "analysis_s": 1.0},
            "definitions": [list(d) for d in DEFINITIONS],
            "cases": [
                {
                    "index": 0,
                    "label": "members=3",
                    "params": {"group.members": 3},
                    "members": 3,
                    "partitions": 3,
                },
                {
                    "index": 1,
                    "label": "members=6",
                    "params": {"group.members": 6},
                    "members": 6,
                    "partitions": 6,
                },
            ],
            "units": units,
            "aggregates": aggs,
            "series": {"rate": [rate], "gaps": [], "timelines": [timeline]},
            "alerts": alerts,
        }
    )
