"""Round trip: the analysis finds in a synthetic run exactly what the generator built into it.

The generator (harness.analysis.synthetic) knows its answers by construction (when each trigger
settles, how many records it drops or redelivers, how many watches and requests it writes), so
this checks the jobs at a larger scale than the hand-made histories: several cases, both
implementations, repetitions, legacy list-valued events and broker reports together.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.analysis.synthetic import write_synthetic_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def synthetic(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    run = write_synthetic_run(
        tmp_path_factory.mktemp("syn"), members=(3, 5), repetitions=2, rate=40.0, lose=2
    )
    return run, analyze(spark, load_run(run.run_dir))


def test_every_unit_matches_what_was_generated(synthetic: tuple[Any, dict[str, Any]]) -> None:
    run, m = synthetic
    assert len(m["units"]) == run.units == 8
    for u in m["units"]:
        e = run.expected[(u["case"], u["impl"], u["repetition"])]
        assert (u["produced"], u["lost"], u["duplicates"]) == (e["produced"], 2, e["duplicates"]), u["case"]
        assert (u["overlaps"], u["commits_non_owner"]) == (0, 0)
        assert u["commits_stale_generation"] == (None if u["impl"] == "legacy_zk" else 0)


def test_every_trigger_matches_what_was_generated(synthetic: tuple[Any, dict[str, Any]]) -> None:
    run, m = synthetic
    checked = 0
    for u in m["units"]:
        e = run.expected[(u["case"], u["impl"], u["repetition"])]
        assert [t["action"] for t in u["triggers"]] == ["join", "leave", "crash"]
        for t, et in zip(u["triggers"], e["triggers"], strict=True):
            assert t["latency_s"] == pytest.approx(et["latency_s"], abs=1e-6)
            assert t["detection_s"] == pytest.approx(et["detection_s"], abs=1e-6)
            for k in ("watches", "zk_requests", "conflicts", "failed_attempts"):
                assert t[k] == et[k], (u["case"], u["impl"], t["key"], k)
            checked += 1
    assert checked == 24


def test_lost_records_raise_alerts(synthetic: tuple[Any, dict[str, Any]]) -> None:
    _, m = synthetic
    assert sum(a.startswith("LOST 2 ") for a in m["alerts"]) == 8


def test_reports_and_compare_on_real_metrics(synthetic: tuple[Any, dict[str, Any]]) -> None:
    import copy
    import json

    from harness.report import render_report
    from harness.report.compare import compare

    run, m = synthetic
    paths = render_report(run.run_dir, m)
    assert json.loads(paths["json"].read_text())["units"] == json.loads(json.dumps(m["units"]))
    assert "data:image/png;base64," in paths["html"].read_text()
    assert "| metric | legacy_zk p50 |" in paths["markdown"].read_text()
    # against itself only the lost records (2 per unit, built in) count as regressions
    self_regs = compare(m, m).regressions
    assert self_regs and {r.metric for r in self_regs} == {"unit.lost"}
    doctored = copy.deepcopy(m)
    (a,) = [
        a
        for a in doctored["aggregates"]
        if (a["impl"], a["case"], a["trigger"], a["metric"])
        == ("legacy_zk", "members=5", "#3 crash", "latency_s")
    ]
    a["p50"] = a["p50"] / 2
    regs = [r for r in compare(doctored, m).regressions if r.metric != "unit.lost"]
    assert [(r.impl, r.case, r.trigger, r.metric) for r in regs] == [
        ("legacy_zk", "members=5", "#3 crash", "latency_s")
    ]
