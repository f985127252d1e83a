"""Statistics over repetitions from hand-made units (harness.analysis.aggregate): outcomes, never,
one repetition, breakdowns, failed units, alerts. Expected values are worked out in the comments."""

from __future__ import annotations

import pytest

from tests.support.metrics import build, metrics, row, trigger, unit


def _run(triggers_per_rep: list[dict], impl: str = "coordinator", **unit_kw: object) -> dict:
    return build([unit(impl, "c", r, [t], **unit_kw) for r, t in enumerate(triggers_per_rep)])


def test_default_run_rows_are_worked_out_by_hand() -> None:
    m = metrics()
    a = row(m, "legacy_zk", "members=6", "#1 crash", "latency_s")
    # legacy N=6: 3.8, 4.0, 4.2 s; p95 at h = 1 + 2 * 0.95 = 2.9: 4.0 + 0.9 * 0.2 = 4.18
    assert (a["n"], a["m"], a["k"], a["never"], a["value"]) == (3, 3, 3, 0, None)
    assert (a["p50"], a["p95"], a["max"], a["mean"]) == (4.0, pytest.approx(4.18), 4.2, 4.0)
    # sd 0.2: half width t(0.975, 2) 0.2 / sqrt(3) = 4.302653 * 0.2 / 1.7320508 = 0.496828
    assert a["ci95"] == [pytest.approx(3.503172, abs=1e-6), pytest.approx(4.496828, abs=1e-6)]
    req = row(m, "coordinator", "members=3", "#1 crash", "coordination_requests")
    assert (req["p50"], req["max"]) == (7.0, 8.0)  # 2 N + r = 6, 7, 8


def test_no_pooled_rows() -> None:
    assert {a["trigger"] for a in metrics()["aggregates"]} == {"#1 crash", "unit"}


def test_never_outcomes_count_as_infinity_in_latency_but_not_in_herd_counts() -> None:
    # five repetitions: latencies 1, 2, 3 s and two that never settled (herd counts 10 each)
    m = _run(
        [trigger(latency=v, impl="coordinator") for v in (3.0, 1.0, 2.0)]
        + [trigger(outcome="never", impl="coordinator") for _ in range(2)]
    )
    lat = row(m, "coordinator", "c", "#1 crash", "latency_s")
    # sample 1, 2, 3, never, never: p50 h = 3 -> 3; p95 h = 4.8 -> never
    assert (lat["n"], lat["never"], lat["m"], lat["k"], lat["left_out"]) == (5, 2, 5, 3, 2)
    assert (lat["p50"], lat["p95"], lat["max"], lat["mean"]) == (3.0, "never", "never", 2.0)
    assert "2 of 5 never" in lat["note"]
    req = row(m, "coordinator", "c", "#1 crash", "coordination_requests")
    assert (req["m"], req["never"], req["left_out"], req["p95"]) == (5, 2, 0, 10.0)


def test_no_effect_and_skipped_are_left_out_of_latency_and_counted() -> None:
    m = _run(
        [
            trigger(latency=1.0, impl="coordinator"),
            trigger(latency=3.0, impl="coordinator"),
            trigger(outcome="no_effect", impl="coordinator"),
            trigger(outcome="skipped", impl="coordinator"),
        ]
    )
    lat = row(m, "coordinator", "c", "#1 crash", "latency_s")
    # sample 1, 3: p50 = 2, max = 3, no never
    assert (lat["n"], lat["no_effect"], lat["skipped"], lat["m"], lat["p50"], lat["max"]) == (
        4,
        1,
        1,
        2,
        2.0,
        3.0,
    )
    req = row(m, "coordinator", "c", "#1 crash", "coordination_requests")
    assert req["m"] == 3  # the skipped trigger did nothing; the no-effect one's traffic counts


def test_one_repetition_has_one_value() -> None:
    m = _run([trigger(latency=1.5, impl="coordinator")])
    a = row(m, "coordinator", "c", "#1 crash", "latency_s")
    assert (a["n"], a["value"], a["ci95"], a["note"]) == (1, 1.5, None, "n=1")
    never = row(
        _run([trigger(outcome="never", impl="coordinator")]), "coordinator", "c", "#1 crash", "latency_s"
    )
    assert (never["value"], never["mean"], never["p50"]) == ("never", None, "never")


def test_breakdowns_fill_missing_operations_with_zero() -> None:
    m = _run(
        [
            trigger(impl="legacy_zk", zk_requests=4, zk_requests_by_op={"getData": 4}),
            trigger(impl="legacy_zk", zk_requests=6, zk_requests_by_op={"getData": 2, "create": 4}),
        ],
        impl="legacy_zk",
    )
    # create: 0 (first repetition had none) and 4: p50 = 2
    a = row(m, "legacy_zk", "c", "#1 crash", "zk_requests[create]")
    assert (a["m"], a["p50"], a["max"]) == (2, 2.0, 4.0)
    assert not [x for x in m["aggregates"] if x["metric"].startswith("broker_group_requests")]


def test_failed_units_are_left_out_of_statistics() -> None:
    units = [
        unit("coordinator", "c", r, [trigger(latency=float(r + 1), impl="coordinator")]) for r in range(3)
    ]
    units[2]["failed"] = "broker did not start"
    m = build(units)
    a = row(m, "coordinator", "c", "#1 crash", "latency_s")
    assert (a["n"], a["p50"]) == (2, 1.5)  # 1 and 2 s
    assert "unit coordinator c rep 2 failed: broker did not start" in m["alerts"]


def test_unit_rows_and_not_applicable_values() -> None:
    m = metrics(lost=2)
    lost = row(m, "legacy_zk", "members=3", "unit", "lost")
    assert (lost["n"], lost["max"]) == (3, 2.0)
    # legacy_zk has no generations: no stale-generation row at all
    assert not [
        a for a in m["aggregates"] if a["impl"] == "legacy_zk" and a["metric"] == "commits_stale_generation"
    ]
    assert row(m, "coordinator", "members=3", "unit", "commits_stale_generation")["max"] == 0.0


def test_alerts_separate_lost_from_not_drained() -> None:
    m = metrics(lost=1, not_drained=4)
    lost = [a for a in m["alerts"] if a.startswith("LOST")]
    tails = [a for a in m["alerts"] if a.startswith("NOT DRAINED")]
    assert len(lost) == len(tails) == 3
    assert lost[0] == (
        "LOST 1 records in legacy_zk members=3 rep 0: acknowledged offsets skipped below a processed offset "
        "(e.g. p0@7)"
    )
    assert "4 acknowledged records in legacy_zk members=3 rep 0" in tails[0]


def test_alerts_name_triggers_without_settling() -> None:
    m = _run([trigger(outcome="never", impl="coordinator"), trigger(outcome="no_effect", impl="coordinator")])
    assert "coordinator c rep 0: trigger #1 crash m1 never settled" in m["alerts"]
    assert "coordinator c rep 1: trigger #1 crash m1 had no effect (nothing reacted)" in m["alerts"]
