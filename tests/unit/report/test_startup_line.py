"""The start-up line of each unit in the three reports (Markdown, HTML, terminal)."""

from __future__ import annotations

from rich.console import Console

from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.tables import startup_rows, unit_rows
from harness.report.terminal import verdict_panel
from tests.support.metrics import build, trigger, unit

LEGACY = "start-up: 500 members ready in 12.3 s, first stable after 162.9 s"
COORDINATOR = "start-up: 200 members ready in 30.0 s, never stable"


def _metrics() -> dict:
    legacy = unit("legacy_zk", "default", 0, [trigger(latency=2.0, requests=9, impl="legacy_zk")])
    legacy["start_up"] = {"members_ready": 500, "first_ready_s": 6.5, "all_ready_s": 12.34, "stable_s": 162.9}
    coordinator = unit("coordinator", "default", 0, [trigger(latency=1.0, requests=4, impl="coordinator")])
    coordinator["start_up"] = {
        "members_ready": 200,
        "first_ready_s": 1.0,
        "all_ready_s": 30.0,
        "stable_s": None,
    }
    quiet = unit("coordinator", "default", 1, [trigger(latency=1.0, requests=4, impl="coordinator")])
    quiet["start_up"] = None  # no member wrote ready: no line
    return build([legacy, coordinator, quiet])


def test_each_unit_with_a_start_up_entry_gets_its_line_before_its_triggers() -> None:
    m = _metrics()
    assert [(r["unit"], r["text"]) for r in startup_rows(m)] == [
        ("legacy_zk default r0", LEGACY),
        ("coordinator default r0", COORDINATOR),
    ]
    rows = unit_rows(m)
    first = next(i for i, r in enumerate(rows) if r["unit"] == "legacy_zk default r0")
    assert rows[first]["kind"] == "start_up"
    assert rows[first + 1]["kind"] == "trigger"


def test_the_line_is_in_markdown_html_and_the_terminal() -> None:
    m = _metrics()
    md, html = render_markdown(m, []), render_html(m, [])
    assert f"| legacy_zk default r0 | {LEGACY} |" in md
    assert COORDINATOR in md and md.count("start-up: ") == 2
    assert LEGACY in html and COORDINATOR in html
    console = Console(width=200, record=True)
    console.print(verdict_panel(m))
    text = console.export_text()
    assert f"legacy_zk default r0: {LEGACY}" in text
    assert f"coordinator default r0: {COORDINATOR}" in text
