"""``herdlab compare``'s default rule: the repetitions of each metric by a two-sided
Mann-Whitney U test AND a change of the medians beyond the tolerance; too few repetitions is
inconclusive, never a pass. Hand-made metrics of one implementation and case (coordinator
``members=3``, one crash trigger) with the latencies of each repetition given; every other figure
of the trigger is the same in every repetition. The expected p-values are worked out by hand:
two samples of 6 that do not overlap have U = 0, and the exact two-sided p is 2 / C(12, 6) = 2 / 924."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.report import compare as compare_cmd
from harness.report.compare import (
    IMPROVEMENT,
    INCONCLUSIVE,
    PASS,
    REGRESSION,
    TEST,
    compare,
    junit_xml,
    mann_whitney_p,
    samples,
    to_json,
)
from tests.support.metrics import build, trigger, unit

IMPL, CASE, KEY = "coordinator", "members=3", "#1 crash"
LATENCY_PARTS = {"latency_s", "detection_s", "convergence_s", "resumed_s"}


def run_of(*latencies: float | str, requests: list[int] | None = None) -> dict:
    """Metrics of one case with repetition r's latency ``latencies[r]`` (a number or ``"never"``)."""
    units = []
    for r, lat in enumerate(latencies):
        req = requests[r] if requests else 10
        t = (
            trigger(outcome="never", requests=req, impl=IMPL)
            if lat == "never"
            else trigger(latency=float(lat), requests=req, impl=IMPL)
        )
        units.append(unit(IMPL, CASE, r, [t]))
    return build(units)


LOW = (1.0, 1.1, 1.2, 1.3, 1.4, 1.5)
HIGH = (2.0, 2.1, 2.2, 2.3, 2.4, 2.5)


def _stat(result, name: str):  # noqa: ANN001, ANN202
    (c,) = [c for c in result.changes if c.kind == "stat" and c.metric == name]
    return c


def test_the_samples_are_the_repetitions_with_never_as_infinity() -> None:
    s = samples(run_of(1.0, "never", 1.2))
    assert s[(IMPL, CASE, KEY, "latency_s")] == [1.0, math.inf, 1.2]
    assert s[(IMPL, CASE, KEY, "coordination_requests")] == [10.0, 10.0, 10.0]
    assert (IMPL, CASE, "unit", "unit.overlap_s") in s  # a whole-unit metric that is compared
    assert not [k for k in s if k[3] in ("startup_s", "unit.lost")]  # not compared metrics


def test_a_clear_regression() -> None:
    # medians 1.25 s -> 2.25 s; allowed up to 1.25 * 1.1 + 0.05 = 1.425 s; p = 2/924
    r = compare(run_of(*LOW), run_of(*HIGH))
    assert r.verdict == REGRESSION and r.exit_code == 1
    assert {c.metric for c in r.regressions} == LATENCY_PARTS
    lat = _stat(r, "latency_s")
    assert lat.p_value == pytest.approx(2 / 924)
    assert (lat.baseline, lat.current) == (pytest.approx(1.25), pytest.approx(2.25))
    assert lat.message.startswith(f"{IMPL} {CASE} {KEY} latency_s median: 1.250 s -> 2.250 s (+80.0%)")
    assert "regression, p = 0.00216 < 0.05" in lat.message
    assert _stat(r, "coordination_requests").verdict == PASS  # 10 in every repetition on both sides


def test_a_clear_improvement_is_no_regression() -> None:
    r = compare(run_of(*HIGH), run_of(*LOW))
    assert r.verdict == PASS and r.exit_code == 0
    assert {c.metric for c in r.improvements} == LATENCY_PARTS
    assert _stat(r, "latency_s").verdict == IMPROVEMENT


def test_noise_within_tolerance_passes() -> None:
    # interleaved samples: current ranks 2, 4, ..., 12 -> U = 21 of 36, far from significant
    base = run_of(1.0, 1.1, 1.2, 1.3, 1.4, 1.5)
    cur = run_of(1.05, 1.15, 1.25, 1.35, 1.45, 1.55)
    r = compare(base, cur)
    assert r.verdict == PASS and not r.regressions and not r.improvements
    assert (_stat(r, "latency_s").p_value or 0) > 0.5


