"""Student's t quantiles and the confidence interval of a mean (values from statistical tables)."""

from __future__ import annotations

import math

import pytest

from harness.analysis.stats import (
    NEVER,
    Ratio,
    describe,
    mean_ci,
    quantile,
    ratio_of_means,
    statistic,
    t_cdf,
    t_quantile,
)


@pytest.mark.parametrize(
    ("df", "q975"),
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (29, 2.0452), (120, 1.9799)],
)
def test_t_quantile_matches_tables(df: int, q975: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(q975, abs=1e-4)


def test_t_quantile_is_symmetric_and_inverts_the_cdf() -> None:
    assert t_quantile(0.025, 5) == pytest.approx(-t_quantile(0.975, 5))
    assert t_cdf(t_quantile(0.9, 7), 7) == pytest.approx(0.9, abs=1e-9)
    assert t_quantile(0.975, 1e7) == pytest.approx(1.95996, abs=1e-4)


def test_mean_ci_of_1_2_3() -> None:
    # mean 2, sample sd 1, n 3: half width 4.302653 / sqrt(3)
    lo, hi = mean_ci(2.0, 1.0, 3)  # type: ignore[misc]
    assert (lo, hi) == (
        pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-6),
        pytest.approx(2 + 4.302653 / math.sqrt(3), abs=1e-6),
    )


def test_no_interval_from_one_value() -> None:
    assert mean_ci(5.0, None, 1) is None
    assert mean_ci(5.0, float("nan"), 1) is None


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.5, 0)


# --- the rank rule: never stays never --------------------------------------------------------------

INF = math.inf


def test_twenty_repetitions_one_never_p95_is_never_not_a_huge_number() -> None:
    # values 1..19 and one never: rank h = 1 + 19 q
    s = describe([float(v) for v in range(1, 20)] + [INF])
    # p50: h = 10.5 -> x10 + 0.5 (x11 - x10) = 10.5
    # p95: h = 19.05 touches x20 = never; p99: h = 19.81 touches x20; max = x20
    assert s.quantiles == {"p50": 10.5, "p95": NEVER, "p99": NEVER, "max": NEVER}
    # mean and CI over the 19 finite values 1..19: mean 10, sd sqrt(sum((v-10)^2)/18) = sqrt(570/18)
    assert (s.m, s.k, s.left_out, s.mean) == (20, 19, 1, 10.0)
    half = 2.100922 * math.sqrt(570 / 18) / math.sqrt(19)  # t(0.975, 18) = 2.100922
    assert s.ci95 == (pytest.approx(10 - half, abs=1e-5), pytest.approx(10 + half, abs=1e-5))


def test_a_rank_that_lands_exactly_below_the_never_stays_finite() -> None:
    # 21 values, the largest never: p95 at h = 1 + 20 * 0.95 = 20 exactly touches only x20 = 20
    s = describe([float(v) for v in range(1, 21)] + [INF])
    assert s.quantiles["p95"] == 20.0
    assert s.quantiles["p99"] == NEVER  # h = 20.8 touches x21


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # [1, 2, 3, never, never]: p50 h = 3 -> x3 = 3; p95 h = 4.8 -> never
        ([1.0, 2.0, 3.0, INF, INF], {"p50": 3.0, "p95": NEVER, "p99": NEVER, "max": NEVER}),
        # [1, 2, never, never, never]: p50 h = 3 -> x3 = never
        ([1.0, 2.0, INF, INF, INF], {"p50": NEVER, "p95": NEVER, "p99": NEVER, "max": NEVER}),
        # [4, 1, 3, 2] unordered, no never: p50 h = 2.5 -> 2.5; p95 h = 3.85 -> 3 + 0.85 = 3.85;
        # p99 h = 3.97 -> 3.97; max 4
        ([4.0, 1.0, 3.0, 2.0], {"p50": 2.5, "p95": 3.85, "p99": 3.97, "max": 4.0}),
        # all never
        ([INF, INF], {"p50": NEVER, "p95": NEVER, "p99": NEVER, "max": NEVER}),
    ],
)
def test_quantiles_with_never_at_different_ranks(values: list[float], expected: dict) -> None:
    got = describe(values).quantiles
    assert got == {k: pytest.approx(v) if isinstance(v, float) else v for k, v in expected.items()}


