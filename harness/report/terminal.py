"""What ``herdlab run`` and ``herdlab report`` print (rich): the verdict first, then the summary table."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from harness.analysis.metrics_model import MetricsDocument
from harness.report.simulation import banner
from harness.report.tables import (
    COMPLETENESS_COLUMNS,
    FAILOVER_COLUMNS,
    VERDICT_COLUMNS,
    cases,
    completeness_rows,
    coordinators_columns,
    coordinators_rows,
    failover_rows,
    fmt_stat,
    implementations,
    migration_line,
    single,
    startup_rows,
    verdict_intro,
    verdict_of,
    verdict_rows,
)


def verdict_panel(metrics: MetricsDocument) -> Group:
    """The verdict: the one-line run verdict, the ratio table, the completeness table and, when some
    unit switched member kinds, the migration verdict with the expected one, and when some unit had a
    coordinator or ZooKeeper-leader fault, the coordinator failover table, and when the run compared
    brokers, the coordinators table. One start-up line per unit follows the completeness table."""
    v = verdict_of(metrics)
    style = {True: "bold green", "unknown": "bold yellow"}.get(v["valid"], "bold red")
    parts: list[Any] = [Text(f"verdict: {v['line']}", style=style)]
    sim = banner(metrics)
    if sim:
        parts.insert(0, Text(sim, style="bold magenta"))
    ratios = verdict_rows(metrics)
    if ratios:
        t = Table(title="legacy_zk against the other implementations, per trigger kind", title_justify="left")
        for c in VERDICT_COLUMNS:
            t.add_column(c, justify="left", overflow="fold")
        for r in ratios:
            t.add_row(*r)
        parts += [t, Text(verdict_intro(metrics), style="dim")]
    c = Table(title="completeness and split brain per implementation", title_justify="left")
    for name in COMPLETENESS_COLUMNS:
        c.add_column(name, justify="left" if name == "implementation" else "right")
    for r in completeness_rows(metrics):
        bad = r[3] != "0" or r[4] != "0"
        c.add_row(*r, style="red" if bad else None)
    parts.append(c)
    parts += [Text(f"{r['unit']}: {r['text']}", style="dim") for r in startup_rows(metrics)]
    line = migration_line(metrics)
    if line is not None:
        ok = bool((metrics.get("migration") or {}).get("as_expected"))
        parts.append(Text(line, style="bold green" if ok else "bold red"))
    rows = failover_rows(metrics)
    if rows:
        f = Table(title="coordinator failover", title_justify="left")
        for name in FAILOVER_COLUMNS:
            f.add_column(
                name, justify="left" if name in ("implementation", "fault") else "right", overflow="fold"
            )
        for r in rows:
            lost, deposed, double = r[7], r[10], r[11]
            bad = (
                lost not in ("0", "—") or deposed != "0" or double not in ("0.000 s", "—") or r[6] == "never"
            )
            f.add_row(*r, style="red" if bad else None)
        parts.append(f)
    head = coordinators_columns(metrics)
    if head:
        against = ", ".join(str(b) for b in (metrics.get("coordinators") or {}).get("reference") or [])
        k = Table(title=f"coordinators: herdlab's broker against {against}", title_justify="left")
        for name in head:
            k.add_column(name, justify="left" if name in ("trigger", "client", "assignor") else "right")
        for r in coordinators_rows(metrics):
            k.add_row(*r)
        parts.append(k)
    return Group(*parts)


def summary_table(metrics: MetricsDocument) -> Table:
    """One row per case, trigger and implementation (the median over repetitions, or the one value
    of a single repetition; ``never`` when the rank rule reaches a repetition that did not settle),
    then per case and implementation a ``whole unit`` row with loss, undrained tails, duplicates and
    overlap episodes (worst repetition)."""
    run = metrics.get("run") or {}
    t = Table(
        title=f"herdlab {run.get('scenario') or ''} {run.get('run_id') or ''}: medians over repetitions "
        "(one repetition: its value)"
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
        ("coord req", "right"),
        ("watches", "right"),
        ("zk req", "right"),
        ("zk pkts", "right"),
        ("broker coord", "right"),
        ("conflicts", "right"),
        ("failed", "right"),
        ("overlaps", "right"),
        ("dup", "right"),
        ("lost", "right"),
        ("not drained", "right"),
    ]
    for name, justify in cols:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    aggs = {(a["impl"], a["case"], a["trigger"], a["metric"]): a for a in metrics.get("aggregates", [])}
    keys: dict[str, list[str]] = {}
    for a in metrics.get("aggregates", []):
        if a["trigger"] != "unit":
            keys.setdefault(a["case"], [])
            if a["trigger"] not in keys[a["case"]]:
                keys[a["case"]].append(a["trigger"])

    def stat(impl: str, case: str, key: str, m: str, which: str = "p50") -> str:
        a = aggs.get((impl, case, key, m))
        if a is None:
            return "-"
        if single(a) and which == "max":
            return ""  # one value: shown once, under p50
        s = fmt_stat(a, "value" if single(a) else which)
        return f"[red]{s}[/red]" if s == "never" else s

    def worst(impl: str, case: str, m: str) -> str:
        a = aggs.get((impl, case, "unit", m))
        if a is None:
            return "-"
        s = fmt_stat(a, "value" if single(a) else "max")
        bad = m in ("lost", "not_drained") and s not in ("0", "-", "—")
        return f"[bold red]{s}[/bold red]" if bad else s

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
                    stat(impl, case, key, "latency_s"),
                    stat(impl, case, key, "latency_s", "max"),
                    stat(impl, case, key, "detection_s"),
                    stat(impl, case, key, "resumed_s"),
                    stat(impl, case, key, "coordination_requests"),
                    stat(impl, case, key, "watches"),
                    stat(impl, case, key, "zk_requests"),
                    stat(impl, case, key, "zk_packets"),
                    stat(impl, case, key, "broker_group_requests"),
                    stat(impl, case, key, "conflicts"),
                    stat(impl, case, key, "failed_attempts"),
                    stat(impl, case, key, "overlap_episodes"),
                    stat(impl, case, key, "duplicates"),
                    "",
                    "",
                )
                first = False
        for impl in impls:
            lost = aggs.get((impl, case, "unit", "lost"))
            if lost is None:
                continue
            t.add_row(
                case if first else "",
                "whole unit (worst rep)",
                impl,
                str(lost["n"]),
                *[""] * 11,
                worst(impl, case, "overlap_episodes"),
                worst(impl, case, "duplicates"),
                worst(impl, case, "lost"),
                worst(impl, case, "not_drained"),
            )
            first = False
    return t
