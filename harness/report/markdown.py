"""``summary.md``: the report as Markdown (tables side by side per implementation; plots linked
from ``plots/``)."""

from __future__ import annotations

from typing import Any

from harness.analysis.definitions import metric
from harness.report.plots import Plot
from harness.report.tables import (
    STATS,
    UNIT_COLUMNS,
    SideBySide,
    fmt_mean,
    fmt_stat,
    side_by_side,
    trigger_title,
    unit_rows,
)


def _md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _table(t: SideBySide) -> list[str]:
    head = ["metric"] + [f"{i} {s}" for i in t.impls for s in (*STATS, "mean [95% CI]", "n")]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, cells in t.rows:
        m = metric(name)
        row = [m.label + (f" ({m.unit})" if m.unit else "")]
        for impl in t.impls:
            a = cells.get(impl)
            row += (
                ["—"] * (len(STATS) + 2)
                if a is None
                else [*(fmt_stat(a, s) for s in STATS), fmt_mean(a), str(a["n"])]
            )
        lines.append("| " + " | ".join(_md(c) for c in row) + " |")
    return lines


def render_markdown(metrics: dict[str, Any], plots: list[Plot], plot_dir: str = "plots") -> str:
    """The whole summary."""
    run = metrics.get("run") or {}
    spark = metrics.get("spark") or {}
    out = [f"# herdlab report: {run.get('scenario') or '?'} / {run.get('run_id') or '?'}", ""]
    if run.get("description"):
        out += [run["description"], ""]
    out += [
        f"Implementations: {', '.join(run.get('implementations') or [])} · repetitions: {run.get('repetitions')} · "
        f"settle window: {run.get('settle_window_s')} s · backend: {run.get('backend')} · {run.get('history_rows')} events · "
        f"analysed by Spark {spark.get('version')} on {spark.get('master')} in {spark.get('analysis_s')} s",
        "",
    ]
    alerts = metrics.get("alerts") or []
    for a in alerts:
        out.append(f"> **{'LOST RECORDS: ' if a.startswith('LOST') else ''}{_md(a)}**")
    if alerts:
        out.append("")
    elif metrics.get("units"):
        settled = any(u.get("triggers") for u in metrics["units"])
        out += ["No produced record was lost" + ("; every trigger settled." if settled else "."), ""]
    out += [
        "## Results per trigger, side by side",
        "",
        "p50/p95/p99/max over repetitions (linear interpolation; `never` = a repetition that did not settle, "
        "counted as +infinity); mean with a t-based 95% confidence interval over the finite values.",
        "",
    ]
    for t in side_by_side(metrics):
        out += [f"### {trigger_title(t)}", "", *_table(t), ""]
    breakdown = side_by_side(metrics, breakdown=True)
    if breakdown:
        out += ["## ZooKeeper requests by operation, broker requests by API", ""]
        for t in breakdown:
            out += [f"### {trigger_title(t)}", "", *_table(t), ""]
    if plots:
        out += ["## Plots", ""]
        out += [f"![{p.title}]({plot_dir}/{p.name}.png)" for p in plots]
        out.append("")
    rows = unit_rows(metrics)
    if rows:
        head = ["unit", *(c for c, _ in UNIT_COLUMNS)]
        out += ["## Every unit", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            cells = (
                r["cells"]
                if r["kind"] == "trigger"
                else [f"**{r['text']}**" if r.get("lost") or r["kind"] == "failed" else r["text"]]
            )
            cells = cells + [""] * (len(UNIT_COLUMNS) - len(cells))
            out.append("| " + " | ".join(_md(c) for c in [r["unit"], *cells]) + " |")
        out.append("")
    out += ["## Definitions", ""]
    out += [f"- **{term}**: {text}" for term, text in metrics.get("definitions") or []]
    out.append("")
    return "\n".join(out)
