"""The verdict (harness.analysis.verdict): run validity, legacy/coordinator ratios with their
intervals, completeness per implementation. Expected values are worked out in the comments."""

from __future__ import annotations

import math

import pytest

from harness.analysis.stats import t_quantile
from harness.analysis.verdict import verdict
from tests.support.metrics import build, metrics, trigger, unit


def _ratio_row(m: dict, case: str, action: str = "crash") -> dict:
    (r,) = [r for r in m["verdict"]["ratios"] if (r["case"], r["action"]) == (case, action)]
    return r


def test_latency_and_request_ratios_of_the_default_run() -> None:
    r = _ratio_row(metrics(), "members=3")
    assert (r["numerator"], r["denominator"], r["triggers"]) == ("legacy_zk", "coordinator", ["#1 crash"])
    lat = r["latency_s"]
    # legacy 1.8, 2.0, 2.2 (mean 2, s 0.2); coordinator 0.8, 1.0, 1.2 (mean 1, s 0.2): R = 2
    # a = 0.04 / (3 * 4) = 1/300, b = 0.04 / (3 * 1) = 1/75; se^2 = 1/300 + 4/300 = 1/60
    # nu = (1/60)^2 / ((1/300)^2 / 2 + (1/75)^2 / 2) = (1/3600) / (17/180000) = 50/17
    se = math.sqrt(1 / 60)
    nu = 50 / 17
    t = t_quantile(0.975, nu)  # checked against tables in test_stats
    assert 3.1824 < t < 4.3027  # between t(0.975, 3) and t(0.975, 2)
    assert lat["ratio"] == 2.0 and lat["means"] == [2.0, 1.0] and lat["n"] == [3, 3]
    assert lat["ci95"] == [
        pytest.approx(2 * math.exp(-t * se), abs=1e-5),
        pytest.approx(2 * math.exp(t * se), abs=1e-5),
    ]
    req = r["coordination_requests"]
    # legacy 9, 10, 11; coordinator 6, 7, 8: R = 10 / 7
    assert req["ratio"] == pytest.approx(10 / 7, abs=1e-6) and req["means"] == [10.0, 7.0]
    assert lat["note"] == "" and req["note"] == ""


def test_one_repetition_gives_the_ratio_alone() -> None:
    m = build(
        [
            unit("legacy_zk", "c", 0, [trigger(latency=3.0, requests=30)]),
            unit("coordinator", "c", 0, [trigger(latency=1.5, requests=6, impl="coordinator")]),
        ]
    )
    r = _ratio_row(m, "c")
    assert (r["latency_s"]["ratio"], r["latency_s"]["ci95"], r["latency_s"]["note"]) == (
        2.0,
        None,
        "n=1, no CI",
    )
    assert r["coordination_requests"]["ratio"] == 5.0


def test_never_on_one_side_is_left_out_and_said() -> None:
    units = [unit("legacy_zk", "c", r, [trigger(latency=v)]) for r, v in enumerate((2.0, 4.0))]
    units.append(unit("legacy_zk", "c", 2, [trigger(outcome="never")]))
    units += [unit("coordinator", "c", r, [trigger(latency=1.0, impl="coordinator")]) for r in range(3)]
    lat = _ratio_row(build(units), "c")["latency_s"]
    # legacy finite 2, 4 (mean 3), one never left out; coordinator 1, 1, 1: R = 3
    assert (lat["ratio"], lat["n"], lat["never"]) == (3.0, [2, 3], [1, 0])
    assert lat["note"] == "legacy_zk: 1 of 3 never settled, left out"


def test_all_never_on_one_side_gives_no_ratio() -> None:
    units = [unit("legacy_zk", "c", r, [trigger(outcome="never")]) for r in range(2)]
    units += [unit("coordinator", "c", r, [trigger(latency=1.0, impl="coordinator")]) for r in range(2)]
    lat = _ratio_row(build(units), "c")["latency_s"]
    assert (lat["ratio"], lat["ci95"], lat["note"]) == (None, None, "legacy_zk: never settled (2 of 2)")


