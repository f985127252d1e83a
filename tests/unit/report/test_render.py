"""Rendering: three files from a metrics dict, the HTML self-contained, the verdict first, never
and loss shown loudly, one repetition as one value."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from harness.kernel.errors import ConfigError
from harness.report import load_metrics, render_report
from harness.report.tables import fmt, fmt_mean, fmt_ratio, side_by_side, unit_rows
from harness.report.terminal import summary_table, verdict_panel
from tests.support.metrics import build, metrics, trigger, unit


def _text(renderable: object) -> str:
    c = Console(width=250, record=True, color_system=None)
    c.print(renderable)
    return c.export_text()


def test_render_writes_the_three_files_and_plots(tmp_path: Path) -> None:
    m = metrics()
    paths = render_report(tmp_path, m)
    assert {k: p.name for k, p in paths.items()} == {
        "json": "metrics.json",
        "markdown": "summary.md",
        "html": "index.html",
        "plots": "plots",
    }
    assert json.loads(paths["json"].read_text()) == json.loads(json.dumps(m))
    pngs = sorted(p.name for p in paths["plots"].glob("*.png"))
    assert pngs == ["herd.png", "latency.png", "unit-legacy_zk-members_3-r0.png"]
    assert all((paths["plots"] / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in pngs)


def test_html_opens_offline(tmp_path: Path) -> None:
    html = render_report(tmp_path, metrics())["html"].read_text()
    srcs = re.findall(r'src="([^"]+)"', html)
    assert len(srcs) == 3 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r'(src|href)="https?://', html)
    assert "<link" not in html and "<script" not in html


def test_reports_lead_with_the_verdict(tmp_path: Path) -> None:
    paths = render_report(tmp_path, metrics())
    md, html = paths["markdown"].read_text(), paths["html"].read_text()
    # the verdict comes right after the title and the headline (test_headline), before any other section
    assert md.index("## Verdict") < md.index("## Results per trigger")
    assert md.splitlines()[4:7] == [
        "## Verdict",
        "",
        "**VALID: 12 units, no record lost, every tail drained, no unit failed**",
    ]
    assert html.index('<div class="verdict"><h2>Verdict</h2>') < html.index("Results per trigger")
    # members=3 crash: latency 2.0 s / 1.0 s = 2x, requests 10 / 7 = 1.43x (intervals in test_verdict)
    # two implementations: the table's title names the pair, which no column repeats
    assert "*legacy_zk / coordinator, per trigger kind*" in md
    assert '<p class="caption">legacy_zk / coordinator, per trigger kind</p>' in html
    assert "compared (legacy_zk / other)" not in md and "compared (legacy_zk / other)" not in html
    (line,) = [x for x in md.splitlines() if x.startswith("| members=3 | crash")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:2] == ["members=3", "crash (#1 crash)"]
    assert "| case | trigger kind | latency ratio |" in md
    assert cells[2].startswith("2.00× [") and cells[3] == "2.000 s / 1.000 s"
    assert cells[4].startswith("1.43× [") and cells[5] == "10 / 7" and cells[6] == "3 / 3"
    assert "| legacy_zk | 6 | 0 | 0 | 0 | 0 | 0.000 s | 0 | n/a |" in md
    assert "| coordinator | 6 | 0 | 0 | 0 | 0 | 0.000 s | 0 | 0 |" in md
    assert "all triggers pooled" not in md and "all triggers pooled" not in html


def test_terminal_leads_with_the_headline_then_the_verdict() -> None:
    text = _text(verdict_panel(metrics(lost=2)))
    first, second = text.splitlines()[:2]
    assert first.startswith("legacy_zk sent ") and "the coordination requests of coordinator" in first
    assert second.startswith("verdict: INVALID: 6 records lost in 3 units")
    assert "legacy_zk / coordinator" in text


def test_side_by_side_tables_with_statistics(tmp_path: Path) -> None:
    md = render_report(tmp_path, metrics())["markdown"].read_text()
    assert "| metric | legacy_zk p50 | legacy_zk p95 |" in md
    # legacy members=6 latency 3.8, 4.0, 4.2 s: p95 4.18, CI 4 +- 0.496828
    assert (
        "| rebalance latency (s) | 4.000 s | 4.180 s | 4.196 s | 4.200 s | 4.000 s [3.503 s, 4.497 s] | 3 |"
        in md
    )
    assert "## Definitions" in md and "**settled t1 and outcomes**" in md


def test_one_repetition_shows_one_value(tmp_path: Path) -> None:
    m = build(
        [
            unit("legacy_zk", "c", 0, [trigger(latency=3.0, requests=30)]),
            unit("coordinator", "c", 0, [trigger(latency=1.5, requests=6, impl="coordinator")]),
        ]
    )
    md = render_report(tmp_path, m)["markdown"].read_text()
    assert "| metric | legacy_zk value | coordinator value |" in md
    assert "| rebalance latency (s) | 3.000 s | 1.500 s |" in md
    assert "legacy_zk p95" not in md and "coordinator p50" not in md
    t = _text(summary_table(m))
    (row,) = [x for x in t.splitlines() if "legacy_zk" in x and "#1 crash" in x]
    assert "3.000 s" in row and row.count("3.000 s") == 1  # no max column repeating the value


def test_never_reads_never_everywhere(tmp_path: Path) -> None:
    units = [unit("coordinator", "c", r, [trigger(latency=1.0, impl="coordinator")]) for r in range(19)]
    units.append(unit("coordinator", "c", 19, [trigger(outcome="never", impl="coordinator")]))
    m = build(units)
    md = render_report(tmp_path, m)["markdown"].read_text()
    # 19 x 1.0 s and one never: p50 1.0, p95 / p99 / max never; mean 1.0 over 19 (sd 0: CI [1, 1])
    assert (
        "| rebalance latency (s) | 1.000 s | never | never | never | 1.000 s [1.000 s, 1.000 s] (1 never left out) | 20 |"
        in md
    )
    assert "e+" not in md  # no stand-in number for never anywhere


def test_loss_and_undrained_tails_are_loud(tmp_path: Path) -> None:
    paths = render_report(tmp_path, metrics(lost=3, not_drained=1))
    html, md = paths["html"].read_text(), paths["markdown"].read_text()
    assert '<div class="alert lost">LOST 3 records in legacy_zk members=3 rep 0' in html
    assert '<div class="alert lost">NOT DRAINED: 1 acknowledged records' in html
    assert '<div class="verdict invalid">' in html
    assert "> **LOST 3 records in legacy_zk members=3 rep 0" in md
    assert "**INVALID: 9 records lost in 3 units" in md


def test_rerender_from_metrics_json(tmp_path: Path) -> None:
    render_report(tmp_path, metrics())
    again = load_metrics(tmp_path)
    render_report(tmp_path, again)
    assert load_metrics(tmp_path) == json.loads(json.dumps(metrics()))


def test_verdict_is_computed_for_metrics_without_one(tmp_path: Path) -> None:
    m = metrics()
    del m["verdict"]
    md = render_report(tmp_path, m)["markdown"].read_text()
    assert "**VALID: 12 units" in md


def test_load_metrics_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no metrics.json in .*herdlab report"):
        load_metrics(tmp_path)
    (tmp_path / "metrics.json").write_text('{"format": "something-else"}')
    with pytest.raises(ConfigError, match="not a herdlab metrics file"):
        load_metrics(tmp_path)


def test_formatting() -> None:
    assert (
        fmt(None),
        fmt(None, never=True),
        fmt("never", "s"),
        fmt(1.23456, "s"),
        fmt(12.0),
        fmt(2.345),
    ) == (
        "—",
        "never",
        "never",
        "1.235 s",
        "12",
        "2.35",
    )
    a = {"metric": "latency_s", "mean": 2.0, "ci95": None, "left_out": 0}
    assert fmt_mean(a) == "2.000 s"
    assert fmt_mean({"metric": "latency_s", "mean": None, "left_out": 1}) == "never"
    assert fmt_mean({"metric": "latency_s", "mean": None, "m": 0, "no_effect": 2}) == "no effect"
    assert fmt_ratio({"ratio": 2.0, "ci95": [1.155, 13.851]}) == "2.00× [1.16, 13.9]"
    assert fmt_ratio({"ratio": 1.5, "ci95": None}) == "1.50×"
    assert fmt_ratio({"ratio": 0.5, "ci95": [0.25, 123.4]}) == "0.500× [0.250, 123]"
    assert fmt_ratio({"ratio": None}) == "—"


def test_metrics_without_values_are_left_out_of_tables() -> None:
    names = {n for t in side_by_side(metrics()) for n, _ in t.rows}
    assert "latency_s" in names and "zk_packets" not in names  # zk_packets was never measured


def test_unit_rows_show_outcomes_not_numbers() -> None:
    m = build([unit("coordinator", "c", 0, [trigger(outcome="no_effect", impl="coordinator")])])
    (t,) = [r for r in unit_rows(m) if r["kind"] == "trigger"]
    assert t["cells"][2:7] == ["no effect"] * 5  # outcome, latency, detection, convergence, resumed


def test_terminal_table_has_a_row_per_trigger_and_impl_plus_unit_rows() -> None:
    t = summary_table(metrics(lost=2, not_drained=1))
    # 2 cases x (1 trigger x 2 impls + 2 whole-unit rows)
    assert t.row_count == 8
    lost, tail = list(t.columns[-2].cells), list(t.columns[-1].cells)
    assert lost.count("[bold red]2[/bold red]") == 1 and lost.count("0") == 3 and lost.count("") == 4
    assert tail.count("[bold red]1[/bold red]") == 1
