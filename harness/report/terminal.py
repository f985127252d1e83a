"""The terminal summary table that ends ``herdlab run`` and ``herdlab report`` (rich)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from harness.report.tables import cases, fmt, implementations


def summary_table(metrics: dict[str, Any]) -> Table:
    """One row per case, trigger and implementation (medians over repetitions; ``never`` when a
    repetition did not settle), then per case and implementation a ``whole unit`` row with loss,
    duplicates and overlaps (worst repetition)."""
    run = metrics.get("run") or {}
    t = Table(
        title=f"herdlab {run.get('scenario') or ''} {run.get('run_id') or ''}: medians over repetitions (PySpark)"
    )
    cols = [
        ("case", "left"),
        ("trigger", "left"),
        ("impl", "left"),
        ("n", "right"),
        ("latency p50", "right"),
        ("latency max", "right"),
        ("detect", "right"),
        ("resumed", "right"),
        ("gap", "right"),
        ("watches", "right"),
        ("zk req", "right"),
        ("zk pkts", "right"),
        ("broker grp", "right"),
        ("conflicts", "right"),
        ("failed", "right"),
        ("overlaps", "right"),
        ("dup", "right"),
        ("lost", "right"),
    ]
    for name, justify in cols:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    aggs = {(a["impl"], a["case"], a["trigger"], a["metric"]): a for a in metrics.get("aggregates", [])}
    keys: dict[str, list[str]] = {}
    for a in metrics.get("aggregates", []):
        if a["trigger"] not in ("all", "unit"):
            keys.setdefault(a["case"], [])
            if a["trigger"] not in keys[a["case"]]:
                keys[a["case"]].append(a["trigger"])

    def p50(impl: str, case: str, key: str, m: str, stat: str = "p50", unit: str = "") -> str:
        a = aggs.get((impl, case, key, m))
        if a is None:
            return "-"
        v = a.get(stat)
        s = fmt(v, unit, never=bool(a.get("never")))
        return f"[red]{s}[/red]" if s == "never" else s

    impls = implementations(metrics)
    for case in cases(metrics):
        first = True
        for key in keys.get(case, []):
            for impl in impls:
                a = aggs.get((impl, case, key, "latency_s"))
                if a is None:
                    continue
                t.add_row(
                    case if first else "",
                    f"{key} {','.join(a.get('targets') or [])}",
                    impl,
                    str(a["n"]),
                    p50(impl, case, key, "latency_s", unit="s"),
                    p50(impl, case, key, "latency_s", "max", "s"),
                    p50(impl, case, key, "detection_s", unit="s"),
                    p50(impl, case, key, "resumed_s", unit="s"),
                    p50(impl, case, key, "gap_s", unit="s"),
                    p50(impl, case, key, "watches"),
                    p50(impl, case, key, "zk_requests"),
                    p50(impl, case, key, "zk_packets"),
                    p50(impl, case, key, "broker_group_requests"),
                    p50(impl, case, key, "conflicts"),
                    p50(impl, case, key, "failed_attempts"),
                    p50(impl, case, key, "overlaps"),
                    p50(impl, case, key, "duplicates"),
                    "",
                )
                first = False
        for impl in impls:
            lost = aggs.get((impl, case, "unit", "lost"))
            if lost is None:
                continue
            lost_s = fmt(lost.get("max"))
            t.add_row(
                case if first else "",
                "whole unit (worst rep)",
                impl,
                str(lost["n"]),
                *[""] * 11,
                p50(impl, case, "unit", "overlaps", "max"),
                p50(impl, case, "unit", "duplicates", "max"),
                f"[bold red]{lost_s}[/bold red]" if lost.get("max") else lost_s,
            )
            first = False
    return t
