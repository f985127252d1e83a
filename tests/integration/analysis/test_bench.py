"""``herdlab bench analysis`` end to end on a tiny size (marked bench: not part of the default run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.bench.analysis import analysis

pytestmark = pytest.mark.bench


def test_bench_analysis_prints_a_row_per_size(tmp_path: Path) -> None:
    r = CliRunner().invoke(analysis, ["--events", "20000", "--driver-memory", "1g", "--keep", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "PySpark analysis of synthetic histories" in r.output
    assert (tmp_path / "e20000" / "herd" / "bench-20000" / "bench.json").exists()


def test_bench_analysis_repeated_shows_the_median_and_range(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        analysis,
        ["--events", "20000", "--repeat", "2", "--driver-memory", "1g", "--keep", str(tmp_path)],
    )
    assert r.exit_code == 0, r.output
    assert "run 1 of 2" in r.output and "run 2 of 2" in r.output
    assert "events: analysis" in r.output and "median of 2 runs (range" in r.output


def test_bench_analysis_refuses_no_repeat() -> None:
    r = CliRunner().invoke(analysis, ["--events", "20000", "--repeat", "0"])
    assert r.exit_code == 2
    assert "--repeat" in r.output
