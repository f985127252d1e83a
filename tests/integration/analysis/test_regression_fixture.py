"""The analysis against its regression fixture: real runs' histories and the metrics earlier code
computed from them.

This is a regression fixture, the one kind of test here whose expected values come from earlier code
rather than from a hand computation: ``tests/data/regression/<scenario>/`` holds the history and
manifest of one real run of each of herd-small, split-brain (one repetition), migration,
coordinator-failover and coordinators (herdlab and tansu, kafka-python, range) and, as
``expected-metrics.json``, the ``metrics.json`` the analysis computed from them before its jobs were
restructured (``tests/data/regression/README.md`` says which code and how). What it protects: a change
to how the analysis computes (fewer Spark jobs, Python instead of Spark for small tables) must not
change what it computes. Every value must be equal, floats to 1e-9 relative, apart from the fields that
describe the analysis run itself (``spark``: timings, master, version; ``run.run_dir``: where it
was read). A deliberate change of a metric regenerates the expected file and says so in its commit.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.analysis.analyze import analyze
from harness.analysis.load import load_run

pytestmark = [pytest.mark.slow, pytest.mark.long]

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "regression"
SCENARIOS = ["herd-small", "split-brain", "migration", "coordinator-failover", "coordinators"]
#: The fields that describe the analysis run, not the history (paths into the document).
RUN_FIELDS = {("spark",), ("run", "run_dir")}
REL = 1e-9


def differences(expected: Any, got: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Every place where ``got`` differs from ``expected`` (floats to :data:`REL` relative), as
    ``a.b[3].c: expected X, got Y`` lines; the :data:`RUN_FIELDS` are skipped."""
    if path in RUN_FIELDS:
        return []
    where = ".".join(path) or "(document)"
    if isinstance(expected, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(expected) | set(got), key=str):
            if (*path, str(k)) in RUN_FIELDS:
                continue
            if k not in got or k not in expected:
                out.append(f"{where}.{k}: {'missing' if k not in got else 'not expected'}")
                continue
            out += differences(expected[k], got[k], (*path, str(k)))
        return out
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            return [f"{where}: {len(expected)} items expected, {len(got)} got"]
        return [
            d
            for i, (a, b) in enumerate(zip(expected, got, strict=True))
            for d in differences(a, b, (*path, f"[{i}]"))
        ]
    if isinstance(expected, float) or isinstance(got, float):
        if isinstance(expected, bool | str) or isinstance(got, bool | str) or expected is None or got is None:
            return [] if expected == got else [f"{where}: expected {expected!r}, got {got!r}"]
        if math.isclose(float(expected), float(got), rel_tol=REL, abs_tol=0.0):
            return []
        return [f"{where}: expected {expected!r}, got {got!r}"]
    return [] if expected == got else [f"{where}: expected {expected!r}, got {got!r}"]


def test_differences_sees_a_changed_float_and_skips_the_run_fields() -> None:
    doc = {"spark": {"analysis_s": 1.0}, "run": {"run_dir": "/a", "id": "x"}, "units": [{"p50": 0.5}]}
    same = {
        "spark": {"analysis_s": 9.0},
        "run": {"run_dir": "/b", "id": "x"},
        "units": [{"p50": 0.5 * (1 + 1e-12)}],
    }
    assert differences(doc, same) == []
    moved = {"spark": {}, "run": {"run_dir": "/b", "id": "x"}, "units": [{"p50": 0.5 * (1 + 1e-6)}]}
    assert differences(doc, moved) == [f"units.[0].p50: expected 0.5, got {0.5 * (1 + 1e-6)!r}"]
    assert differences(doc, {**same, "units": []}) == ["units: 1 items expected, 0 got"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_analysis_computes_what_it_computed_before(spark: Any, scenario: str) -> None:
    run_dir = FIXTURE / scenario
    expected = json.loads((run_dir / "expected-metrics.json").read_text())
    got = json.loads(json.dumps(analyze(spark, load_run(run_dir))))  # as metrics.json holds it
    diffs = differences(expected, got)
    assert not diffs, f"{len(diffs)} differences, the first: " + "; ".join(diffs[:10])
