"""The terminal report fits its width: COLUMNS respected when not a terminal, no line wider, full
short case labels with their legend, a narrow table by default and every column with --wide, empty
columns left out. No Spark: hand-made documents and the regression fixture's metrics."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from harness.cli.output import DEFAULT_WIDTH, OutputConsole, output_width
from harness.cli.report import report
from harness.report.case_labels import short_labels
from harness.report.terminal import summary_table, terminal_report
from tests.support.metrics import build, metrics, trigger, unit

REGRESSION = Path(__file__).parents[2] / "data" / "regression"


def _fixture(name: str) -> dict[str, Any]:
    return json.loads((REGRESSION / name / "expected-metrics.json").read_text())


@pytest.fixture(autouse=True)
def _no_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """``report`` prints without writing the HTML and Markdown reports (not what these tests look at)."""
    monkeypatch.setattr(
        "harness.cli.report.render",
        lambda run_dir, _: {k: run_dir / f"{k}.out" for k in ("html", "markdown", "json")},
    )


def _report(tmp_path: Path, name: str, *args: str, columns: str | None) -> Result:
    """``herdlab report --from-metrics`` on the fixture's metrics (output captured: not a terminal)."""
    run = tmp_path / name
    run.mkdir(parents=True)
    shutil.copy(REGRESSION / name / "expected-metrics.json", run / "metrics.json")
    # COLUMNS None: unset for the command
    r = CliRunner().invoke(report, [str(run), "--from-metrics", *args], env={"COLUMNS": columns})
    assert r.exit_code == 0, r.output
    return r


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _headers(table: Any) -> list[str]:
    return [c.header for c in table.columns]


def test_at_100_columns_no_line_is_wider_and_both_group_sizes_show(tmp_path: Path) -> None:
    out = _report(tmp_path, "herd-small", columns="100").output
    assert _widest(out) <= 100
    # the case column holds N=4 and N=8 whole, on the ratio table and the summary table
    assert out.count("│ N=4 ") >= 2 and out.count("│ N=8 ") >= 2
    assert "group.mem…" not in out and "…" not in out
    assert "case keys: N = group.members" in out


def test_columns_is_respected_when_not_a_terminal(tmp_path: Path) -> None:
    assert _widest(_report(tmp_path / "a", "herd-small", columns="80").output) <= 80
    # the verdict's explanation is a paragraph: it fills whatever width it is given
    wide = _report(tmp_path / "b", "herd-small", columns="160").output
    assert 100 < _widest(wide) <= 160


def test_output_width_without_a_terminal() -> None:
    assert output_width({"COLUMNS": "100"}) == 100
    assert output_width({}) == DEFAULT_WIDTH == 120
    assert output_width({"COLUMNS": "0"}) == 120
    assert output_width({"COLUMNS": "wide"}) == 120


def test_the_console_follows_columns_when_not_a_terminal_and_the_terminal_when_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    piped = OutputConsole(file=io.StringIO())
    monkeypatch.setenv("COLUMNS", "77")
    assert not piped.is_terminal and piped.width == 77  # read when asked, not when made
    monkeypatch.delenv("COLUMNS")
    assert piped.width == 120
    # a terminal: rich's own measure (here the width it is told)
    assert OutputConsole(file=io.StringIO(), force_terminal=True, width=90).width == 90


def test_without_columns_the_default_width_is_120(tmp_path: Path) -> None:
    out = _report(tmp_path, "herd-small", columns=None).output
    assert _widest(out) <= 120
    assert _widest(out) > 100  # the paragraph fills the 120


@pytest.mark.parametrize("name", ["split-brain", "coordinators", "coordinator-failover", "migration"])
def test_every_fixture_fits_100_columns_with_whole_key_cells(tmp_path: Path, name: str) -> None:
    c = Console(width=100, record=True, color_system=None)
    c.print(terminal_report(_fixture(name)))
    text = c.export_text()
    assert _widest(text) <= 100 and "…" not in text


def test_split_brain_case_labels_wrap_between_their_keys() -> None:
    c = Console(width=100, record=True, color_system=None)
    c.print(summary_table(_fixture("split-brain")))
    lines = c.export_text().splitlines()
    # the short label fenced_commits=True takeover_delay_ms=6000 on two lines of the case column
    (i,) = [i for i, line in enumerate(lines) if line.startswith("│ fenced_commits=True ")][1:]
    assert lines[i + 1].startswith("│ takeover_delay_ms=6000 ")


def test_the_failover_table_names_the_case_by_its_short_label() -> None:
    m = _fixture("coordinator-failover")
    m["cases"] = [
        {"label": f"group.members={n}", "params": {"group.members": n}, "members": n} for n in (3, 6)
    ]
    for u in m["units"]:
        u["case"] = "group.members=3"
    c = Console(width=200, record=True, color_system=None)
    c.print(terminal_report(m))
    text = c.export_text()
    assert "│ N=3 rep 0: #1 kill_coordinator" in text and "group.members=3 rep" not in text