def test_significant_but_within_tolerance_passes() -> None:
    # coordination requests 10 x 6 -> 11 x 6: no overlap (p < 0.01), but +10 % is not beyond +10 % + 0
    r = compare(run_of(*LOW, requests=[10] * 6), run_of(*LOW, requests=[11] * 6))
    c = _stat(r, "coordination_requests")
    assert c.p_value is not None and c.p_value < 0.01
    assert c.verdict == PASS and "within tolerance" in c.message
    assert r.verdict == PASS


def test_beyond_tolerance_but_not_significant_passes() -> None:
    # medians 1.25 -> 1.5 s (beyond 1.425 s) but the samples overlap: 1.0..1.5 vs 1.0, 1.2, 1.4, 1.6, 1.8, 2.0
    r = compare(run_of(*LOW), run_of(1.0, 1.2, 1.4, 1.6, 1.8, 2.0))
    lat = _stat(r, "latency_s")
    assert lat.current == pytest.approx(1.5) and lat.p_value is not None and lat.p_value >= 0.05
    assert lat.verdict == PASS


def test_too_few_repetitions_are_inconclusive_never_pass() -> None:
    # 3 against 3: the smallest two-sided p is 2 / C(6, 3) = 0.1; not even a clear shift can pass or fail
    r = compare(run_of(1.0, 1.1, 1.2), run_of(1.0, 1.1, 1.2))
    assert r.verdict == INCONCLUSIVE and r.exit_code == 3
    assert all(c.verdict == INCONCLUSIVE for c in r.changes if c.kind == "stat")
    assert "too few repetitions (3 vs 3; at least 5 each)" in _stat(r, "latency_s").message
    assert compare(run_of(1.0, 1.1, 1.2), run_of(1.0, 1.1, 1.2), min_repetitions=3).verdict == PASS


def test_a_rising_never_count_is_a_regression() -> None:
    # one never among 6: the median is still finite (1.3 s -> 1.35 s) but the never count rose 0 -> 1
    r = compare(run_of(*LOW), run_of(1.0, 1.1, 1.2, 1.3, 1.4, "never"))
    assert r.verdict == REGRESSION
    assert [(c.kind, c.metric) for c in r.regressions] == [("never", "never")]
    assert "repetitions that never settled rose from 0 of 6 to 1 of 6" in r.regressions[0].message


def test_no_longer_settling_at_all_is_a_regression_of_the_metric() -> None:
    r = compare(run_of(*LOW), run_of(*["never"] * 6))
    lat = _stat(r, "latency_s")
    assert lat.verdict == REGRESSION and lat.current == math.inf
    # +infinity ranks above every finite value: U = 0 again, but the six nevers tie, so scipy takes the
    # normal approximation with the tie correction: var = 6 * 6 / 12 * (13 - (6^3 - 6) / (12 * 11)),
    # z = (18 - 0.5) / sqrt(var) (continuity correction), p = erfc(z / sqrt 2) = 0.00278
    z = (18 - 0.5) / math.sqrt(3 * (13 - 210 / 132))
    assert lat.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert "-> never" in lat.message


def test_mann_whitney_handles_equal_constant_samples() -> None:
    assert mann_whitney_p([3.0] * 5, [3.0] * 5) == 1.0
    assert mann_whitney_p([math.inf] * 5, [math.inf] * 5) == 1.0


def test_stat_mode_keeps_the_old_check_but_no_pass_below_the_minimum() -> None:
    r = compare(run_of(1.0, 1.1, 1.2), run_of(2.0, 2.1, 2.2), stat="p50")
    assert r.verdict == REGRESSION and _stat(r, "latency_s").regressed
    same = compare(run_of(1.0, 1.1, 1.2), run_of(1.0, 1.1, 1.2), stat="p50")
    assert same.verdict == INCONCLUSIVE
    assert (
        compare(run_of(1.0, 1.1, 1.2), run_of(1.0, 1.1, 1.2), stat="p50", min_repetitions=3).verdict == PASS
    )


