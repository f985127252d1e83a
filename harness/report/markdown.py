"""``summary.md``: the report as Markdown. It leads with the headline sentence
(:func:`harness.report.headline.headline`, as ``index.html`` does), then the verdict (run valid or not, the
legacy/coordinator ratios per trigger kind, completeness and split brain per implementation), then
the alerts, the migration proof (when some unit switched its members between kinds), the coordinator
failover table (when some unit had a coordinator or ZooKeeper-leader fault), the Coordinators table
(when the units ran against more than one broker), the tables
side by side per implementation, the plots (linked from ``plots/``), every unit and the
definitions."""

from __future__ import annotations

from typing import Any

from harness.analysis.definitions import metric
from harness.analysis.metrics_model import MetricsDocument
from harness.report.headline import headline
from harness.report.plots import Plot
from harness.report.simulation import banner
from harness.report.tables import (
    BROKER_CONFIG_INTRO,
    COMPLETENESS_COLUMNS,
    COORDINATORS_INTRO,
    FAILOVER_COLUMNS,
    FAILOVER_INTRO,
    LEGACY_CLIENTS_INTRO,
    MIGRATION_COLUMNS,
    MIGRATION_INTRO,
    OVERLAP_COLUMNS,
    OVERLAP_INTRO,
    REQUEST_KINDS_INTRO,
    UNIT_COLUMNS,
    VERDICT_HEADERS,
    SideBySide,
    broker_config_columns,
    broker_config_rows,
    cells,
    columns,
    completeness_rows,
    coordinators_columns,
    coordinators_rows,
    failover_rows,
    legacy_clients_columns,
    legacy_clients_rows,
    migration_line,
    migration_tables,
    overlap_rows,
    ratio_table,
    request_kind_columns,
    request_kind_rows,
    side_by_side,
    trigger_title,
    unit_column_headers,
    unit_rows,
    verdict_intro,
    verdict_of,
    verdict_rows,
)
from harness.report.unit_logs import log_links


