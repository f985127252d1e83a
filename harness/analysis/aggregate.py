"""Statistics over repetitions and the run's alerts, from the per-unit metrics the checker computed.

``aggregate(out)`` fills ``out["aggregates"]``; ``alerts(out)`` fills ``out["alerts"]`` (see
:mod:`harness.analysis.analyze` for the format).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harness.analysis.definitions import TRIGGER_METRICS, UNIT_METRICS
from harness.analysis.stats import mean_ci

SENTINEL = 1e18  # stands for +infinity ("never") inside percentile computations


def case_order(label: str, cases: list[dict[str, Any]]) -> int:
    """A case's position in the scenario (unknown labels last)."""
    for c in cases:
        if c.get("label") == label:
            return int(c.get("index") or 0)
    return 10**6


def aggregate(out: dict[str, Any]) -> None:
    """Statistics over repetitions, computed by Spark from the per-unit values (see definitions)."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.getActiveSession()

    rows: list[tuple[Any, ...]] = []
    labels: dict[tuple[str, str, str], list[str]] = {}
    for u in out["units"]:
        if not u.get("events"):
            continue
        for t in u.get("triggers", []):
            for m in TRIGGER_METRICS:
                v = t.get(m.name)
                rows.append(
                    (u["impl"], u["case"], t["key"], t["index"], t["action"], m.name, _f(v), m.censored)
                )
            for op, v in (t.get("zk_requests_by_op") or {}).items():
                rows.append(
                    (
                        u["impl"],
                        u["case"],
                        t["key"],
                        t["index"],
                        t["action"],
                        f"zk_requests[{op}]",
                        _f(v),
                        False,
                    )
                )
            for api, v in (t.get("broker_requests_by_api") or {}).items():
                rows.append(
                    (
                        u["impl"],
                        u["case"],
                        t["key"],
                        t["index"],
                        t["action"],
                        f"broker_requests[{api}]",
                        _f(v),
                        False,
                    )
                )
            labels.setdefault((u["impl"], u["case"], t["key"]), t.get("targets") or [])
        for m in UNIT_METRICS:
            rows.append((u["impl"], u["case"], "unit", -1, "unit", m.name, _f(u.get(m.name)), False))
    if not rows:
        return
    # every trigger metric also pooled over the triggers of a case ("all")
    rows += [(r[0], r[1], "all", -2, "all", r[5], r[6], r[7]) for r in rows if r[2] != "unit"]
    # zero-filled by-op/API metrics: a repetition without that op had 0 of it
    reps: dict[tuple[str, str, str], int] = defaultdict(int)
    for u in out["units"]:
        for t in u.get("triggers", []):
            reps[(u["impl"], u["case"], t["key"])] += 1
            reps[(u["impl"], u["case"], "all")] += 1
    seen: dict[tuple[str, str, str, str], int] = defaultdict(int)
    meta: dict[tuple[str, str, str, str], tuple[int, str]] = {}
    for r in rows:
        if "[" in r[5]:
            seen[(r[0], r[1], r[2], r[5])] += 1
            meta[(r[0], r[1], r[2], r[5])] = (r[3], r[4])
    for key, n in seen.items():
        for _ in range(reps[key[:3]] - n):
            rows.append((key[0], key[1], key[2], meta[key][0], meta[key][1], key[3], 0.0, False))
    df = spark.createDataFrame(
        rows,
        "impl string, case string, tkey string, tindex int, action string, metric string, value double, censored boolean",
    )
    df = df.where(F.col("value").isNotNull() | F.col("censored"))
    filled = F.when(F.col("value").isNull(), F.lit(SENTINEL)).otherwise(F.col("value"))
    agg = df.groupBy("impl", "case", "tkey", "tindex", "action", "metric").agg(
        F.count("*").alias("n"),
        F.count("value").alias("k"),
        F.percentile(filled, F.array(F.lit(0.5), F.lit(0.95), F.lit(0.99))).alias("q"),
        F.max(filled).alias("max"),
        F.avg("value").alias("mean"),
        F.stddev_samp("value").alias("sd"),
    )
    res = []
    for r in agg.collect():
        q = [None if v is None or v >= SENTINEL / 10 else round(v, 6) for v in (r["q"] or [None] * 3)]
        mx = None if r["max"] is None or r["max"] >= SENTINEL / 10 else round(r["max"], 6)
        never = r["n"] - r["k"]
        ci = mean_ci(r["mean"], r["sd"], r["k"])
        note = ""
        if r["k"] == 1:
            note = "n=1"
        elif r["k"] == 0:
            note = "no finite value"
        if never:
            note = (note + "; " if note else "") + f"{never} of {r['n']} never"
        res.append(
            {
                "impl": r["impl"],
                "case": r["case"],
                "trigger": r["tkey"],
                "trigger_index": r["tindex"],
                "action": r["action"],
                "targets": labels.get((r["impl"], r["case"], r["tkey"]), []),
                "metric": r["metric"],
                "n": r["n"],
                "k": r["k"],
                "never": never,
                "p50": q[0],
                "p95": q[1],
                "p99": q[2],
                "max": mx,
                "mean": None if r["mean"] is None else round(r["mean"], 6),
                "ci95": None if ci is None else [round(ci[0], 6), round(ci[1], 6)],
                "ci_note": note,
            }
        )
    cases = out.get("cases") or []
    res.sort(
        key=lambda a: (
            case_order(a["case"], cases),
            a["trigger_index"] if a["trigger_index"] >= 0 else 10**6,
            a["metric"],
            a["impl"],
        )
    )
    out["aggregates"] = res


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


def alerts(out: dict[str, Any]) -> None:
    alerts = out["alerts"]
    for u in out["units"]:
        name = f"{u['impl']} {u['case']} rep {u['repetition']}"
        if u.get("lost"):
            sample = ", ".join(f"p{p}@{o}" for p, o in (u.get("lost_sample") or [])[:5])
            alerts.append(f"LOST {u['lost']} produced records in {name} (e.g. {sample})")
        if u.get("failed"):
            alerts.append(f"unit {name} failed: {u['failed']}")
        elif u.get("events") and not u.get("unit_started"):
            alerts.append(f"unit {name} has no unit_start event: the history of this unit is partial")
        for t in u.get("triggers", []):
            if not t.get("settled"):
                alerts.append(f"{name}: trigger {t['key']} {','.join(t['targets'])} never settled")
    if out["run"].get("interrupted"):
        alerts.append("the run was interrupted: results cover what was recorded")
