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
from harness.scenario.loading import builtin_text


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
