"""``herdlab bench analysis`` end to end on a tiny size (marked bench: not part of the default run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.bench.analysis import analysis

pytestmark = pytest.mark.bench


def test_bench_analysis_prints_a_row_per_size_with_jobs_and_the_bare_session(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        analysis, ["--events", "20000", "--no-history", "--driver-memory", "1g", "--keep", str(tmp_path)]
    )
    assert r.exit_code == 0, r.output
    assert "PySpark analysis" in r.output and "child / bare" in r.output and "driver alone" in r.output
    assert "Spark jobs per family" in r.output
    (logs,) = (tmp_path / "logs").iterdir()
    bench = json.loads((logs / "bench.json").read_text())
    assert bench["jobs"] > 0 and bench["stages"] >= bench["jobs"] and bench["tasks"] >= bench["stages"]
    # every job is some family's, and the families' jobs add up to the total
    assert sum(f["jobs"] for f in bench["families"].values()) == bench["jobs"]
    assert 0 < bench["busy_s"] <= bench["analysis_s"]
    bare = json.loads((logs / "bare.json").read_text())
    assert 0 < bare["session_s"] < bare["bare_s"]


def test_bench_analysis_refuses_a_directory_without_a_history(tmp_path: Path) -> None:
    r = CliRunner().invoke(analysis, ["--events", "20000", "--history", str(tmp_path)])
    assert r.exit_code != 0
    assert "no history.parquet" in str(r.exception) + r.output


def test_bench_analysis_repeated_shows_the_median_and_range(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        analysis,
        [
            "--events",
            "20000",
            "--no-history",
            "--no-families",
            "--repeat",
            "2",
            "--driver-memory",
            "1g",
            "--keep",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "run 1 of 2" in r.output and "run 2 of 2" in r.output
    assert re.search(
        r"^[0-9,]+: analysis [0-9.]+ s, median of 2 runs \(range [0-9.]+-[0-9.]+ s\)$", r.output, re.M
    )


def test_bench_analysis_refuses_no_repeat() -> None:
    r = CliRunner().invoke(analysis, ["--events", "20000", "--repeat", "0"])
    assert r.exit_code == 2
    assert "--repeat" in r.output
