"""``analyze_run``: one run directory in, the metrics dict (also ``metrics.json``'s content) out.

Contract
--------
``analyze_run(run_dir, spark_master=None) -> dict`` reads ``run_dir/history.parquet`` and
``manifest.json``, runs the jobs of :mod:`harness.analysis.jobs` on Spark (local mode unless
``spark_master`` names a cluster) and returns a JSON-serialisable dict (see :data:`FORMAT`):

* ``format``, ``run`` (run id, scenario, settle window, backend, versions...), ``spark``,
  ``definitions`` ([term, text] pairs), ``metric_info`` (label / unit / family per metric name),
  ``cases`` (from the manifest), ``alerts`` (one line each: lost records, failed units, triggers
  that never settled);
* ``units``: one dict per unit with completeness and split-brain totals, ``triggers`` (per trigger:
  t0_s, t1_s, settled, latency parts, herd counts, by-operation/API maps, split brain in its
  window) and ``startup`` (split brain before the first trigger);
* ``aggregates``: per implementation, case and trigger key (``"#1 join"``; ``"unit"`` for unit
  totals) and metric: n, never, k (finite values), p50, p95, p99, max, mean, ci95 ([lo, hi] or
  None) and ci_note (``"n=1"`` ...);
* ``series``: rate of processed records per unit (for the consumption plot), the longest gap per
  trigger, and ownership timelines (claims, suspensions, overlaps) of chosen units.

Times inside ``units`` and ``series`` are seconds since the unit's origin (its ``stable`` event,
else ``unit_start``, else its first event). A run with an empty history yields no units but a valid
dict. Errors in the input raise :class:`~harness.kernel.errors.ConfigError` (see :mod:`.load`).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.analysis.aggregate import aggregate, alerts, case_order
from harness.analysis.definitions import DEFINITIONS, METRICS, metric
from harness.analysis.load import RunInputs, load_run
from harness.analysis.spark import spark_session
from harness.kernel.events import SETTLED, SKIPPED

FORMAT = "herdlab-metrics/2"
MAX_TIMELINES = 12
MAX_TIMELINE_PARTITIONS = 64
MAX_RATE_POINTS = 1500
LOST_SAMPLE = 20

UnitKey = tuple[str, str, int]


def analyze_run(run_dir: str | Path, spark_master: str | None = None) -> dict[str, Any]:
    """Analyse one run directory (see the module contract)."""
    inputs = load_run(run_dir)
    t = time.monotonic()
    spark = spark_session(spark_master)
    started = time.monotonic() - t
    metrics = analyze(spark, inputs)
    metrics["spark"]["session_s"] = round(started, 3)
    return metrics


def _key(d: dict[str, Any]) -> UnitKey:
    return (d["case"], d["impl"], int(d["repetition"]))


def _s(ns: int | None, origin: int) -> float | None:
    return None if ns is None else round((ns - origin) / 1e9, 6)


def _dur(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else round((b - a) / 1e9, 6)


def analyze(spark: Any, inputs: RunInputs) -> dict[str, Any]:
    """Run the jobs on an already running ``spark`` session (see :func:`analyze_run`)."""
    from pyspark.sql import functions as F

    from harness.analysis import jobs as J

    t_start = time.monotonic()
    man = inputs.manifest
    window_s = inputs.settle_window_s
    cases = list(man.get("cases") or [])
    case_by_label = {c.get("label"): c for c in cases}
    scenario = man.get("scenario") or {}
    out: dict[str, Any] = {
        "format": FORMAT,
        "run": {
            "run_id": man.get("run_id"),
            "scenario": scenario.get("name"),
            "description": scenario.get("description"),
            "settle_window_s": window_s,
            "repetitions": man.get("repetitions"),
            "implementations": scenario.get("implementations"),
            "backend": man.get("backend"),
            "started": man.get("started"),
            "finished": man.get("finished"),
            "interrupted": man.get("interrupted"),
            "git_commit": man.get("git_commit"),
            "versions": man.get("versions"),
            "machine": man.get("machine"),
            "history_rows": inputs.rows,
            "run_dir": str(inputs.run_dir),
        },
        "spark": {"master": spark.sparkContext.master, "version": spark.version},
        "definitions": [list(d) for d in DEFINITIONS],
        "metric_info": {},
        "cases": cases,
        "units": [],
        "aggregates": [],
        "series": {"rate": [], "gaps": [], "timelines": []},
        "alerts": [],
    }
    manifest_units = {
        (u.get("case"), u.get("impl"), int(u.get("repetition") or 0)): u for u in man.get("units") or []
    }

    from harness.analysis.spark import shuffle_partitions_for

    parts = shuffle_partitions_for(inputs.rows, spark.sparkContext.defaultParallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(parts))
    out["spark"]["shuffle_partitions"] = parts
    frames = J.prepare(spark, str(inputs.history))
    U = J.UNIT
    bounds = J.collect(
        frames.raw.groupBy(*U).agg(
            F.min("ts_ns").alias("t_first"), F.max("ts_ns").alias("t_last"), F.count("*").alias("events")
        )
    )
    c = frames.control
    marks = {
        _key(r): r
        for r in J.collect(
            c.where(F.col("kind").isin("unit_start", "stable"))
            .groupBy(*U)
            .agg(
                F.min(F.when(F.col("kind") == "unit_start", F.col("ts_ns"))).alias("t_start"),
                F.min(F.when(F.col("kind") == "stable", F.col("ts_ns"))).alias("t_stable"),
                F.first(F.when(F.col("kind") == "unit_start", F.col("partitions")), ignorenulls=True).alias(
                    "p"
                ),
                F.first(F.when(F.col("kind") == "unit_start", F.col("topic")), ignorenulls=True).alias(
                    "topic"
                ),
            )
        )
    }
    units: dict[UnitKey, dict[str, Any]] = {}
    for b in bounds:
        k = _key(b)
        m = marks.get(k, {})
        p0 = None
        if m.get("p") is not None:
            try:
                p0 = int(m["p"])
            except ValueError:
                p0 = None
        if p0 is None:
            p0 = int((case_by_label.get(k[0]) or {}).get("partitions") or 0)
        origin = m.get("t_stable") or m.get("t_start") or b["t_first"]
        units[k] = {
            "case": k[0],
            "impl": k[1],
            "repetition": k[2],
            "events": b["events"],
            "partitions": p0,
            "t_first": b["t_first"],
            "t_last": b["t_last"],
            "origin": origin,
            "duration_s": round((b["t_last"] - origin) / 1e9, 3),
            "unit_started": m.get("t_start") is not None,
        }
    for k, mu in manifest_units.items():
        if k not in units:
            units[k] = {"case": k[0], "impl": k[1], "repetition": k[2], "events": 0, "partitions": None}
        if mu.get("failed"):
            units[k]["failed"] = mu["failed"]
    for k, u in units.items():
        case = case_by_label.get(k[0]) or {}
        u["members"] = case.get("members")
        u["params"] = case.get("params") or {}
    analysed = {k: u for k, u in units.items() if u.get("events")}
    if analysed:
        try:
            _run_jobs(spark, frames, analysed, window_s, out)
        finally:
            spark.catalog.clearCache()  # the session may serve further analyses
    # units without events (failed before anything was recorded)
    for k, u in units.items():
        if k not in analysed:
            u.setdefault("triggers", [])
    out["units"] = [
        _public_unit(units[k]) for k in sorted(units, key=lambda k: (case_order(k[0], cases), k[1], k[2]))
    ]
    aggregate(out)
    alerts(out)
    names = {a["metric"] for a in out["aggregates"]} | set(METRICS)
    out["metric_info"] = {
        n: {
            "label": metric(n).label,
            "unit": metric(n).unit,
            "family": metric(n).family,
            "censored": metric(n).censored,
        }
        for n in sorted(names)
    }
    out["spark"]["analysis_s"] = round(time.monotonic() - t_start, 3)
    return out


def _public_unit(u: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in u.items() if k not in ("t_first", "t_last", "origin")}


def _run_jobs(
    spark: Any, frames: Any, units: dict[UnitKey, dict[str, Any]], window_s: float, out: dict[str, Any]
) -> None:
    from pyspark.sql import functions as F

    from harness.analysis import jobs as J

    U = J.UNIT
    jobs = J.Jobs(spark, frames, window_s)
    res = jobs.resumed()
    buckets = jobs.buckets()
    tgap = jobs.trigger_gaps(buckets, res)
    trig_rows = J.collect(jobs.windows().join(res, [*U, "tid"], "left").join(tgap, [*U, "tid"], "left"))
    herd: dict[tuple[Any, ...], dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for r in J.collect(jobs.herd()):
        herd[(*_key(r), r["tid"])][r["table"]][r["key"]] = int(r["value"])
    samples: dict[UnitKey, list[tuple[int, str, float | None]]] = defaultdict(list)
    for r in J.collect(jobs.mntr()):
        samples[_key(r)].append((r["ts_ns"], r["label"] or "", r["packets"]))
    # split brain
    segs = jobs.segments()
    islands = jobs.overlap_islands(segs)
    keys = jobs.record_keys().cache()
    dups = keys.where(F.col("n") > 1)
    commits = J.pin(jobs.commits())
    ph = jobs.phases()
    accepted = J.to_phase(commits.where(~F.col("rejected")), ph, "ts_ns")

    def phase_agg(df: Any, name: str, agg: Any) -> Any:
        return (
            df.groupBy(*U, "tid")
            .agg(agg.alias("v"))
            .select(*U, "tid", F.lit(name).alias("key"), F.col("v").cast("double").alias("value"))
        )

    per_phase: dict[tuple[Any, ...], dict[str, Any]] = defaultdict(dict)
    for r in J.collect(
        phase_agg(J.to_phase(islands, ph, "istart"), "overlap_episodes", F.count("*"))
        .unionByName(
            phase_agg(
                J.to_phase(islands, ph, "istart"), "overlap_s", F.sum(F.col("iend") - F.col("istart")) / J.NS
            )
        )
        .unionByName(phase_agg(J.to_phase(dups, ph, "last"), "duplicates", F.count("*")))
        .unionByName(
            phase_agg(accepted, "commits_non_owner", F.sum(F.when(F.col("non_owner"), 1).otherwise(0)))
        )
        .unionByName(
            phase_agg(accepted, "commits_stale_generation", F.sum(F.when(F.col("stale"), 1).otherwise(0)))
        )
        .unionByName(phase_agg(accepted, "commits_with_generation", F.count("stale")))
    ):
        per_phase[(*_key(r), r["tid"])][r["key"]] = r["value"]

    def unit_agg(df: Any, *aggs: tuple[str, Any]) -> Any:
        names = [a[0] for a in aggs]
        m = F.create_map(*[x for n in names for x in (F.lit(n), F.col(n).cast("double"))])
        return (
            df.groupBy(*U)
            .agg(*(a[1].alias(a[0]) for a in aggs))
            .select(*U, F.explode(m).alias("key", "value"))
        )

    def count(cond: Any) -> Any:
        return F.sum(F.when(cond, 1).otherwise(0))

    acked, seen = F.col("produced") == 1, F.col("n") > 0
    unit_rows = J.collect(
        unit_agg(
            keys,
            ("produced", F.sum("produced")),
            ("processed", count(acked & seen)),
            ("lost", count(acked & ~seen & (F.col("offset") < F.col("top")))),
            (
                "not_drained",
                count(acked & ~seen & (F.col("top").isNull() | (F.col("offset") > F.col("top")))),
            ),
            ("phantom", count((F.col("produced") == 0) & seen)),
            ("duplicates", count(F.col("n") > 1)),
            ("duplicate_deliveries", F.sum(F.when(F.col("n") > 1, F.col("n") - 1).otherwise(0))),
            ("duplicates_cross_member", count((F.col("n") > 1) & F.col("cross"))),
        )
        .unionByName(jobs.unit_counters())
        .unionByName(unit_agg(commits.where(F.col("rejected")), ("commits_rejected", F.count("*"))))
    )
    per_unit: dict[UnitKey, dict[str, float]] = defaultdict(dict)
    for r in unit_rows:
        per_unit[_key(r)][r["key"]] = r["value"]
    samples_lost: dict[UnitKey, list[list[int]]] = defaultdict(list)
    if any(v.get("lost") for v in per_unit.values()):
        lost = keys.where(acked & ~seen & (F.col("offset") < F.col("top")))
        for r in J.collect(
            lost.withColumn(
                "rn", F.row_number().over(J.Window.partitionBy(*U).orderBy("partition", "offset"))
            ).where(F.col("rn") <= LOST_SAMPLE)
        ):
            samples_lost[_key(r)].append([r["partition"], r["offset"]])

    by_unit: dict[UnitKey, list[dict[str, Any]]] = defaultdict(list)
    for r in trig_rows:
        by_unit[_key(r)].append(r)
    for k, u in units.items():
        origin = u["origin"]
        pu = per_unit.get(k, {})
        has_broker = bool(pu.get("has_broker"))
        has_mntr = bool(pu.get("has_mntr"))
        rows = sorted(by_unit.get(k, []), key=lambda r: r["tid"])
        triggers = []
        for r in rows:
            tk = (*k, r["tid"])
            h = herd.get(tk, {})
            hc = h.get("herd", {})
            settled = r["outcome"] == SETTLED
            t0, t1, react = r["t0"], r["t1"], r["t_react"]
            measured = r["outcome"] != SKIPPED
            zk = hc.get("zk_requests", 0) if measured else None
            bg = (hc.get("broker_group_requests", 0) if has_broker else None) if measured else None
            trig = {
                "index": r["tid"],
                "key": f"#{r['tid'] + 1} {r['action']}",
                "action": r["action"],
                "targets": r["targets"] or [],
                "outcome": r["outcome"],
                "reason": r["reason"],
                "settled": settled,
                "invoke_s": _s(r["invoke"], origin),
                "t0_s": _s(t0, origin),
                "t1_s": _s(t1, origin),
                "window_end_s": _s(r["wend"], origin),
                "startup_s": _dur(r["invoke"], r["invoke"] + r["startup"])
                if r["startup"] is not None
                else None,
                "latency_s": _dur(t0, t1) if settled else None,
                "detection_s": _dur(t0, react) if settled else None,
                "convergence_s": _dur(react, t1) if settled else None,
                "reaction_s": _dur(t0, react),
                "resumed_s": _dur(t0, r["t_resumed"]) if settled else None,
                "gap_s": _dur(r["gap_start"], r["gap_end"]),
                "gap": [_s(r["gap_start"], origin), _s(r["gap_end"], origin)]
                if r["gap_start"] is not None
                else None,
                "watches": hc.get("watches", 0) if measured else None,
                "zk_requests": zk,
                "zk_packets": _packets(samples.get(k, []), r["invoke"]) if has_mntr and measured else None,
                "broker_group_requests": bg,
                "coordination_requests": None
                if zk is None or (bg is None and u["impl"] != "legacy_zk")
                else zk + (bg or 0),
                "conflicts": hc.get("conflicts", 0) if measured else None,
                "failed_attempts": hc.get("failed_attempts", 0) if measured else None,
                "gave_up": hc.get("gave_up", 0) if measured else None,
                "rebalance_attempts": hc.get("rebalance_attempts", 0) if measured else None,
                "group_rebalances": hc.get("group_rebalances", 0) if has_broker and measured else None,
                "zk_requests_by_op": dict(sorted(h.get("op", {}).items())),
                "broker_requests_by_api": dict(sorted(h.get("api", {}).items())) if has_broker else {},
                **_split_brain(per_phase.get(tk, {})),
            }
            triggers.append(trig)
        u["triggers"] = triggers
        u["startup"] = _split_brain(per_phase.get((*k, J.STARTUP), {}))
        u["drain"] = _split_brain(per_phase.get((*k, J.DRAIN), {}))

        def iv(name: str, pu: dict[str, float] = pu) -> int:
            return int(pu.get(name) or 0)

        window_ns = pu.get("steady_window_ns") or 0.0
        per_s = 1e9 / window_ns if window_ns > 0 else None
        u.update(
            {
                "produced": iv("produced"),
                "processed": iv("processed"),
                "lost": iv("lost"),
                "lost_sample": samples_lost.get(k, []),
                "not_drained": iv("not_drained"),
                "processed_not_produced": iv("phantom"),
                "produce_errors": iv("produce_errors"),
                "duplicates": iv("duplicates"),
                "duplicate_deliveries": iv("duplicate_deliveries"),
                "duplicates_cross_member": iv("duplicates_cross_member"),
                "commits_rejected": iv("commits_rejected"),
                "session_failures": iv("session_failures"),
                "session_failures_startup": iv("session_failures_startup"),
                "steady": {
                    "window_s": round(window_ns / 1e9, 3),
                    "zk_commits_per_s": round(pu.get("zk_commits", 0.0) * per_s, 3) if per_s else None,
                    "broker_per_s": {
                        key.split(":", 1)[1]: round(v * per_s, 3)
                        for key, v in sorted(pu.items())
                        if key.startswith("broker:") and per_s
                    },
                },
            }
        )
        # unit totals of split brain: before the first trigger and in the trigger windows (the
        # drain and teardown are reported apart, in `drain`)
        phases = [u["startup"], *triggers]
        u["overlap_episodes"] = int(sum(t.get("overlap_episodes") or 0 for t in phases))
        u["overlap_s"] = round(sum(t.get("overlap_s") or 0 for t in phases), 6)
        u["commits_non_owner"] = int(sum(t.get("commits_non_owner") or 0 for t in phases))
        gen_known = sum(
            (per_phase.get((*k, tid), {}).get("commits_with_generation") or 0)
            for tid in [J.STARTUP, *[t["index"] for t in triggers]]
        )
        u["commits_stale_generation"] = (
            int(sum((t.get("commits_stale_generation") or 0) for t in phases)) if gen_known else None
        )
    _series(spark, jobs, buckets, islands, units, out)


def _packets(samples: list[tuple[int, str, float | None]], invoke: int) -> int | None:
    """ZooKeeper packets received in a window: from the mntr sample taken just before this
    trigger's invoke to the sample at the window's far edge (the next trigger's, else settling_end)."""
    samples = sorted(samples)
    start = max((s for s in samples if s[1].startswith("invoke:") and s[0] <= invoke), default=None)
    end = next(
        (s for s in samples if s[0] > invoke and (s[1].startswith("invoke:") or s[1] == "settling_end")), None
    )
    if start is None or end is None or start[2] is None or end[2] is None:
        return None
    return int(end[2] - start[2])


def _split_brain(sb: dict[str, Any]) -> dict[str, Any]:
    return {
        "overlap_episodes": int(sb.get("overlap_episodes") or 0),
        "overlap_s": round(float(sb.get("overlap_s") or 0.0), 6),
        "duplicates": int(sb.get("duplicates") or 0),
        "commits_non_owner": int(sb.get("commits_non_owner") or 0),
        "commits_stale_generation": int(sb.get("commits_stale_generation") or 0)
        if sb.get("commits_with_generation")
        else None,
    }


def _series(
    spark: Any,
    jobs: Any,
    buckets: Any,
    islands: Any,
    units: dict[UnitKey, dict[str, Any]],
    out: dict[str, Any],
) -> None:
    from pyspark.sql import functions as F

    from harness.analysis import jobs as J

    U = J.UNIT
    longest = max((u["t_last"] - u["t_first"]) / 1e9 for u in units.values())
    factor = max(J.RATE_BIN_BUCKETS, math.ceil(longest / 0.1 / MAX_RATE_POINTS))
    bin_s = factor * J.GAP_BUCKET_NS / 1e9
    rates: dict[UnitKey, list[tuple[int, int]]] = defaultdict(list)
    for r in J.collect(
        buckets.groupBy(*U, F.floor(F.col("bucket") / factor).alias("bin")).agg(F.sum("n").alias("n"))
    ):
        rates[_key(r)].append((r["bin"], r["n"]))
    for k in sorted(rates):
        u = units[k]
        pts = sorted(rates[k])
        lo, hi = pts[0][0], pts[-1][0]
        dense = dict(pts)
        t = [round(b * bin_s - u["origin"] / 1e9, 3) for b in range(lo, hi + 1)]
        out["series"]["rate"].append(
            {
                "case": k[0],
                "impl": k[1],
                "repetition": k[2],
                "bin_s": bin_s,
                "t_s": t,
                "rate": [round(dense.get(b, 0) / bin_s, 2) for b in range(lo, hi + 1)],
                "triggers": [[tr["t0_s"], tr["key"], tr["t1_s"]] for tr in u.get("triggers", [])],
                "gaps": [tr["gap"] for tr in u.get("triggers", []) if tr.get("gap")],
            }
        )
    # timelines: per (case, impl) the repetition with the longest overlap (lowest repetition on ties)
    chosen: dict[tuple[str, str], UnitKey] = {}
    for k, u in sorted(units.items()):
        ck = (k[0], k[1])
        if ck not in chosen or (u.get("overlap_s") or 0) > (units[chosen[ck]].get("overlap_s") or 0):
            chosen[ck] = k
    picks = sorted(chosen.values(), key=lambda k: (k[0], k[1]))[:MAX_TIMELINES]
    if not picks:
        return
    sel = spark.createDataFrame([list(k) for k in picks], "case string, impl string, repetition int")
    claims = J.collect(jobs.intervals("claim").join(F.broadcast(sel), U))
    susp = J.collect(jobs.intervals("away").join(F.broadcast(sel), U))
    ov = J.collect(islands.join(F.broadcast(sel), U))
    by: dict[UnitKey, dict[str, list[Any]]] = {
        k: {"claims": [], "suspended": [], "overlaps": []} for k in picks
    }
    for r in claims:
        k = _key(r)
        by[k]["claims"].append(r)
    for r in susp:
        by[_key(r)]["suspended"].append(r)
    for r in ov:
        by[_key(r)]["overlaps"].append(r)
    for k in picks:
        u = units[k]
        o, end = u["origin"], u["t_last"]

        def clip(ns: int, o: int = o, end: int = end) -> float:
            return round((min(ns, end) - o) / 1e9, 4)

        parts = sorted({r["p"] for r in by[k]["claims"]} | set(range(u["partitions"] or 0)))
        shown = parts[:MAX_TIMELINE_PARTITIONS]
        out["series"]["timelines"].append(
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
                "triggers": [[tr["t0_s"], tr["key"], tr["t1_s"]] for tr in u.get("triggers", [])],
            }
        )
