"""The validation's verdicts on one trigger, from hand-made counts: real repetitions against several
simulated ones (the model's random parts make them differ), and the median simulated latency against
the real range."""

from __future__ import annotations

from harness.bench.simulator import format_comparison
from harness.sim.validate import Comparison

NO_CONFLICT = {"watches": 10, "attempts": 10, "zk:create": 10}
ONE_CONFLICT = {"watches": 10, "attempts": 11, "conflicts": 1, "failed_attempts": 1, "zk:create": 11}
TWO_CONFLICTS = {"watches": 10, "attempts": 12, "conflicts": 2, "failed_attempts": 2, "zk:create": 12}


def row(
    real: list[dict[str, int]], sims: list[dict[str, int]], real_s: list[float], sim_s: list[float]
) -> Comparison:
    return Comparison("legacy_zk", "group.members=10", 10, "#2 leave m2", real, sims, real_s, sim_s)


def test_real_counts_among_the_simulated_ones_are_equal() -> None:
    r = row(
        [ONE_CONFLICT, NO_CONFLICT], [NO_CONFLICT, NO_CONFLICT, ONE_CONFLICT], [2.1, 0.2], [0.2, 0.2, 2.1]
    )
    assert r.counts_equal
    line = format_comparison([r])[1]
    assert "real among simulated" in line


def test_a_real_outcome_no_simulation_produced_differs_and_says_which_counts() -> None:
    r = row([TWO_CONFLICTS], [NO_CONFLICT, ONE_CONFLICT], [2.2], [0.2, 2.1])
    assert not r.counts_equal
    line = format_comparison([r])[1]
    # the values each side took: conflicts 2 (real) against 0 and 1 (simulated)
    assert "conflicts real 2 sim 0/1" in line and "attempts real 12 sim 10/11" in line


def test_one_deterministic_simulation_must_equal_every_real_repetition() -> None:
    assert row([NO_CONFLICT, NO_CONFLICT], [NO_CONFLICT], [0.2, 0.3], [0.25]).counts_equal
    assert not row([NO_CONFLICT, ONE_CONFLICT], [NO_CONFLICT], [0.2, 2.1], [0.25]).counts_equal


def test_the_median_simulated_latency_is_judged_against_the_real_range() -> None:
    # simulated 0.2, 0.3, 2.1: median 0.3, inside the real [0.25, 0.4]
    inside = row([NO_CONFLICT], [NO_CONFLICT] * 3, [0.25, 0.4], [2.1, 0.2, 0.3])
    assert inside.simulated_latency_s == 0.3 and inside.latency_inside is True
    # an even number: the mean of the middle two, (0.3 + 2.1) / 2 = 1.2, outside [0.25, 0.4]
    outside = row([NO_CONFLICT], [NO_CONFLICT] * 4, [0.25, 0.4], [0.2, 0.3, 2.1, 2.2])
    assert outside.simulated_latency_s == 1.2 and outside.latency_inside is False
    # nothing settled on one side: no verdict
    assert row([NO_CONFLICT], [NO_CONFLICT], [], [0.3]).latency_inside is None
    assert row([NO_CONFLICT], [NO_CONFLICT], [0.3], []).simulated_latency_s is None