def test_one_repetition_is_one_value() -> None:
    one = describe([2.5])
    assert (one.m, one.value, one.mean, one.ci95) == (1, 2.5, 2.5, None)
    never = describe([INF])
    assert (never.value, never.mean, never.left_out, never.k) == (NEVER, None, 1, 0)
    assert describe([1.0, 2.0]).value is None  # two values: no single value


def test_empty_sample() -> None:
    s = describe([])
    assert (s.m, s.value, s.mean, s.quantiles["p50"], s.quantiles["max"]) == (0, None, None, None, None)


def test_mean_with_a_never_is_over_the_finite_values_and_says_so() -> None:
    s = describe([1.0, 2.0, 3.0, INF])
    # mean of 1, 2, 3 = 2, sd 1: CI 2 +- 4.302653 / sqrt(3)
    assert (s.mean, s.k, s.left_out) == (2.0, 3, 1)
    assert s.ci95 == (
        pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-6),
        pytest.approx(2 + 4.302653 / math.sqrt(3), abs=1e-6),
    )
    # ... and as a statistic to compare it reads never
    row = {"mean": s.mean, "left_out": s.left_out, "p50": 2.5}
    assert statistic(row, "mean") == INF
    assert statistic(row, "p50") == 2.5
    assert statistic({"mean": 2.0, "left_out": 0}, "mean") == 2.0
    assert statistic({"p95": NEVER}, "p95") == INF
    assert statistic({"p95": None}, "p95") is None


def test_nan_and_bad_levels_are_rejected() -> None:
    with pytest.raises(ValueError):
        describe([1.0, math.nan])
    with pytest.raises(ValueError):
        describe([-INF])
    with pytest.raises(ValueError):
        quantile([1.0], 1.5)
    with pytest.raises(ValueError):
        statistic({}, "p42")


# --- ratio of means ----------------------------------------------------------------------------------


def test_ratio_of_means_with_a_delta_method_interval() -> None:
    # legacy 2, 4, 6 (mean 4, s 2); coordinator 1, 2, 3 (mean 2, s 1): R = 2
    # a = 4 / (3 * 16) = 1/12, b = 1 / (3 * 4) = 1/12, se = sqrt(1/6)
    # nu = (1/6)^2 / ((1/12)^2 / 2 + (1/12)^2 / 2) = (1/36) / (1/144) = 4, t(0.975, 4) = 2.776445
    r = ratio_of_means([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    half = 2.776445 * math.sqrt(1 / 6)
    assert r.ratio == 2.0 and r.n == (3, 3)
    assert r.ci95 == (
        pytest.approx(2 * math.exp(-half), abs=1e-5),
        pytest.approx(2 * math.exp(half), abs=1e-5),
    )


def test_ratio_when_one_side_does_not_vary() -> None:
    # legacy 2, 4, 6; coordinator 1, 1, 1: b = 0, so nu = n_legacy - 1 = 2, t(0.975, 2) = 4.302653
    r = ratio_of_means([2.0, 4.0, 6.0], [1.0, 1.0, 1.0])
    half = 4.302653 * math.sqrt(1 / 12)
    assert r.ratio == 4.0
    assert r.ci95 == (
        pytest.approx(4 * math.exp(-half), abs=1e-5),
        pytest.approx(4 * math.exp(half), abs=1e-5),
    )
    assert ratio_of_means([3.0, 3.0], [1.5, 1.5]).ci95 == (2.0, 2.0)


def test_ratio_without_interval_or_value() -> None:
    assert ratio_of_means([3.0], [1.0, 2.0]) == Ratio(2.0, None, (1, 2))  # n=1: the ratio alone
    assert ratio_of_means([], [1.0]) == Ratio(None, None, (0, 1))
    assert ratio_of_means([1.0, 2.0], [0.0, 0.0]) == Ratio(None, None, (2, 2))  # division by 0
    assert ratio_of_means([0.0, 0.0], [1.0, 2.0]) == Ratio(0.0, None, (2, 2))
    with pytest.raises(ValueError):
        ratio_of_means([INF], [1.0])
