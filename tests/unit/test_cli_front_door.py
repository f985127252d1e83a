"""The commands a new user touches first (CliRunner, no processes): ``scenarios show`` of a file,
``runs list`` where nothing has run yet, the one error style, scenario error messages, ``scenarios
check``'s plan and estimate, ``compare``'s advice when inconclusive, completion."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.cli import cli, main
from harness.run.estimate import run_estimate
from harness.run.runner import planned_cases
from harness.scenario.loading import builtin_text, load_scenario


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """Run the console entry point as a user would: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["herdlab", *args])
    with pytest.raises(SystemExit) as e:
        main()
        sys.exit(0)
    out = capsys.readouterr()
    code = e.value.code
    return (code if isinstance(code, int) else 1), out.out, out.err


def test_scenarios_show_prints_a_file_as_written(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    text = builtin_text("herd-small").replace("herd-small", "mine") + "# my note\n"
    f.write_text(text)
    r = _invoke(["scenarios", "show", str(f)])
    assert r.exit_code == 0
    assert r.stdout == text


def test_scenarios_show_of_a_builtin_prints_its_toml() -> None:
    assert _invoke(["scenarios", "show", "herd-small"]).stdout == builtin_text("herd-small")


def test_scenarios_show_of_a_missing_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.toml"
    code, out, err = _main(monkeypatch, capsys, "scenarios", "show", str(missing))
    assert (code, out) == (2, "")
    assert err == f"herdlab: error: {missing}: no such scenario file\n"


def test_click_usage_errors_print_in_herdlabs_style(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _main(monkeypatch, capsys, "scenarios", "check")
    assert (code, out) == (2, "")
    assert err == (
        "herdlab: error: Missing argument 'SCENARIO'.\n"
        "herdlab: usage: herdlab scenarios check [OPTIONS] SCENARIO (see 'herdlab scenarios check --help')\n"
    )
    code, _, err = _main(monkeypatch, capsys, "scenarios", "chek")
    assert code == 2
    assert err.startswith("herdlab: error: No such command 'chek'.")
    assert "Error:" not in err and "Usage:" not in err


def test_a_bad_option_value_prints_in_herdlabs_style(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _main(monkeypatch, capsys, "runs", "list", "--json", "--out")
    assert code == 2
    assert err.splitlines()[0] == "herdlab: error: Option '--out' requires an argument."


_TWO_CASES = """
name = "t"
implementations = ["coordinator"]
repetitions = 2
settle_window = "2s"
drain = "5s"

[group]
members = [3, 4]

[group.coordinator]
session_timeout_ms = 6000
heartbeat_interval_ms = 1000

[[timeline]]
at = "2s"
action = "join"

[[timeline]]
at = "10s"
action = "leave"
count = 2
"""


def test_scenarios_check_prints_the_timeline_the_units_and_an_estimate(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(_TWO_CASES)
    r = _invoke(["scenarios", "check", str(f)])
    assert r.exit_code == 0, r.output
    # per unit: start-up allowance 10 + stable 2 (settle_window) + timeline 10 (the last step)
    # + settle 6 (session timeout) + 2 (settle_window) + drain 5 = 35 s; 2 cases x 1 x 2 repetitions
    # = 4 units: 140 s, about 2 min
    assert r.stdout == (
        "t: group.members=3: 3 members, 3 partitions\n"
        "t: group.members=4: 4 members, 4 partitions\n"
        "timeline:\n"
        "  1. at 2s: join\n"
        "  2. at 10s: leave count=2\n"
        "units: 4 = 2 cases x 1 implementation x 2 repetitions\n"
        "estimated duration: about 2 min for 4 units (an estimate from the plan; the analysis after the "
        "units is not counted)\n"
        "  longest unit (coordinator, group.members=3): about 35 s = start-up allowance 10s + stable >= 2s"
        " + timeline 10s + settle 8s + drain <= 5s\n"
    )


def test_the_estimate_of_each_unit_is_the_sum_of_its_phases(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(_TWO_CASES)
    s = load_scenario(f)
    units = run_estimate(s, planned_cases(s))
    assert [(u.case, u.repetition) for u in units] == [
        ("group.members=3", 0),
        ("group.members=3", 1),
        ("group.members=4", 0),
        ("group.members=4", 1),
    ]
    assert {(u.startup, u.stable, u.timeline, u.settle, u.drain, u.total) for u in units} == {
        (10.0, 2.0, 10.0, 8.0, 5.0, 35.0)
    }


def _complete(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *words: str) -> list[str]:
    """What click's bash completion answers for the command line ``words`` (the last one being typed)."""
    monkeypatch.setenv("_HERDLAB_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", " ".join(["herdlab", *words]))
    monkeypatch.setenv("COMP_CWORD", str(len(words)))
    code, out, _ = _main(monkeypatch, capsys)
    assert code == 0
    return out.splitlines()


def test_scenario_arguments_complete_builtin_names_and_toml_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "herd-mine.toml").write_text("")
    (tmp_path / "herd-notes.txt").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.toml").write_text("")
    expected = ["plain,herd", "plain,herd-small", "plain,herd-mine.toml"]
    for command in (["run"], ["simulate"], ["scenarios", "show"], ["scenarios", "check"]):
        assert _complete(monkeypatch, capsys, *command, "herd") == expected, command
    assert _complete(monkeypatch, capsys, "run", "sub/") == ["plain,sub/other.toml"]


def test_completion_prints_each_shells_script(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, bash, _ = _main(monkeypatch, capsys, "completion", "bash")
    assert code == 0 and "_HERDLAB_COMPLETE=bash_complete" in bash and "complete -o nosort" in bash
    code, zsh, _ = _main(monkeypatch, capsys, "completion", "zsh")
    assert code == 0 and zsh.startswith("#compdef herdlab") and "_HERDLAB_COMPLETE=zsh_complete" in zsh


def test_a_member_process_prints_click_errors_in_herdlabs_style(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.members.__main__ import main as member_main

    monkeypatch.setattr(sys, "argv", ["harness.members", "coordinator", "--no-such-option"])
    with pytest.raises(SystemExit) as e:
        member_main()
    assert e.value.code == 2
    assert capsys.readouterr().err == "herdlab: error: No such option '--no-such-option'.\n"


@pytest.mark.parametrize("args, wide", [([], False), (["--wide"], True)])
def test_demo_runs_herd_small_and_passes_wide_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str], wide: bool
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        "harness.cli.run.execute", lambda scenario, overrides, **kw: seen.append((scenario, kw))
    )
    r = _invoke(["demo", "--out", str(tmp_path), *args])
    assert r.exit_code == 0, r.output
    assert seen == [("herd-small", {"out": tmp_path, "spark_master": None, "wide": wide})]
