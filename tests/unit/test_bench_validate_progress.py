"""`herdlab bench simulator validate` reports its progress on stderr: a line when a unit enters a phase."""

from __future__ import annotations

from typing import Any

import pytest

from harness.bench.simulator import real_progress, sim_progress
from harness.sim.driver import UnitProgress


def _p(unit: str, phase: str, number: int, rep: int = 0) -> dict[str, Any]:
    return {
        "unit": unit,
        "phase": phase,
        "impl": "legacy_zk",
        "case": "members=10",
        "repetition": rep,
        "number": number,
        "of": 2,
    }


def test_the_real_run_prints_a_line_per_unit_phase_with_the_unit_s_number(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = real_progress()
    for p in [
        _p("u0", "joining", 1),
        _p("u0", "joining", 1),
        _p("u0", "settling", 1),
        _p("u1", "joining", 2, 1),
    ]:
        report(p)
    out = capsys.readouterr()
    assert out.out == ""  # the comparison's lines stay alone on stdout
    assert out.err.splitlines() == [
        "real [1/2] legacy_zk members=10 rep 0: joining",
        "real [1/2] legacy_zk members=10 rep 0: settling",
        "real [2/2] legacy_zk members=10 rep 1: joining",
    ]


def test_the_simulation_prints_a_line_per_unit_phase(capsys: pytest.CaptureFixture[str]) -> None:
    report = sim_progress()
    report(UnitProgress("a", "joining"), 0, 2)
    report(UnitProgress("a", "joining", virtual_s=3.0), 0, 2)
    report(UnitProgress("b", "joining"), 1, 2)
    assert capsys.readouterr().err.splitlines() == [
        "simulated [1/2] a: joining",
        "simulated [2/2] b: joining",
    ]
