"""``index.html``: one self-contained page (CSS inline, plots as base64 PNG): it opens offline.

It leads with the finding: the headline sentence (:func:`harness.report.headline.headline`), the
verdict (run valid or not, the legacy/coordinator ratios per trigger kind, completeness and split
brain per implementation) with the alerts, then the herd and latency plots and a table of contents;
then the run, the migration proof (when some unit switched its members between kinds), the
coordinator failover table (when some unit had a coordinator or ZooKeeper-leader fault), the
Coordinators table, the per-trigger tables (folded), the per-unit timelines (folded), every unit
(folded), overlaps, broker configuration, logs, definitions and provenance.

The page is the Jinja2 templates under ``templates/``; this module only arranges the data of
:mod:`.tables` for them (every value arrives as text, escaped by the templates). Wide tables scroll
inside their own box, never the page; inline code in definitions and intros (```x```) is rendered
as ``<code>``.
"""

from __future__ import annotations

import base64
import re
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

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
    fmt,
    fmt_bytes,
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

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px auto;max-width:1400px;
color:#222;padding:0 16px;line-height:1.4}
h1{font-size:1.3em;margin:0 0 6px;overflow-wrap:anywhere}
h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px;font-size:1.3em}
h3{margin:22px 0 6px;font-size:1.05em}p,dd,li,summary{overflow-wrap:anywhere}
.headline{font-size:1.3em;font-weight:600;margin:8px 0 4px;padding:10px 14px;background:#f1f5fb;
border-left:5px solid #1b6ac9;border-radius:4px}
.meta{color:#555;font-size:.9em}code{background:#f4f4f4;padding:1px 4px;border-radius:3px;font-size:.92em}
.alert{background:#fdecea;border:2px solid #d32f2f;color:#8b0000;padding:10px 14px;border-radius:6px;margin:14px 0}
.alert.lost{font-size:1.15em;font-weight:bold}.ok{background:#edf7ed;border:1px solid #2e7d32;color:#1b5e20;
padding:8px 12px;border-radius:6px;margin:14px 0}
table{border-collapse:collapse;font-size:.84em;margin:6px 0 14px}th,td{border:1px solid #ddd;padding:3px 7px;
text-align:right;white-space:nowrap}th{background:#f6f6f6}td.l,th.l{text-align:left}
table.wrap td{white-space:normal;overflow-wrap:anywhere}
tr.totals td{background:#fafafa;text-align:left;white-space:normal}tr.failed td,tr.lost td{background:#fdecea;color:#8b0000}
th.impl{background:#e8eef8}.never{color:#b00020;font-weight:600}
img{max-width:100%;height:auto;border:1px solid #eee;margin:8px 0}
figure{margin:0;min-width:0}figcaption{color:#555;font-size:.9em}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,900px),1fr));gap:12px}
dl dt{font-weight:600;margin-top:8px}dl dd{margin-left:18px}
details{margin:8px 0}summary{cursor:pointer;color:#1b6ac9}.scroll{overflow-x:auto;max-width:100%}
nav ol{columns:3 14em;margin:6px 0}
.verdict{border:2px solid #2e7d32;border-radius:6px;padding:0 14px 6px;margin:10px 0}
.verdict h2{margin-top:10px}
.verdict.invalid{border-color:#d32f2f}.verdict .line{font-size:1.1em;font-weight:bold;color:#1b5e20}
.verdict.invalid .line{color:#8b0000}
.verdict.unknown{border-color:#f9a825}.verdict.unknown .line{color:#8d6e00}
.verdict td,.verdict th{white-space:normal}
"""

#: Plots shown right under the verdict, in this order (by :attr:`Plot.name`); the others are the folded
#: timelines.
KEY_PLOTS = ("herd", "latency")

_CODE = re.compile(r"`([^`]+)`")


def inline_code(text: Any) -> Markup:
    """``text`` escaped, each ```span``` in it as ``<code>span</code>`` (the Jinja2 filter ``code``)."""
    return Markup(_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(str(text)))))


@cache
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=StrictUndefined,
    )
    env.filters["code"] = inline_code
    return env


def _macro(name: str, *args: Any) -> str:
    """One macro of ``blocks.html.j2`` rendered, as a string."""
    return str(getattr(_env().get_template("blocks.html.j2").module, name)(*args)).strip()


# --- the data of each section ---------------------------------------------------------------------


def _side(t: SideBySide) -> dict[str, Any]:
    rows = []
    for name, by_impl in t.rows:
        m = metric(name)
        row_cells = [c for impl in t.impls for c in cells(t, by_impl.get(impl))]
        rows.append({"label": m.label + (f" ({m.unit})" if m.unit else ""), "cells": row_cells})
    return {
        "title": trigger_title(t),
        "labels": [t.label(i) for i in t.impls],
        "columns": columns(t),
        "rows": rows,
    }


def _verdict(metrics: MetricsDocument) -> dict[str, Any]:
    v = verdict_of(metrics)
    title, head, ratios = ratio_table(verdict_rows(metrics), VERDICT_HEADERS)
    return {
        "cls": {True: "verdict", "unknown": "verdict unknown"}.get(v["valid"], "verdict invalid"),
        "line": v["line"],
        "ratio_title": title,
        "ratio_head": head,
        "ratios": ratios,
        "intro": verdict_intro(metrics),
        "completeness_head": COMPLETENESS_COLUMNS,
        "completeness": completeness_rows(metrics),
    }


def _migration(metrics: MetricsDocument) -> dict[str, Any] | None:
    line = migration_line(metrics)
    if line is None:
        return None
    return {
        "line": line,
        "ok": bool((metrics.get("migration") or {}).get("as_expected")),
        "intro": MIGRATION_INTRO,
        "head": MIGRATION_COLUMNS,
        "tables": [{"title": t.title, "rows": t.rows} for t in migration_tables(metrics)],
    }


def _failover(metrics: MetricsDocument) -> dict[str, Any] | None:
    rows = failover_rows(metrics)
    return {"intro": FAILOVER_INTRO, "head": FAILOVER_COLUMNS, "rows": rows} if rows else None


def _coordinators(metrics: MetricsDocument) -> dict[str, Any] | None:
    rows = coordinators_rows(metrics)
    if not rows:
        return None
    return {
        "intro": COORDINATORS_INTRO,
        "head": coordinators_columns(metrics),
        "rows": rows,
        "kinds_intro": REQUEST_KINDS_INTRO,
        "kinds_head": request_kind_columns(metrics),
        "kinds": request_kind_rows(metrics),
    }


def _legacy_clients(metrics: MetricsDocument) -> dict[str, Any] | None:
    rows = legacy_clients_rows(metrics)
    return (
        {"intro": LEGACY_CLIENTS_INTRO, "head": legacy_clients_columns(metrics), "rows": rows}
        if rows
        else None
    )


def _broker_config(metrics: MetricsDocument) -> dict[str, Any] | None:
    rows = broker_config_rows(metrics)
    return (
        {"intro": BROKER_CONFIG_INTRO, "head": broker_config_columns(metrics), "rows": rows} if rows else None
    )


def _overlaps(metrics: MetricsDocument) -> dict[str, Any] | None:
    rows, more = overlap_rows(metrics)
    return {"intro": OVERLAP_INTRO, "head": OVERLAP_COLUMNS, "rows": rows, "more": more} if rows else None


def _unit_rows(metrics: MetricsDocument) -> list[dict[str, Any]]:
    out = []
    for r in unit_rows(metrics):
        cls = "failed" if r["kind"] == "failed" else ("lost totals" if r.get("lost") else "totals")
        out.append({**r, "cls": cls})
    return out


def _machine(machine: dict[str, Any]) -> str:
    """The machine's description; sizes (keys ending ``_bytes``) in KiB / MiB / GiB."""
    parts = []
    for k, v in machine.items():
        if k.endswith("_bytes"):
            parts.append(f"{k.removesuffix('_bytes')} {fmt_bytes(v)}")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts)


def _provenance(metrics: MetricsDocument) -> list[tuple[str, str]]:
    run = metrics.get("run") or {}
    spark = metrics.get("spark") or {}
    prov = {
        "run directory": run.get("run_dir"),
        "git commit": run.get("git_commit"),
        "versions": ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items()),
        "machine": _machine(run.get("machine") or {}),
        "spark": f"{spark.get('version')} {spark.get('master')}, shuffle partitions {spark.get('shuffle_partitions')} (record keys)"
        f" / {spark.get('small_shuffle_partitions', spark.get('shuffle_partitions'))} (the rest)",
        "finished": run.get("finished"),
        "interrupted": run.get("interrupted"),
    }
    return [(k, fmt(v) if v is not None else "—") for k, v in prov.items()]


def _plot(p: Plot) -> dict[str, str]:
    return {"title": p.title, "b64": base64.b64encode(p.png).decode()}


# --- the sections as HTML (each also a part of the page) ------------------------------------------


def verdict_block(metrics: MetricsDocument) -> str:
    """The verdict block (HTML)."""
    return _macro("verdict", _verdict(metrics))


def migration_block(metrics: MetricsDocument) -> str:
    """The "Migration proof" section (HTML; empty when no unit switched member kinds)."""
    m = _migration(metrics)
    return _macro("migration", m) if m else ""


def failover_block(metrics: MetricsDocument) -> str:
    """The "Coordinator failover" section (HTML; empty when no unit had a failover fault)."""
    f = _failover(metrics)
    return _macro("section", "Coordinator failover", f["intro"], f["head"], f["rows"]) if f else ""


def coordinators_block(metrics: MetricsDocument) -> str:
    """The "Coordinators" section (HTML; empty unless the run's units have several brokers)."""
    c = _coordinators(metrics)
    return _macro("coordinators", c) if c else ""


def broker_config_block(metrics: MetricsDocument) -> str:
    """The "Broker configuration" section (HTML; empty when no unit recorded its broker's)."""
    c = _broker_config(metrics)
    return _macro("section", "Broker configuration", c["intro"], c["head"], c["rows"]) if c else ""


def overlaps_block(metrics: MetricsDocument) -> str:
    """The "Overlap episodes" section (HTML; empty when no unit had one)."""
    o = _overlaps(metrics)
    return _macro("overlaps", o) if o else ""


def logs_block(metrics: MetricsDocument) -> str:
    """The "Unit logs" section: a link to each unit's ``units/<unit>/logs/`` (empty for a simulation)."""
    links = log_links(metrics)
    return _macro("logs", links) if links else ""


def render_html(metrics: MetricsDocument, plots: list[Plot], summary_md_name: str = "summary.md") -> str:
    """The whole page (see the module docstring for its order)."""
    run = metrics.get("run") or {}
    spark = metrics.get("spark") or {}
    alerts = list(metrics.get("alerts") or [])
    loud = [a for a in alerts if a.startswith(("LOST", "NOT DRAINED"))]
    sections: dict[str, Any] = {
        "migration": _migration(metrics),
        "failover": _failover(metrics),
        "coordinators": _coordinators(metrics),
        "legacy_clients": _legacy_clients(metrics),
        "side_tables": [_side(t) for t in side_by_side(metrics)],
        "breakdown": [_side(t) for t in side_by_side(metrics, breakdown=True)],
        "key_plots": [_plot(p) for name in KEY_PLOTS for p in plots if p.name == name],
        "other_plots": [_plot(p) for p in plots if p.name not in KEY_PLOTS],
        "unit_rows": _unit_rows(metrics),
        "overlaps": _overlaps(metrics),
        "broker_config": _broker_config(metrics),
        "logs": log_links(metrics),
    }
    toc = [
        (anchor, name)
        for anchor, name, shown in (
            ("verdict", "Verdict", True),
            ("plots", "Herd and latency", sections["key_plots"]),
            ("run", "This run", True),
            ("migration", "Migration proof", sections["migration"]),
            ("failover", "Coordinator failover", sections["failover"]),
            ("coordinators", "Coordinators", sections["coordinators"]),
            ("legacy-fidelity", "Legacy fidelity", sections["legacy_clients"]),
            ("results", "Per-trigger results", True),
            ("timelines", "Timelines per unit", sections["other_plots"]),
            ("units", "Every unit", sections["unit_rows"]),
            ("overlaps", "Overlap episodes", sections["overlaps"]),
            ("broker-config", "Broker configuration", sections["broker_config"]),
            ("logs", "Unit logs", sections["logs"]),
            ("definitions", "Definitions", True),
            ("provenance", "Provenance", True),
        )
        if shown
    ]
    meta = [
        f"implementations: {', '.join(run.get('implementations') or [])}",
        f"repetitions: {run.get('repetitions')}",
        f"settle window: {run.get('settle_window_s')} s",
        f"backend: {run.get('backend')}",
        f"started {run.get('started')}",
        f"{run.get('history_rows')} events",
        f"analysed by Spark {spark.get('version')} on {spark.get('master')} in {spark.get('analysis_s')} s",
    ]
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            title=f"herdlab report: {run.get('scenario') or '?'} / {run.get('run_id') or '?'}",
            css=Markup(CSS),
            banner=banner(metrics),
            headline=headline(metrics),
            verdict=_verdict(metrics),
            loud_alerts=loud,
            alerts=[a for a in alerts if a not in loud],
            toc=toc,
            description=run.get("description"),
            meta=meta,
            summary_md_name=summary_md_name,
            unit_head=unit_column_headers(),
            definitions=metrics.get("definitions") or [],
            provenance=_provenance(metrics),
            **sections,
        )
    )
