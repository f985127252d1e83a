"""The top-level verdict's three values (harness.analysis.verdict, rules in its docstring):
``True``, ``False`` and ``"unknown"``, and how each is rendered at the top of the reports."""

from __future__ import annotations

from harness.analysis.verdict import is_false, is_true, verdict
from harness.report.html import verdict_block
from harness.report.markdown import verdict_section
from tests.support.metrics import build, metrics, trigger, unit


def _skipped(impl: str = "legacy_zk") -> dict:
    return trigger(outcome="skipped", latency=None, impl=impl)


def test_every_trigger_skipped_is_unknown() -> None:
    # two units, one trigger each, both skipped: 2 triggers, nothing measured
    m = build(
        [unit("legacy_zk", "c", 0, [_skipped()]), unit("coordinator", "c", 0, [_skipped("coordinator")])]
    )
    v = m["verdict"]
    assert v["valid"] == "unknown"
    assert v["reasons"] == ["every trigger was skipped (2): no rebalance was measured"]
    assert v["line"] == "UNKNOWN: every trigger was skipped (2): no rebalance was measured"
    assert not is_true(v) and not is_false(v)


def test_one_measured_trigger_is_enough_to_judge() -> None:
    m = build([unit("legacy_zk", "c", 0, [_skipped(), trigger(1)])])
    assert m["verdict"]["valid"] is True and m["verdict"]["reasons"] == []


def test_a_run_without_triggers_is_judged_on_its_records() -> None:
    # a steady-state run: no trigger planned, records all processed -> valid, not unknown
    assert build([unit("legacy_zk", "c", 0, [])])["verdict"]["valid"] is True


def test_a_failure_wins_over_unknown() -> None:
    m = build([unit("legacy_zk", "c", 0, [_skipped()], lost=1)])
    assert m["verdict"]["valid"] is False
    assert m["verdict"]["reasons"] == ["1 records lost in 1 unit (legacy_zk c rep 0)"]


def test_no_unit_is_false() -> None:
    v = verdict(build([]))
    assert v["valid"] is False and v["reasons"] == ["no unit was recorded"]
    assert is_false(v)


def test_valid_and_invalid_are_booleans() -> None:
    assert metrics()["verdict"]["valid"] is True
    assert metrics(lost=1)["verdict"]["valid"] is False
    assert is_true(metrics()["verdict"]) and is_false(metrics(lost=1)["verdict"])


def test_reports_lead_with_each_kind_of_verdict() -> None:
    unknown = build([unit("legacy_zk", "c", 0, [_skipped()])])
    assert (
        verdict_section(unknown)[2] == "**UNKNOWN: every trigger was skipped (1): no rebalance was measured**"
    )
    assert verdict_block(unknown).startswith('<div class="verdict unknown"><h2>Verdict</h2>')
    assert verdict_block(metrics()).startswith('<div class="verdict"><h2>Verdict</h2>')
    assert verdict_block(metrics(lost=1)).startswith('<div class="verdict invalid"><h2>Verdict</h2>')
