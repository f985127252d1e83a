"""Rendering: three files from a metrics dict, the HTML self-contained, loss shown loudly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.report import load_metrics, render_report
from harness.report.tables import fmt, fmt_mean, side_by_side
from harness.report.terminal import summary_table
from tests.unit.analysis.metrics_fixture import metrics


def test_render_writes_the_three_files_and_plots(tmp_path: Path) -> None:
    m = metrics()
    paths = render_report(tmp_path, m)
    assert {k: p.name for k, p in paths.items()} == {
        "json": "metrics.json",
        "markdown": "summary.md",
        "html": "index.html",
        "plots": "plots",
    }
    assert json.loads(paths["json"].read_text()) == m
    pngs = sorted(p.name for p in paths["plots"].glob("*.png"))
    assert pngs == ["herd.png", "latency.png", "unit-legacy_zk-members_3-r0.png"]
    assert all((paths["plots"] / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in pngs)


def test_html_opens_offline(tmp_path: Path) -> None:
    html = render_report(tmp_path, metrics())["html"].read_text()
    srcs = re.findall(r'src="([^"]+)"', html)
    assert len(srcs) == 3 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r'(src|href)="https?://', html)
    assert "<link" not in html and "<script" not in html


def test_tables_side_by_side_per_implementation(tmp_path: Path) -> None:
    md = render_report(tmp_path, metrics())["markdown"].read_text()
    assert "| metric | legacy_zk p50 | legacy_zk p95 |" in md
    # legacy members=6 latency p50 = 2.0 * 6 / 3 = 4 s, CI [3.8, 4.2]
    assert (
        "| rebalance latency (s) | 4.000 s | 4.000 s | 4.000 s | 4.000 s | 4.000 s [3.800 s, 4.200 s] | 3 |"
        in md
    )
    assert "## Definitions" in md and "**settled t1**" in md


def test_loss_is_loud(tmp_path: Path) -> None:
    paths = render_report(tmp_path, metrics(lost=3))
    html, md = paths["html"].read_text(), paths["markdown"].read_text()
    assert '<div class="alert lost">LOST 3 produced records' in html
    assert "> **LOST RECORDS: LOST 3 produced records" in md
    assert "No produced record was lost" not in html


def test_rerender_from_metrics_json(tmp_path: Path) -> None:
    render_report(tmp_path, metrics())
    again = load_metrics(tmp_path)
    render_report(tmp_path, again)
    assert load_metrics(tmp_path) == metrics()


def test_load_metrics_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no metrics.json in .*herdlab report"):
        load_metrics(tmp_path)
    (tmp_path / "metrics.json").write_text('{"format": "something-else"}')
    with pytest.raises(ConfigError, match="not a herdlab metrics file"):
        load_metrics(tmp_path)


def test_formatting() -> None:
    assert (fmt(None), fmt(None, never=True), fmt(1.23456, "s"), fmt(12.0), fmt(2.345), fmt(123.45)) == (
        "—",
        "never",
        "1.235 s",
        "12",
        "2.35",
        "123.5",
    )
    a = {"metric": "latency_s", "mean": 2.0, "ci95": None, "ci_note": "n=1", "never": 0}
    assert fmt_mean(a) == "2.000 s (n=1)"
    assert fmt_mean({"metric": "latency_s", "mean": None, "never": 1}) == "never"


def test_metrics_without_values_are_left_out_of_tables() -> None:
    tables = side_by_side(metrics())
    names = {n for t in tables for n, _ in t.rows}
    assert "latency_s" in names and "zk_packets" not in names  # zk_packets has no aggregate at all


def test_terminal_table_has_a_row_per_trigger_and_impl_plus_unit_rows() -> None:
    t = summary_table(metrics(lost=2))
    # 2 cases x (1 trigger x 2 impls + 2 whole-unit rows)
    assert t.row_count == 8
    lost = list(t.columns[-1].cells)
    assert lost.count("[bold red]2[/bold red]") == 4 and lost.count("") == 4
