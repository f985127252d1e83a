"""The reports' "Overlap episodes" section, rendered from a metrics dict written by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.report import render_report
from harness.report.tables import MAX_OVERLAP_ROWS
from tests.support.metrics import build, metrics, trigger, unit


def episode(
    start: float, end: float, members: list[dict[str, Any]], p: int = 1, tid: int = 0
) -> dict[str, Any]:
    return {
        "p": p,
        "tid": tid,
        "start_s": start,
        "end_s": end,
        "duration_s": round(end - start, 6),
        "members": members,
    }


def with_episodes(n: int) -> dict[str, Any]:
    """One coordinator unit with a cut of m0 (#1 cut) and ``n`` episodes on p1: the first has m0's
    one record (offset 91, also m1's) and none of m1's; the others one record each."""
    first = episode(
        19.084,
        19.087,
        [
            {"member": "m0", "records": 1, "offsets": [91, 91], "duplicates": 1},
            {"member": "m1", "records": 0, "offsets": None, "duplicates": 0},
        ],
    )
    rest = [
        episode(20.0 + i, 20.5 + i, [{"member": "m1", "records": 3, "offsets": [10, 12], "duplicates": 2}])
        for i in range(n - 1)
    ]
    u = unit("coordinator", "default", 0, [trigger(0, "cut", impl="coordinator")], overlaps=[first, *rest])
    return build([u])


def test_each_episode_lists_the_records_of_its_members(tmp_path: Path) -> None:
    md = render_report(tmp_path, with_episodes(1))["markdown"].read_text()
    lines = md.splitlines()
    i = lines.index("## Overlap episodes")
    assert lines[i + 4 : i + 7] == [
        "| unit | phase | partition | start | end | duration | records per member |",
        "|" + "---|" * 7,
        "| coordinator default r0 | #1 cut | 1 | 19.084 s | 19.087 s | 0.003 s | m0: 1 record (offset 91), "
        "1 duplicate; m1: no record |",
    ]
    assert "more episodes" not in md


def test_the_table_is_cut_at_its_limit_and_says_how_many_it_left_out(tmp_path: Path) -> None:
    paths = render_report(tmp_path, with_episodes(MAX_OVERLAP_ROWS + 3))
    md = paths["markdown"].read_text()
    assert "3 more episodes in metrics.json (`units[].overlaps`)." in md
    assert "m1: 3 records (offsets 10-12), 2 duplicates" in md
    assert "<h2>Overlap episodes</h2>" in paths["html"].read_text()


def test_no_section_without_an_episode(tmp_path: Path) -> None:
    paths = render_report(tmp_path, metrics())
    assert "Overlap episodes" not in paths["markdown"].read_text()
    assert "Overlap episodes" not in paths["html"].read_text()