def test_json_and_junit_of_a_comparison(tmp_path: Path) -> None:
    r = compare(run_of(*LOW), run_of(*HIGH))
    doc = json.loads(json.dumps(to_json(r)))
    assert doc["verdict"] == "regression" and doc["exit_code"] == 1 and doc["test"] == TEST
    assert len(doc["checks"]) == len(r.changes)
    assert doc["counts"]["regression"] == 4
    root = ET.parse(junit_xml(r, tmp_path / "j.xml")).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == len(r.changes) == len(suite.findall("testcase"))
    assert suite.get("failures") == "4" and suite.get("skipped") == "0"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["test"] == TEST and props["alpha"] == "0.05" and props["verdict"] == "regression"
    few = compare(run_of(1.0, 1.1, 1.2), run_of(1.0, 1.1, 1.2))
    s2 = ET.parse(junit_xml(few, tmp_path / "k.xml")).getroot().find("testsuite")
    assert s2 is not None
    n_stat = len([c for c in few.changes if c.kind == "stat"])
    assert s2.get("skipped") == str(n_stat) and s2.get("failures") == "0"
    assert len(s2.findall("testcase/skipped")) == n_stat


def _write(d: Path, m: dict) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "metrics.json").write_text(json.dumps(m))
    return d


@pytest.mark.parametrize(
    ("base", "cur", "code", "line"),
    [
        (LOW, LOW, 0, "no regression among"),
        (LOW, HIGH, 1, "4 regressions among"),
        (HIGH, LOW, 0, "4 improved"),
        (LOW[:3], LOW[:3], 3, "inconclusive"),
    ],
)
def test_exit_codes_and_the_test_named(tmp_path: Path, base: tuple, cur: tuple, code: int, line: str) -> None:
    b, c = _write(tmp_path / "b", run_of(*base)), _write(tmp_path / "c", run_of(*cur))
    r = CliRunner().invoke(compare_cmd, [str(b), str(c)])
    assert r.exit_code == code, r.output
    text = " ".join(r.output.split())
    assert line in text and "Mann-Whitney U, two-sided" in text


def test_json_on_stdout_is_only_json(tmp_path: Path) -> None:
    b, c = _write(tmp_path / "b", run_of(*LOW)), _write(tmp_path / "c", run_of(*HIGH))
    junit = tmp_path / "out.xml"
    r = CliRunner().invoke(compare_cmd, [str(b), str(c), "--json", "--junit", str(junit)])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "regression" and junit.exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    b = _write(tmp_path / "b", run_of(*LOW))
    assert CliRunner().invoke(compare_cmd, [str(b), str(b), "--stat", "p42"]).exit_code == 2
    assert CliRunner().invoke(compare_cmd, [str(b)]).exit_code == 2


def test_a_slower_group_formation_is_a_regression() -> None:
    """``group.initial.rebalance.delay.ms`` delays only a group that forms from empty (Kafka's
    InitialDelayedJoin): the triggers of a stable group do not see it, the time to the first stable
    group does. Medians 9.45 s -> 19.45 s, allowed up to 9.45 * 1.1 + 1.0 = 11.395 s; p = 2/924."""
    base = build(
        [
            unit(IMPL, CASE, r, [trigger(latency=1.0, impl=IMPL)], startup_stable_s=9.2 + r / 10)
            for r in range(6)
        ]
    )
    slow = build(
        [
            unit(IMPL, CASE, r, [trigger(latency=1.0, impl=IMPL)], startup_stable_s=19.2 + r / 10)
            for r in range(6)
        ]
    )
    r = compare(base, slow)
    assert r.verdict == REGRESSION
    (c,) = r.regressions
    assert (c.metric, c.trigger) == ("unit.startup_stable_s", "unit")
    assert c.p_value == pytest.approx(2 / 924)