def _md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _grid(head: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
    return lines


def _table(t: SideBySide) -> list[str]:
    head = ["metric"] + [f"{t.label(i)} {s}" for i in t.impls for s in columns(t)]
    rows = []
    for name, by_impl in t.rows:
        m = metric(name)
        row = [m.label + (f" ({m.unit})" if m.unit else "")]
        for impl in t.impls:
            row += cells(t, by_impl.get(impl))
        rows.append(row)
    return _grid(head, rows)


def verdict_section(metrics: MetricsDocument) -> list[str]:
    """The verdict block (Markdown lines)."""
    v = verdict_of(metrics)
    out = ["## Verdict", "", f"**{_md(v['line'])}**", ""]
    ratios = verdict_rows(metrics)
    if ratios:
        title, head, rows = ratio_table(ratios, VERDICT_HEADERS)
        out += [f"*{_md(title)}*", "", *_grid(head, rows), "", _md(verdict_intro(metrics)), ""]
    else:
        out += ["No trigger kind ran on legacy_zk and another implementation: no ratio.", ""]
    out += [*_grid(COMPLETENESS_COLUMNS, completeness_rows(metrics)), ""]
    return out


def migration_section(metrics: MetricsDocument) -> list[str]:
    """The "Migration proof" section (Markdown lines; none when no unit switched member kinds)."""
    line = migration_line(metrics)
    if line is None:
        return []
    out = ["## Migration proof", "", f"**{_md(line)}**", "", MIGRATION_INTRO, ""]
    for t in migration_tables(metrics):
        out += [f"### {t.title}", "", *_grid(MIGRATION_COLUMNS, t.rows), ""]
    return out


def failover_section(metrics: MetricsDocument) -> list[str]:
    """The "Coordinator failover" section (Markdown lines; none when no unit had a failover fault)."""
    rows = failover_rows(metrics)
    if not rows:
        return []
    return ["## Coordinator failover", "", FAILOVER_INTRO, "", *_grid(FAILOVER_COLUMNS, rows), ""]


def coordinators_section(metrics: MetricsDocument) -> list[str]:
    """The "Coordinators" section (Markdown lines; none unless the run's units have several brokers)."""
    rows = coordinators_rows(metrics)
    if not rows:
        return []
    out = ["## Coordinators", "", COORDINATORS_INTRO, "", *_grid(coordinators_columns(metrics), rows), ""]
    kinds = request_kind_rows(metrics)
    if kinds:
        out += [
            "### Requests by kind",
            "",
            REQUEST_KINDS_INTRO,
            "",
            *_grid(request_kind_columns(metrics), kinds),
            "",
        ]
    return out


def legacy_clients_section(metrics: MetricsDocument) -> list[str]:
    """The "Legacy fidelity" section (Markdown lines; none unless legacy_zk units ran on several clients)."""
    rows = legacy_clients_rows(metrics)
    if not rows:
        return []
    return [
        "## Legacy fidelity",
        "",
        LEGACY_CLIENTS_INTRO,
        "",
        *_grid(legacy_clients_columns(metrics), rows),
        "",
    ]


def broker_config_section(metrics: MetricsDocument) -> list[str]:
    """The "Broker configuration" section (Markdown lines; none when no unit recorded its broker's)."""
    rows = broker_config_rows(metrics)
    if not rows:
        return []
    return [
        "## Broker configuration",
        "",
        BROKER_CONFIG_INTRO,
        "",
        *_grid(broker_config_columns(metrics), rows),
        "",
    ]


def logs_section(metrics: MetricsDocument) -> list[str]:
    """The "Unit logs" section: a link to each unit's ``units/<unit>/logs/`` (none for a simulation)."""
    links = log_links(metrics)
    if not links:
        return []
    return ["## Unit logs", "", *(f"- {_md(name)}: [{path}]({path})" for name, path in links), ""]


def overlaps_section(metrics: MetricsDocument) -> list[str]:
    """The "Overlap episodes" section (none when no unit had one)."""
    rows, more = overlap_rows(metrics)
    if not rows:
        return []
    tail = [f"{more} more episodes in metrics.json (`units[].overlaps`).", ""] if more else []
    return ["## Overlap episodes", "", OVERLAP_INTRO, "", *_grid(OVERLAP_COLUMNS, rows), "", *tail]


def render_markdown(metrics: MetricsDocument, plots: list[Plot], plot_dir: str = "plots") -> str:
    """The whole summary."""
    run = metrics.get("run") or {}
    spark = metrics.get("spark") or {}
    out = [f"# herdlab report: {run.get('scenario') or '?'} / {run.get('run_id') or '?'}", ""]
    sim = banner(metrics)
    if sim:
        out += [f"> **{_md(sim)}**", ""]
    if line := headline(metrics):
        out += [_md(line), ""]
    out += verdict_section(metrics)
    if description := run.get("description"):
        out += [description, ""]
    out += [
        f"Implementations: {', '.join(run.get('implementations') or [])} · repetitions: {run.get('repetitions')} · "
        f"settle window: {run.get('settle_window_s')} s · backend: {run.get('backend')} · {run.get('history_rows')} events · "
        f"analysed by Spark {spark.get('version')} on {spark.get('master')} in {spark.get('analysis_s')} s",
        "",
    ]
    alerts = metrics.get("alerts") or []
    for a in alerts:
        loud = a.startswith(("LOST", "NOT DRAINED"))
        out.append(f"> {'**' if loud else ''}{_md(a)}{'**' if loud else ''}")
    if alerts:
        out.append("")
    out += migration_section(metrics)
    out += failover_section(metrics)
    out += coordinators_section(metrics)
    out += legacy_clients_section(metrics)
    out += [
        "## Results per trigger, side by side",
        "",
        "p50/p95/p99/max over repetitions by the rank rule of the definitions: a statistic whose rank "
        "touches a repetition that never settled reads `never`; mean with a t-based 95% confidence interval "
        "over the finite values, saying how many never values it left out. One repetition: one value.",
        "",
    ]
    for t in side_by_side(metrics):
        out += [f"### {trigger_title(t)}", "", *_table(t), ""]
    breakdown = side_by_side(metrics, breakdown=True)
    if breakdown:
        out += ["## ZooKeeper requests by operation, broker coordination requests by API", ""]
        for t in breakdown:
            out += [f"### {trigger_title(t)}", "", *_table(t), ""]
    if plots:
        out += ["## Plots", ""]
        out += [f"![{p.title}]({plot_dir}/{p.name}.png)" for p in plots]
        out.append("")
    rows = unit_rows(metrics)
    if rows:
        grid = []
        for r in rows:
            c = (
                r["cells"]
                if r["kind"] == "trigger"
                else [f"**{r['text']}**" if r.get("lost") or r["kind"] == "failed" else r["text"]]
            )
            grid.append([r["unit"], *c, *[""] * (len(UNIT_COLUMNS) - len(c))])
        out += ["## Every unit", "", *_grid(["unit", *unit_column_headers()], grid), ""]
    out += overlaps_section(metrics)
    out += broker_config_section(metrics)
    out += logs_section(metrics)
    out += ["## Definitions", ""]
    out += [f"- **{term}**: {text}" for term, text in metrics.get("definitions") or []]
    out.append("")
    return "\n".join(out)
