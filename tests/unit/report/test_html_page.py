"""The HTML page's form: viewport tag, folded per-trigger tables, wide tables in their own scrolling
box, human column headings, inline code, sizes in binary units."""

from __future__ import annotations

import re
from typing import Any

from harness.report.html import inline_code, render_html
from harness.report.tables import fmt_bytes
from tests.support.metrics import metrics


def _page(**run: Any) -> str:
    m: Any = metrics()
    m["run"].update(run)
    m["definitions"] = [["settle window", "Quiet for `settle_window_s` after the last `rebalance_end` <ok>."]]
    return render_html(m, [])


def test_viewport_tag() -> None:
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in _page()


def test_backticks_in_definitions_render_as_code_and_the_rest_is_escaped() -> None:
    html = _page()
    assert (
        "<dt>settle window</dt><dd>Quiet for <code>settle_window_s</code> after the last "
        "<code>rebalance_end</code> &lt;ok&gt;.</dd>"
    ) in html
    assert str(inline_code("`<b>`")) == "<code>&lt;b&gt;</code>"


def test_memory_reads_in_gib() -> None:
    # 25275990016 B / 1024^3 = 23.54 GiB
    html = _page(machine={"cpus": 2, "memory_bytes": 25275990016})
    assert '<td class="l">cpus 2, memory 23.5 GiB</td>' in html
    assert "25275990016" not in html


def test_sizes_in_binary_units() -> None:
    assert [fmt_bytes(v) for v in (512, 1536, 5 * 1024**2, 3 * 1024**3, 2048 * 1024**3)] == [
        "512 B",
        "1.5 KiB",
        "5.0 MiB",
        "3.0 GiB",
        "2048.0 GiB",
    ]
    assert fmt_bytes(None) == "—"


def test_per_trigger_tables_are_folded_and_every_table_scrolls_in_its_own_box() -> None:
    html = _page()
    # the default run: two cases, one crash each, plus their whole-unit tables
    summaries = re.findall(r"<details><summary>([^<]*)</summary>\n<div class=\"scroll\"><table>", html)
    assert summaries[:2] == ["members=3: trigger #1 crash m1", "members=3: whole units"]
    assert html.count("<table") == html.count('<div class="scroll"><table')


def test_every_unit_table_has_human_headings() -> None:
    html = _page()
    head = re.search(r'<section id="units">.*?<thead><tr>(.*?)</tr></thead>', html, re.S)
    assert head
    cols = re.findall(r"<th[^>]*>([^<]*)</th>", head.group(1))
    assert cols[:5] == ["unit", "trigger", "t0 (s)", "outcome", "rebalance latency (s)"]
    assert "latency_s" not in cols