def test_one_value_per_repetition_per_kind() -> None:
    # two crashes per legacy repetition: repetition values are the means 2 and 4 -> mean 3;
    # coordinator single crashes of 1.5 s: R = 2; a repetition with a never crash is never
    def legacy(r: int, a: float, b: float | None) -> dict:
        second = trigger(1, latency=b) if b is not None else trigger(1, outcome="never")
        return unit("legacy_zk", "c", r, [trigger(0, latency=a), second])

    units = [legacy(0, 1.0, 3.0), legacy(1, 3.0, 5.0), legacy(2, 1.0, None)]
    units += [unit("coordinator", "c", r, [trigger(0, latency=1.5, impl="coordinator")]) for r in range(3)]
    r = _ratio_row(build(units), "c")
    assert r["triggers"] == ["#1 crash", "#2 crash"]
    assert (r["latency_s"]["ratio"], r["latency_s"]["never"]) == (2.0, [1, 0])


def test_only_kinds_both_implementations_ran() -> None:
    units = [
        unit("legacy_zk", "c", 0, [trigger(0, "join"), trigger(1, "expire")]),
        unit("coordinator", "c", 0, [trigger(0, "join", impl="coordinator")]),
    ]
    assert [r["action"] for r in build(units)["verdict"]["ratios"]] == ["join"]


def test_valid_run_line() -> None:
    v = metrics()["verdict"]
    assert v["valid"] and v["reasons"] == []
    assert v["line"] == "VALID: 12 units, no record lost, every tail drained, no unit failed"


def test_invalid_run_names_every_reason() -> None:
    m = metrics(lost=1, not_drained=2)
    m["units"][0]["failed"] = "ZooKeeper died"
    m["run"]["interrupted"] = True
    v = verdict(m)
    assert not v["valid"]
    assert v["reasons"] == [
        "3 records lost in 3 units (legacy_zk members=3 rep 0, legacy_zk members=3 rep 1, legacy_zk members=3 rep 2)",
        "6 records not drained in 3 units (legacy_zk members=3 rep 0, legacy_zk members=3 rep 1, "
        "legacy_zk members=3 rep 2)",
        "1 unit failed (legacy_zk members=3 rep 0)",
        "the run was interrupted",
    ]
    assert v["line"].startswith("INVALID: 3 records lost")


def test_a_migration_verdict_other_than_expected_makes_the_run_invalid() -> None:
    m = metrics()
    m["migration"] = {
        "expect": "clean",
        "verdict": "replay",
        "units": {"legacy_zk members=3 rep 0": "replay", "legacy_zk members=3 rep 1": "clean"},
        "as_expected": False,
    }
    v = verdict(m)
    assert not v["valid"]
    assert v["reasons"] == [
        "migration verdict replay, the scenario expects clean (legacy_zk members=3 rep 0)"
    ]
    m["migration"] = {**m["migration"], "verdict": "clean", "as_expected": True}
    assert verdict(m)["valid"]  # a negative control that shows what it expects is a valid run


def test_completeness_per_implementation() -> None:
    units = [
        unit("legacy_zk", "c", 0, [trigger()], lost=2, overlap_episodes=3, overlap_s=0.25),
        unit("legacy_zk", "c", 1, [trigger()], overlap_episodes=1, overlap_s=0.5),
        unit("coordinator", "c", 0, [trigger(impl="coordinator")], not_drained=5, commits_stale_generation=1),
        unit("coordinator", "c", 1, [trigger(impl="coordinator")], failed="boom"),
    ]
    comp = {c["impl"]: c for c in build(units)["verdict"]["completeness"]}
    assert comp["legacy_zk"] == {
        "impl": "legacy_zk",
        "units": 2,
        "failed": 0,
        "lost": 2,
        "not_drained": 0,
        "overlap_episodes": 4,
        "overlap_s": 0.75,
        "commits_non_owner": 0,
        "commits_stale_generation": None,  # not applicable
    }
    assert (comp["coordinator"]["failed"], comp["coordinator"]["not_drained"]) == (1, 5)
    assert comp["coordinator"]["commits_stale_generation"] == 1
