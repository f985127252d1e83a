"""The reports' "Migration proof" section, rendered from a metrics dict written by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.report import render_report
from harness.report.terminal import verdict_panel
from tests.support.metrics import build, metrics, unit


def part(p: int, **kw: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "topic": "t-migration",
        "partition": p,
        "taken_over_s": None,
        "zookeeper_committed": None,
        "kafka_committed": None,
        "committed": None,
        "processed_last": None,
        "resumed": [],
        "resumed_at": None,
        "window": 0,
        "reprocessed": 0,
        "lost": 0,
        "overlap_episodes": 0,
        "overlap_s": 0.0,
        "verdict": "not_taken_over",
    }
    e.update(kw)
    return e


def migrated() -> dict[str, Any]:
    """One legacy_zk unit switched all at once (its 3rd migration action) at 12.5 s: p0 clean (resumed
    at the committed 40, 2 reprocessed within the window 41 + 1 - 40 = 2), p1 replayed (resumed at 0:
    36 reprocessed > window 35 + 1 - 30 = 6). The scenario expected replay."""
    switch = {
        "step": 3,
        "action": "switch",
        "mode": "all_at_once",
        "from": "legacy_zk",
        "to": "coordinator",
        "t_s": 12.5,
        "partitions": [
            part(
                0,
                taken_over_s=13.2,
                zookeeper_committed=40,
                committed=40,
                processed_last=41,
                resumed=[{"member": "c0", "offset": 40}, {"member": "c1", "offset": 45}],
                resumed_at=40,
                window=2,
                reprocessed=2,
                verdict="clean",
            ),
            part(
                1,
                taken_over_s=13.25,
                zookeeper_committed=30,
                committed=30,
                processed_last=35,
                resumed=[{"member": "c1", "offset": 0}],
                resumed_at=0,
                window=6,
                reprocessed=36,
                verdict="replay",
            ),
        ],
        "verdict": "replay",
    }
    u = unit("legacy_zk", "migration", 0, [], migration={"switches": [switch], "verdict": "replay"})
    out = build([u])
    out["migration"] = {
        "expect": "replay",
        "verdict": "replay",
        "units": {"legacy_zk migration rep 0": "replay"},
        "as_expected": True,
    }
    return out


def test_summary_shows_the_verdict_the_expected_one_and_the_partition_table(tmp_path: Path) -> None:
    md = render_report(tmp_path, migrated())["markdown"].read_text()
    lines = md.splitlines()
    i = lines.index("## Migration proof")
    assert lines[i + 2] == "**Migration verdict: replay (expected: replay, as expected)**"
    j = lines.index(
        "### legacy_zk migration rep 0: #3 switch (all_at_once) legacy_zk → coordinator at 12.500 s: replay"
    )
    assert lines[j + 2 : j + 6] == [
        "| partition | taken over | ZooKeeper committed | Kafka committed | committed | processed last | "
        "resumed (member@offset) | window | reprocessed | lost | overlap episodes | overlap | verdict |",
        "|" + "---|" * 13,
        "| t-migration/0 | 13.200 s | 40 | — | 40 | 41 | c0@40, c1@45 | 2 | 2 | 0 | 0 | 0.000 s | clean |",
        "| t-migration/1 | 13.250 s | 30 | — | 30 | 35 | c1@0 | 6 | 36 | 0 | 0 | 0.000 s | replay |",
    ]
    # after the verdict, before the side-by-side results
    assert lines.index("## Verdict") < i < lines.index("## Results per trigger, side by side")


def test_html_shows_the_section_and_marks_an_unexpected_verdict(tmp_path: Path) -> None:
    m = migrated()
    m["migration"].update(expect="clean", as_expected=False)
    html = render_report(tmp_path, m)["html"].read_text()
    assert "<h2>Migration proof</h2>" in html
    assert (
        '<div class="alert"><b>Migration verdict: replay (expected: clean, NOT as expected)</b></div>' in html
    )
    assert "<td>c0@40, c1@45</td>" in html


def test_no_section_without_a_switch(tmp_path: Path) -> None:
    paths = render_report(tmp_path, metrics())
    assert "Migration proof" not in paths["markdown"].read_text()
    assert "Migration proof" not in paths["html"].read_text()


def test_terminal_verdict_panel_ends_with_the_migration_verdict() -> None:
    c = Console(width=200, record=True, color_system=None)
    c.print(verdict_panel(migrated()))
    assert (
        c.export_text().rstrip().splitlines()[-1]
        == "Migration verdict: replay (expected: replay, as expected)"
    )
    c = Console(width=200, record=True, color_system=None)
    c.print(verdict_panel(metrics()))
    assert "Migration verdict" not in c.export_text()