def test_short_case_labels_and_their_legend() -> None:
    herd = short_labels(_fixture("herd-small")["cases"])
    assert herd.short == {"group.members=4": "N=4", "group.members=8": "N=8"}
    assert herd.legend == ["case keys: N = group.members"]
    # two keys the same in every case: left out of the label, named once in the legend
    coord = short_labels(_fixture("coordinators")["cases"])
    assert sorted(coord.short.values()) == ["broker=herdlab", "broker=tansu"]
    assert coord.legend == [
        "case keys: broker = cluster.broker",
        "every case: group.coordinator.client=kafka-python, group.assignor=range",
    ]
    # last segments that clash keep one more segment
    clash = short_labels(
        [
            {"label": "a.b.x=1,c.d.x=2", "params": {"a.b.x": 1, "c.d.x": 2}},
            {"label": "a.b.x=2,c.d.x=3", "params": {"a.b.x": 2, "c.d.x": 3}},
        ]
    )
    assert clash.short == {"a.b.x=1,c.d.x=2": "b.x=1 d.x=2", "a.b.x=2,c.d.x=3": "b.x=2 d.x=3"}
    assert clash.legend == ["case keys: b.x = a.b.x, d.x = c.d.x"]
    # one case: nothing varies, every key is shown; no parameters: the label as it is
    assert short_labels([{"label": "group.members=4", "params": {"group.members": 4}}]).short == {
        "group.members=4": "N=4"
    }
    assert short_labels([{"label": "default", "params": {}}]).short == {"default": "default"}
    assert short_labels([{"label": "default"}]).legend == []


def test_the_narrow_table_by_default_and_every_column_with_wide() -> None:
    m = metrics()  # three repetitions: the max column has values
    narrow = [
        "case",
        "trigger",
        "impl",
        "n",
        "latency p50",
        "latency max",
        "coord req",
        "overlaps",
        "dup",
        "lost",
        "not drained",
    ]
    assert _headers(summary_table(m)) == narrow
    # every column but zk pkts, which no trigger of the hand-made run has (zk_packets None)
    assert _headers(summary_table(m, wide=True)) == [
        *narrow[:6],
        "detect",
        "resumed",
        "coord req",
        "watches",
        "zk req",
        "broker coord",
        "conflicts",
        "failed",
        *narrow[7:],
    ]


def test_wide_on_the_command_line(tmp_path: Path) -> None:
    narrow = _report(tmp_path / "a", "herd-small", columns="200").output
    wide = _report(tmp_path / "b", "herd-small", "--wide", columns="200").output
    for header in ("detect", "resumed", "watches", "zk req", "zk pkts", "conflicts"):
        assert f" {header} " not in narrow and f" {header} " in wide
    assert "latency means" in wide and "latency means" not in narrow


def test_wide_lays_cells_out_whole_even_past_the_width(tmp_path: Path) -> None:
    out = _report(tmp_path, "herd-small", "--wide", columns="100").output
    # N=4's first row: legacy_zk's join, 0.185 s, detected after 0.024 s, resumed after 0.212 s (the
    # fixture's values), each on one line, and the line is longer than 100 rather than folded
    row = [line for line in out.splitlines() if line.startswith("│ N=4 ")][-1]  # the summary table's
    assert "│ 0.185 s │ 0.024 s │ 0.212 s │" in row and "#1 join j0" in row
    assert len(row) > 100


def test_empty_columns_are_left_out() -> None:
    # one repetition (no max beside the one value) and no ZooKeeper packet count anywhere
    m = build(
        [
            unit("legacy_zk", "c", 0, [trigger(latency=3.0)]),
            unit("coordinator", "c", 0, [trigger(latency=1.5, impl="coordinator")]),
        ]
    )
    headers = _headers(summary_table(m, wide=True))
    assert "latency max" not in headers and "zk pkts" not in headers
    assert "latency p50" in headers and "zk req" in headers


def test_two_implementations_are_named_once_in_the_title_and_a_shared_note_once_per_row(
    tmp_path: Path,
) -> None:
    # herd-small compares legacy_zk with the coordinator only, one repetition each: every ratio row's
    # pair is "legacy_zk / coordinator" and both of its ratios carry the note "n=1, no CI"
    out = _report(tmp_path, "herd-small", columns="120").output
    lines = out.splitlines()
    assert any(line.startswith("legacy_zk / coordinator, per trigger kind") for line in lines)
    assert "latency: n=1" not in out and "requests: n=1" not in out
    rows = [line for line in lines if "│" in line]
    # one per ratio row (2 group sizes x 3 trigger kinds), besides the headline's
    assert sum("n=1, no CI" in line for line in rows) == 6
    wide = _report(tmp_path / "wide", "herd-small", "--wide", columns="300").output
    assert "legacy_zk against the other implementations, per trigger kind" in wide


def test_the_terminal_report_leads_with_the_headline(tmp_path: Path) -> None:
    # herd-small's request ratios run from 4.95x (N=4 join) to 8.76x (N=8 crash); one repetition a side
    out = _report(tmp_path, "herd-small", columns="200").output
    first = out.splitlines()[0]
    assert first.startswith("legacy_zk sent 4.95–8.76× the coordination requests of coordinator")
    assert first.endswith("n=1, no CI: use 5 or more repetitions")
