"""``herdlab compare``'s rules on hand-written metrics (see harness.report.compare)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.report.compare import compare, junit_xml, parse_tolerances
from tests.unit.analysis.metrics_fixture import metrics


def _set(m: dict, impl: str, case: str, trigger: str, metric: str, **values: object) -> None:
    (a,) = [
        a
        for a in m["aggregates"]
        if (a["impl"], a["case"], a["trigger"], a["metric"]) == (impl, case, trigger, metric)
    ]
    a.update(values)


def test_a_run_passes_against_itself() -> None:
    r = compare(metrics(), metrics())
    assert r.changes and not r.regressions


def test_a_slower_rebalance_is_a_regression_naming_metric_and_amount() -> None:
    base, cur = metrics(), metrics()
    _set(base, "coordinator", "members=3", "#1 crash", "latency_s", p50=0.5)  # current: 1.0 s
    (reg,) = compare(base, cur).regressions
    assert (reg.impl, reg.case, reg.trigger, reg.metric) == (
        "coordinator",
        "members=3",
        "#1 crash",
        "latency_s",
    )
    assert "0.500 s -> 1.000 s" in reg.message and "+100.0%" in reg.message


def test_within_tolerance_is_not_a_regression() -> None:
    base, cur = metrics(), metrics()
    _set(cur, "legacy_zk", "members=6", "#1 crash", "zk_requests", p50=54 * 1.09)  # baseline 54: +9 %
    assert not compare(base, cur, tolerance=0.10).regressions
    assert len(compare(base, cur, tolerance=0.05).regressions) == 1
    assert not compare(base, cur, tolerance=0.05, per_metric={"zk_requests": 0.2}).regressions


def test_absolute_slack_for_times() -> None:
    base, cur = metrics(), metrics()
    _set(cur, "coordinator", "members=3", "#1 crash", "detection_s", p50=0.54)  # 0.5 * 1.1 = 0.55
    _set(cur, "coordinator", "members=6", "#1 crash", "detection_s", p50=0.59)  # within 0.55 + 0.05 s
    _set(cur, "legacy_zk", "members=6", "#1 crash", "detection_s", p50=0.61)  # beyond
    (reg,) = compare(base, cur).regressions
    assert (reg.impl, reg.case) == ("legacy_zk", "members=6")


def test_no_longer_settling_is_a_regression() -> None:
    base, cur = metrics(), metrics()
    _set(cur, "legacy_zk", "members=3", "#1 crash", "latency_s", p50=None, never=2)
    (reg,) = compare(base, cur).regressions
    assert "never (no longer settles)" in reg.message


def test_any_lost_record_is_a_regression_even_if_the_baseline_lost_too() -> None:
    regs = compare(metrics(lost=1), metrics(lost=1)).regressions
    assert {(r.metric, r.stat) for r in regs} == {("unit.lost", "max")} and len(regs) == 4


def test_missing_key_is_a_regression() -> None:
    base, cur = metrics(), metrics()
    cur["aggregates"] = [
        a for a in cur["aggregates"] if not (a["case"] == "members=6" and a["metric"] == "watches")
    ]
    regs = compare(base, cur).regressions
    assert regs and all("missing from the current run" in r.message for r in regs)


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


def test_tolerance_parsing() -> None:
    assert parse_tolerances(["0.2", "latency_s=0.5"]) == (0.2, {"latency_s": 0.5})
    assert parse_tolerances([]) == (0.10, {})
    with pytest.raises(ConfigError, match="expected a fraction"):
        parse_tolerances(["ten"])
    with pytest.raises(ConfigError, match="cannot be negative"):
        parse_tolerances(["-1"])


def test_junit_xml_has_one_case_per_key_and_failures(tmp_path: Path) -> None:
    base, cur = metrics(), metrics()
    _set(base, "coordinator", "members=3", "#1 crash", "latency_s", p50=0.5)
    r = compare(base, cur)
    suite = ET.parse(junit_xml(r, tmp_path / "out" / "junit.xml")).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == len(r.changes) == len(suite.findall("testcase"))
    failures = [tc for tc in suite.findall("testcase") if tc.find("failure") is not None]
    assert len(failures) == 1 and "latency_s" in failures[0].get("name", "")
