"""A scenario the simulator does not model is refused when it is checked: one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError


def test_a_scenario_with_static_members_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from harness.scenario import load_scenario
    from harness.sim.session import SimOptions, simulate_scenario

    s = load_scenario("rolling-restart", [])
    with pytest.raises(ConfigError) as e:
        simulate_scenario(s, SimOptions(out=tmp_path))
    assert str(e.value) == (
        "rolling-restart, case group.coordinator.static_membership=True: group.coordinator.static_membership "
        "is set; the simulator models dynamic members only (run it with `herdlab run`, or simulate legacy_zk "
        """alone: --set 'implementations=["legacy_zk"]')"""
    )
    assert not any(tmp_path.iterdir())


def test_simulate_rolling_restart_ends_in_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main

    monkeypatch.setattr("sys.argv", ["herdlab", "simulate", "rolling-restart", "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("herdlab: error: rolling-restart, case group.coordinator.static_membership=True: ")
    assert err.count("\n") == 1 and "Traceback" not in err
