"""``index.html``: one self-contained page (CSS inline, plots as base64 PNG): it opens offline.

It leads with the verdict (run valid or not, the legacy/coordinator ratios per trigger kind,
completeness and split brain per implementation), then alerts, the migration proof (when some unit
switched its members between kinds), the coordinator failover table (when some unit had a coordinator or
ZooKeeper-leader fault), tables, plots, units, definitions."""

from __future__ import annotations

import base64
import html
from typing import Any

from harness.analysis.definitions import metric
from harness.analysis.metrics_model import MetricsDocument
from harness.report.plots import Plot
from harness.report.simulation import banner
from harness.report.tables import (
    BROKER_CONFIG_INTRO,
    COMPLETENESS_COLUMNS,
    COORDINATORS_INTRO,
    FAILOVER_COLUMNS,
    FAILOVER_INTRO,
    MIGRATION_COLUMNS,
    MIGRATION_INTRO,
    OVERLAP_COLUMNS,
    OVERLAP_INTRO,
    REQUEST_KINDS_INTRO,
    UNIT_COLUMNS,
    VERDICT_COLUMNS,
    SideBySide,
    broker_config_columns,
    broker_config_rows,
    cells,
    columns,
    completeness_rows,
    coordinators_columns,
    coordinators_rows,
    failover_rows,
    fmt,
    migration_line,
    migration_tables,
    overlap_rows,
    request_kind_columns,
    request_kind_rows,
    side_by_side,
    trigger_title,
    unit_rows,
    verdict_intro,
    verdict_of,
    verdict_rows,
)
from harness.report.unit_logs import log_links

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1400px;
color:#222;padding:0 16px;line-height:1.4}
h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{margin:22px 0 6px;font-size:1.05em}
.meta{color:#555;font-size:.9em}.meta code{background:#f4f4f4;padding:1px 4px;border-radius:3px}
.alert{background:#fdecea;border:2px solid #d32f2f;color:#8b0000;padding:10px 14px;border-radius:6px;margin:14px 0}
.alert.lost{font-size:1.15em;font-weight:bold}.ok{background:#edf7ed;border:1px solid #2e7d32;color:#1b5e20;
padding:8px 12px;border-radius:6px;margin:14px 0}
table{border-collapse:collapse;font-size:.84em;margin:6px 0 14px}th,td{border:1px solid #ddd;padding:3px 7px;
text-align:right;white-space:nowrap}th{background:#f6f6f6}td.l,th.l{text-align:left}
tr.totals td{background:#fafafa;text-align:left;white-space:normal}tr.failed td,tr.lost td{background:#fdecea;color:#8b0000}
th.impl{background:#e8eef8}.never{color:#b00020;font-weight:600}
img{max-width:100%;border:1px solid #eee;margin:8px 0}dl dt{font-weight:600;margin-top:8px}dl dd{margin-left:18px}
details{margin:8px 0}summary{cursor:pointer;color:#1b6ac9}.scroll{overflow-x:auto;max-width:100%}
.verdict{border:2px solid #2e7d32;border-radius:6px;padding:6px 14px;margin:14px 0}
.verdict.invalid{border-color:#d32f2f}.verdict .line{font-size:1.15em;font-weight:bold;color:#1b5e20}
.verdict.invalid .line{color:#8b0000}
.verdict.unknown{border-color:#f9a825}.verdict.unknown .line{color:#8d6e00}.verdict td{white-space:normal}
"""


def _e(s: Any) -> str:
    return html.escape(str(s))


def _cell(text: str) -> str:
    cls = ' class="never"' if text.startswith("never") else ""
    return f"<td{cls}>{_e(text)}</td>"


def _side_table(t: SideBySide) -> str:
    cols = columns(t)
    head1 = (
        '<tr><th class="l" rowspan="2">metric</th>'
        + "".join(f'<th class="impl" colspan="{len(cols)}">{_e(t.label(i))}</th>' for i in t.impls)
        + "</tr>"
    )
    head2 = "<tr>" + "".join("".join(f"<th>{_e(s)}</th>" for s in cols) for _ in t.impls) + "</tr>"
    body = []
    for name, by_impl in t.rows:
        m = metric(name)
        tds = [f'<td class="l">{_e(m.label)}{" (" + _e(m.unit) + ")" if m.unit else ""}</td>']
        for impl in t.impls:
            tds += [_cell(c) for c in cells(t, by_impl.get(impl))]
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f'<div class="scroll"><table><thead>{head1}{head2}</thead><tbody>{"".join(body)}</tbody></table></div>'


def _grid(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f'<th class="l">{_e(h)}</th>' for h in head)
    trs = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table></div>'


def verdict_block(metrics: MetricsDocument) -> str:
    """The verdict block (HTML)."""
    v = verdict_of(metrics)
    cls = {True: "verdict", "unknown": "verdict unknown"}.get(v["valid"], "verdict invalid")
    parts = [f'<div class="{cls}"><h2>Verdict</h2><p class="line">{_e(v["line"])}</p>']
    ratios = verdict_rows(metrics)
    if ratios:
        parts.append(_grid(VERDICT_COLUMNS, ratios))
        parts.append(f'<p class="meta">{_e(verdict_intro(metrics))}</p>')
    else:
        parts.append("<p>No trigger kind ran on legacy_zk and another implementation: no ratio.</p>")
    parts.append(_grid(COMPLETENESS_COLUMNS, completeness_rows(metrics)))
    parts.append("</div>")
    return "".join(parts)


def migration_block(metrics: MetricsDocument) -> str:
    """The "Migration proof" section (HTML; empty when no unit switched member kinds)."""
    line = migration_line(metrics)
    if line is None:
        return ""
    ok = bool((metrics.get("migration") or {}).get("as_expected"))
    parts = [
        "<h2>Migration proof</h2>",
        f'<div class="{"ok" if ok else "alert"}"><b>{_e(line)}</b></div>',
        f'<p class="meta">{_e(MIGRATION_INTRO)}</p>',
    ]
    for t in migration_tables(metrics):
        parts.append(f"<h3>{_e(t.title)}</h3>{_grid(MIGRATION_COLUMNS, t.rows)}")
    return "".join(parts)


def failover_block(metrics: MetricsDocument) -> str:
    """The "Coordinator failover" section (HTML; empty when no unit had a failover fault)."""
    rows = failover_rows(metrics)
    if not rows:
        return ""
    return f'<h2>Coordinator failover</h2><p class="meta">{_e(FAILOVER_INTRO)}</p>' + _grid(
        FAILOVER_COLUMNS, rows
    )


def coordinators_block(metrics: MetricsDocument) -> str:
    """The "Coordinators" section (HTML; empty unless the run's units have several brokers)."""
    rows = coordinators_rows(metrics)
    if not rows:
        return ""
    out = f'<h2>Coordinators</h2><p class="meta">{_e(COORDINATORS_INTRO)}</p>' + _grid(
        coordinators_columns(metrics), rows
    )
    kinds = request_kind_rows(metrics)
    if kinds:
        out += f'<h3>Requests by kind</h3><p class="meta">{_e(REQUEST_KINDS_INTRO)}</p>' + _grid(
            request_kind_columns(metrics), kinds
        )
    return out


def broker_config_block(metrics: MetricsDocument) -> str:
    """The "Broker configuration" section (HTML; empty when no unit recorded its broker's)."""
    rows = broker_config_rows(metrics)
    if not rows:
        return ""
    return f'<h2>Broker configuration</h2><p class="meta">{_e(BROKER_CONFIG_INTRO)}</p>' + _grid(
        broker_config_columns(metrics), rows
    )


def overlaps_block(metrics: MetricsDocument) -> str:
    """The "Overlap episodes" section (HTML; empty when no unit had one)."""
    rows, more = overlap_rows(metrics)
    if not rows:
        return ""
    tail = f'<p class="meta">{more} more episodes in metrics.json (units[].overlaps).</p>' if more else ""
    return (
        f'<h2>Overlap episodes</h2><p class="meta">{_e(OVERLAP_INTRO)}</p>'
        + _grid(OVERLAP_COLUMNS, rows)
        + tail
    )


def logs_block(metrics: MetricsDocument) -> str:
    """The "Unit logs" section: a link to each unit's ``units/<unit>/logs/`` (empty for a simulation)."""
    links = log_links(metrics)
    if not links:
        return ""
    items = "".join(f'<li>{_e(name)}: <a href="{_e(path)}">{_e(path)}</a></li>' for name, path in links)
    return f"<h2>Unit logs</h2><ul>{items}</ul>"


def render_html(metrics: MetricsDocument, plots: list[Plot], summary_md_name: str = "summary.md") -> str:
    """The whole page."""
    run = metrics.get("run") or {}
    title = f"herdlab report: {run.get('scenario') or '?'} / {run.get('run_id') or '?'}"
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title><style>{CSS}</style></head><body>"
    ]
    parts.append(f"<h1>{_e(title)}</h1>")
    sim = banner(metrics)
    if sim:
        parts.append(f'<div class="alert lost"><b>{_e(sim)}</b></div>')
    parts.append(verdict_block(metrics))
    if description := run.get("description"):
        parts.append(f"<p>{_e(description)}</p>")
    spark = metrics.get("spark") or {}
    parts.append(
        '<p class="meta">'
        + " · ".join(
            _e(x)
            for x in (
                f"implementations: {', '.join(run.get('implementations') or [])}",
                f"repetitions: {run.get('repetitions')}",
                f"settle window: {run.get('settle_window_s')} s",
                f"backend: {run.get('backend')}",
                f"started {run.get('started')}",
                f"{run.get('history_rows')} events",
                f"analysed by Spark {spark.get('version')} on {spark.get('master')} in {spark.get('analysis_s')} s",
            )
        )
        + f' · also as <a href="{_e(summary_md_name)}">Markdown</a> and <a href="metrics.json">JSON</a></p>'
    )
    alerts = metrics.get("alerts") or []
    loud = [a for a in alerts if a.startswith(("LOST", "NOT DRAINED"))]
    for a in loud:
        parts.append(f'<div class="alert lost">{_e(a)}</div>')
    others = [a for a in alerts if a not in loud]
    if others:
        parts.append(
            '<div class="alert"><b>Attention</b><ul>'
            + "".join(f"<li>{_e(a)}</li>" for a in others)
            + "</ul></div>"
        )

    parts.append(migration_block(metrics))
    parts.append(failover_block(metrics))
    parts.append(coordinators_block(metrics))
    parts.append("<h2>Results per trigger, side by side</h2>")
    parts.append(
        '<p class="meta">Statistics over repetitions: p50/p95/p99/max by the rank rule of the definitions; '
        "a statistic whose rank touches a repetition that did not settle reads <span class=never>never</span>; "
        "mean with a t-based 95% confidence interval over the finite values, saying how many never values it "
        "left out. One repetition: one value. Definitions at the end.</p>"
    )
    tables = side_by_side(metrics)
    if not tables:
        parts.append("<p>No results: the history holds no analysed unit.</p>")
    for t in tables:
        parts.append(f"<h3>{_e(trigger_title(t))}</h3>")
        parts.append(_side_table(t))
    breakdown = side_by_side(metrics, breakdown=True)
    if breakdown:
        parts.append(
            "<details><summary>ZooKeeper requests by operation and broker coordination requests by API</summary>"
        )
        for t in breakdown:
            parts.append(f"<h3>{_e(trigger_title(t))}</h3>{_side_table(t)}")
        parts.append("</details>")

    if plots:
        parts.append("<h2>Plots</h2>")
        for p in plots:
            b64 = base64.b64encode(p.png).decode()
            parts.append(f'<h3>{_e(p.title)}</h3><img alt="{_e(p.title)}" src="data:image/png;base64,{b64}">')

    rows = unit_rows(metrics)
    if rows:
        parts.append(
            "<h2>Every unit</h2><details open><summary>per unit and trigger</summary><table><thead><tr>"
        )
        parts.append(
            '<th class="l">unit</th>'
            + "".join(f"<th>{_e(c)}</th>" for c, _ in UNIT_COLUMNS)
            + "</tr></thead><tbody>"
        )
        for r in rows:
            if r["kind"] == "trigger":
                parts.append(
                    f'<tr><td class="l">{_e(r["unit"])}</td>'
                    + "".join(_cell(c) for c in r["cells"])
                    + "</tr>"
                )
            else:
                cls = "failed" if r["kind"] == "failed" else ("lost totals" if r.get("lost") else "totals")
                parts.append(
                    f'<tr class="{cls}"><td class="l">{_e(r["unit"])}</td><td colspan="{len(UNIT_COLUMNS)}">{_e(r["text"])}</td></tr>'
                )
        parts.append("</tbody></table></div></details>")
    parts.append(overlaps_block(metrics))
    parts.append(broker_config_block(metrics))
    parts.append(logs_block(metrics))

    parts.append("<h2>Definitions</h2><dl>")
    for term, text in metrics.get("definitions") or []:
        parts.append(f"<dt>{_e(term)}</dt><dd>{_e(text)}</dd>")
    parts.append("</dl>")
    parts.append("<h2>Provenance</h2><table>")
    prov = {
        "run directory": run.get("run_dir"),
        "git commit": run.get("git_commit"),
        "versions": ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items()),
        "machine": ", ".join(f"{k} {v}" for k, v in (run.get("machine") or {}).items()),
        "spark": f"{spark.get('version')} {spark.get('master')}, shuffle partitions {spark.get('shuffle_partitions')} (record keys)"
        f" / {spark.get('small_shuffle_partitions', spark.get('shuffle_partitions'))} (the rest)",
        "finished": run.get("finished"),
        "interrupted": run.get("interrupted"),
    }
    for k, v in prov.items():
        parts.append(
            f'<tr><th class="l">{_e(k)}</th><td class="l">{_e(fmt(v) if v is not None else "—")}</td></tr>'
        )
    parts.append("</table></body></html>")
    return "\n".join(parts)
