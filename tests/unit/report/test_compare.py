"""``herdlab compare``'s rules on hand-made metrics (see harness.report.compare): the single-statistic
check (``stat="p50"``, ``--stat``; the default test of the repetitions is in test_compare_mwu.py) with
tolerances, and the checks that cannot be fooled by statistics (never counts, failed, missing and
fewer units, lost records, undrained tails, a mean that hides a never)."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.kernel.errors import ConfigError
from harness.report.compare import compare, junit_xml, parse_tolerances
from tests.support.metrics import build, default_units, metrics, trigger, unit


def _with(units: list[dict], impl: str, case: str, *outcomes: float | str) -> dict:
    """Metrics of ``units`` with the #1 crash of (impl, case) repetition r set to outcomes[r]: a
    latency in seconds or an outcome name."""
    units = copy.deepcopy(units)
    for u in units:
        if (u["impl"], u["case"]) == (impl, case):
            o = outcomes[u["repetition"]]
            t = u["triggers"][0]
            req = t["coordination_requests"]
            if isinstance(o, str):
                u["triggers"][0] = trigger(outcome=o, requests=req, impl=impl)
            else:
                u["triggers"][0] = trigger(latency=o, requests=req, impl=impl)
    return build(units)


def test_a_run_passes_against_itself() -> None:
    r = compare(metrics(), metrics())
    assert r.changes and not r.regressions


def test_a_slower_rebalance_is_a_regression_naming_metric_and_amount() -> None:
    # coordinator members=3 baseline 0.4, 0.5, 0.6 s (p50 0.5); current 0.8, 1.0, 1.2 s (p50 1.0)
    base = _with(default_units(), "coordinator", "members=3", 0.4, 0.5, 0.6)
    regs = [r for r in compare(base, metrics(), stat="p50").regressions if r.metric == "latency_s"]
    (reg,) = regs
    assert (reg.impl, reg.case, reg.trigger, reg.kind) == ("coordinator", "members=3", "#1 crash", "stat")
    assert "0.500 s -> 1.000 s" in reg.message and "+100.0%" in reg.message


def test_within_tolerance_is_not_a_regression() -> None:
    # legacy members=6 coordination requests 36, 37, 38 (p50 37); current 40, 41, 42 (p50 41: +10.8 %)
    cur_units = default_units()
    for u in cur_units:
        if (u["impl"], u["case"]) == ("legacy_zk", "members=6"):
            u["triggers"][0]["coordination_requests"] += 4
    cur = build(cur_units)
    assert [r.metric for r in compare(metrics(), cur, tolerance=0.10, stat="p50").regressions] == [
        "coordination_requests"
    ]
    assert not compare(metrics(), cur, tolerance=0.11, stat="p50").regressions
    assert not compare(metrics(), cur, per_metric={"coordination_requests": 0.2}, stat="p50").regressions


def test_absolute_slack_for_times() -> None:
    # coordinator members=3 p50 1.0 s: allowed up to 1.0 * 1.1 + 0.05 = 1.15 s
    ok = _with(default_units(), "coordinator", "members=3", 1.14, 1.14, 1.14)
    bad = _with(default_units(), "coordinator", "members=3", 1.16, 1.16, 1.16)
    assert not [r for r in compare(metrics(), ok, stat="p50").regressions if r.metric == "latency_s"]
    assert [r.metric for r in compare(metrics(), bad, stat="p50").regressions if r.metric == "latency_s"] == [
        "latency_s"
    ]


def test_a_rising_never_count_is_flagged_even_when_the_median_holds() -> None:
    # current: 1.8, never, 2.2 -> p50 at h = 2 is x2 = 2.2 (finite, within 10 % + 0.05 s of 2.0)
    cur = _with(default_units(), "legacy_zk", "members=3", 1.8, "never", 2.2)
    regs = compare(metrics(), cur).regressions
    assert [(r.kind, r.impl, r.case, r.trigger) for r in regs] == [
        ("never", "legacy_zk", "members=3", "#1 crash")
    ]
    assert regs[0].message == (
        "legacy_zk members=3 #1 crash: repetitions that never settled rose from 0 of 3 to 1 of 3"
    )


def test_a_rising_no_effect_count_is_flagged() -> None:
    cur = _with(default_units(), "coordinator", "members=6", 1.8, 2.0, "no_effect")
    kinds = [(r.kind, r.metric) for r in compare(metrics(), cur).regressions]
    assert ("never", "no_effect") in kinds


def test_no_longer_settling_is_a_regression_of_the_statistic_too() -> None:
    cur = _with(default_units(), "legacy_zk", "members=3", "never", "never", 2.2)
    msgs = [r.message for r in compare(metrics(), cur, stat="p50").regressions if r.kind == "stat"]
    assert any("latency_s p50: 2.000 s -> never (no longer settles: 2 of 3 never)" in m for m in msgs)


def test_mean_with_a_never_reads_never_and_is_a_regression() -> None:
    # current legacy members=3: 1.8, 2.2 and one never: the mean of the finite values is 2.0, the same
    # as the baseline's; it must not pass as 2.0
    cur = _with(default_units(), "legacy_zk", "members=3", 1.8, 2.2, "never")
    stat_regs = [r for r in compare(metrics(), cur, stat="mean").regressions if r.kind == "stat"]
    lat = [r for r in stat_regs if r.metric == "latency_s"]
    assert len(lat) == 1 and lat[0].current == float("inf") and lat[0].baseline == 2.0
    assert "-> never (no longer settles: 1 of 3 never, a mean cannot leave them out)" in lat[0].message
    # a baseline whose mean was already never is no regression of the statistic (the count did not rise)
    assert not [
        r for r in compare(cur, cur, stat="mean").regressions if r.kind == "stat" and r.metric == "latency_s"
    ]


def test_a_failed_unit_is_flagged() -> None:
    units = default_units()
    units[4]["failed"] = "ZooKeeper did not start"  # legacy_zk members=6 rep 1
    regs = compare(metrics(), build(units)).regressions
    failed = [r for r in regs if r.kind == "failed"]
    assert [r.message for r in failed] == [
        "legacy_zk members=6 rep 1: the unit failed: ZooKeeper did not start"
    ]


def test_a_missing_unit_is_flagged() -> None:
    units = [u for u in default_units() if not (u["impl"] == "coordinator" and u["repetition"] == 2)]
    regs = compare(metrics(), build(units, repetitions=3)).regressions
    assert sorted(r.message for r in regs if r.kind == "missing_unit") == [
        "coordinator members=3 rep 2: in the baseline, missing from the current run",
        "coordinator members=6 rep 2: in the baseline, missing from the current run",
    ]


def test_fewer_repetitions_are_flagged() -> None:
    # the same figures from 2 repetitions instead of 3: statistics may even look better
    units = [u for u in default_units() if u["repetition"] < 2]
    regs = compare(metrics(), build(units)).regressions
    assert [r.message for r in regs if r.kind == "repetitions"] == [
        "fewer repetitions than the baseline: 2 instead of 3"
    ]
    assert not [r for r in regs if r.kind == "missing_unit"]  # the planned ones are all there


def test_any_lost_record_is_a_regression_even_if_the_baseline_lost_too() -> None:
    regs = compare(metrics(lost=1), metrics(lost=1)).regressions
    assert {r.kind for r in regs} == {"lost"} and len(regs) == 3  # the 3 legacy members=3 units
    assert regs[0].message == (
        "legacy_zk members=3 rep 0: 1 records lost (acknowledged offsets skipped; must be 0)"
    )


def test_a_tail_not_drained_is_its_own_regression() -> None:
    regs = compare(metrics(), metrics(not_drained=2)).regressions
    assert {r.kind for r in regs} == {"not_drained"} and len(regs) == 3
    assert "2 records not drained (an unconsumed tail; must be 0)" in regs[0].message


def test_an_interrupted_run_is_flagged() -> None:
    cur = metrics()
    cur["run"]["interrupted"] = True
    assert [r.kind for r in compare(metrics(), cur).regressions] == ["interrupted"]


def test_missing_key_is_a_regression() -> None:
    cur = metrics()
    cur["aggregates"] = [
        a for a in cur["aggregates"] if not (a["case"] == "members=6" and a["metric"] == "watches")
    ]
    regs = compare(metrics(), cur, stat="p50").regressions
    assert regs and all(r.kind == "missing" and "missing from the current run" in r.message for r in regs)


def test_incompatible_baselines_are_one_line_errors() -> None:
    other = metrics()
    other["run"]["scenario"] = "split-brain"
    with pytest.raises(ConfigError, match="incompatible baseline: scenario 'herd' vs 'split-brain'"):
        compare(metrics(), other)
    disjoint = metrics()
    for a in disjoint["aggregates"]:
        a["case"] = "members=99"
    with pytest.raises(ConfigError, match="no metric in common"):
        compare(metrics(), disjoint)
    with pytest.raises(ConfigError, match="not a herdlab metrics file"):
        compare({"aggregates": []}, metrics())
    with pytest.raises(ConfigError, match="unknown statistic"):
        compare(metrics(), metrics(), stat="p42")


def test_tolerance_parsing() -> None:
    assert parse_tolerances(["0.2", "latency_s=0.5"]) == (0.2, {"latency_s": 0.5})
    assert parse_tolerances([]) == (0.10, {})
    with pytest.raises(ConfigError, match="expected a fraction"):
        parse_tolerances(["ten"])
    with pytest.raises(ConfigError, match="cannot be negative"):
        parse_tolerances(["-1"])


def test_junit_xml_has_one_case_per_check_and_failures(tmp_path: Path) -> None:
    units = default_units()
    units[0]["failed"] = "boom"
    r = compare(metrics(), build(units))
    suite = ET.parse(junit_xml(r, tmp_path / "out" / "junit.xml")).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == len(r.changes) == len(suite.findall("testcase"))
    failures = [tc.find("failure") for tc in suite.findall("testcase") if tc.find("failure") is not None]
    assert [f.get("type") for f in failures if f is not None] == ["failed"]
    # class names hold no dot (the default cases are members=3 and members=6, impl names have none)
    classnames = {tc.get("classname") for tc in suite.findall("testcase")}
    assert "herdlab-compare legacy_zk members=3" in classnames
    assert not [c for c in classnames if c is None or "." in c]
    assert all(tc.get("time") == "0.000" for tc in suite.findall("testcase"))


def test_a_single_repetition_run_compares_its_values() -> None:
    base = build([unit("coordinator", "c", 0, [trigger(latency=1.0, impl="coordinator")])])
    cur = build([unit("coordinator", "c", 0, [trigger(latency=2.0, impl="coordinator")])])
    (reg,) = [r for r in compare(base, cur, stat="p50").regressions if r.metric == "latency_s"]
    assert "1.000 s -> 2.000 s" in reg.message
