"""Student's t quantiles and the confidence interval of a mean (values from statistical tables)."""

from __future__ import annotations

import math

import pytest

from harness.analysis.stats import mean_ci, t_cdf, t_quantile


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
