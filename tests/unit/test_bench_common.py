"""The benches' shared pieces: the group-sizes option type, the one ``unit_start`` marker and the
merged events of a bench directory."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from harness.bench.common import Sizes, emit_unit_start, merged_events
from harness.history.writer import HistoryWriter, read_events
from harness.kernel.ownership import GroupView


def _command(sizes: Sizes) -> click.Command:
    @click.command()
    @click.option("--sizes", type=sizes, default="10,50")
    def show(sizes: tuple[int, ...]) -> None:
        click.echo(repr(sizes))

    return show


def test_sizes_parse_to_a_tuple_and_the_default_parses_too() -> None:
    cmd = _command(Sizes(minimum=1))
    assert CliRunner().invoke(cmd, ["--sizes", "3, 7"]).output == "(3, 7)\n"
    assert CliRunner().invoke(cmd, []).output == "(10, 50)\n"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1,x", "'1,x' is not a comma-separated list of group sizes"),
        ("5,1", "group sizes must be at least 2 (one member is the crash victim), got '5,1'"),
        ("", "group sizes must be at least 2 (one member is the crash victim), got ''"),
    ],
)
def test_sizes_reject_with_one_line(value: str, message: str) -> None:
    result = CliRunner().invoke(
        _command(Sizes(minimum=2, why=" (one member is the crash victim)")), ["--sizes", value]
    )
    assert result.exit_code == 2
    assert message in result.output


def test_unit_start_gives_the_view_its_partitions_and_merged_events_read_every_file(tmp_path: Path) -> None:
    with HistoryWriter(tmp_path / "nemesis.jsonl", source="nemesis", role="nemesis") as h:
        emit_unit_start(h, "t", "g", 3, ["m0", "m1"])
    with HistoryWriter(tmp_path / "m0.jsonl", source="m0", role="member") as m:
        m.emit("ready")
    (start,) = read_events(tmp_path / "nemesis.jsonl")
    assert (start["kind"], start["role"], start["topic"], start["group"]) == (
        "unit_start",
        "harness",
        "t",
        "g",
    )
    assert (start["partitions"], start["members"]) == (3, ["m0", "m1"])
    events = merged_events(tmp_path)
    assert [e["source"] for e in events] == ["m0", "nemesis"]  # file by file, in name order
    view = GroupView()
    view.apply_all(events)
    assert view.partitions == 3
