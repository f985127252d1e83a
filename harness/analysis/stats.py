"""Statistics over repetitions, in pure Python: the one implementation the analysis
(:mod:`harness.analysis.aggregate`), ``herdlab compare`` and the verdict use.

* :func:`describe`: n values, some of them ``never`` (+infinity), to p50 / p95 / p99 / max by the rank
  rule below, the mean and its t-based 95 % confidence interval over the finite values, and how many
  were left out.
* :func:`quantile`: the rank rule. Order the m values ascending with never as +infinity,
  x(1) <= ... <= x(m). The q-quantile sits at rank h = 1 + (m - 1) q; with i = floor(h) and f = h - i it
  is x(i) + f (x(i+1) - x(i)) (x(i) alone when f = 0: rank i+1 is not touched). It reads ``never`` when a
  rank it touches holds never. ``max`` is x(m). Ranks are computed in exact fractions, so 20 x 0.95 is
  19, not 18.999....
* :func:`statistic`: one statistic of an aggregate row as a number (+infinity for never); a mean of a
  row with any never reads never.
* :func:`ratio_of_means`: the ratio of two independent samples' means with a delta-method 95 %
  confidence interval on the log scale (Welch-Satterthwaite degrees of freedom).

``never`` is the string :data:`NEVER` in every output (JSON has no infinity), never a stand-in number.
Student's t comes from the regularized incomplete beta function (Lentz's continued fraction),
inverted by bisection: accurate to ~1e-10, far more than a handful of repetitions needs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

NEVER = "never"
#: The quantiles every aggregate row carries, by name.
QUANTILES: dict[str, float] = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
#: Every statistic a row carries that ``herdlab compare`` can compare.
STATISTICS = ("p50", "p95", "p99", "max", "mean")
DIGITS = 6  # rounding of every figure written to metrics.json

Stat = float | str | None  # a number, NEVER, or None (no value in the sample)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` > 0 degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError("need 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def mean_ci(
    mean: float | None, stddev: float | None, n: int, level: float = 0.95
) -> tuple[float, float] | None:
    """The t-based ``level`` confidence interval of a mean from ``n`` values, or None when n < 2.

    ``stddev`` is the sample standard deviation (n - 1 in the denominator).
    """
    if n < 2 or mean is None or stddev is None or math.isnan(stddev):
        return None
    half = t_quantile(0.5 + level / 2.0, n - 1) * stddev / math.sqrt(n)
    return (mean - half, mean + half)


def quantile(ordered: Sequence[float], q: float) -> Stat:
    """The ``q`` quantile (0 <= q <= 1) of ``ordered`` (ascending, never as ``math.inf``) by the
    rank rule of the module docstring: a number, :data:`NEVER`, or None for an empty sample."""
    if not 0.0 <= q <= 1.0:
        raise ValueError("need 0 <= q <= 1")
    m = len(ordered)
    if m == 0:
        return None
    h = 1 + (m - 1) * Fraction(str(q))  # exact: str(0.95) is "0.95"
    i = math.floor(h)
    f = h - i
    lo = ordered[i - 1]
    if math.isinf(lo):
        return NEVER
    if f == 0:
        return lo
    hi = ordered[i]
    if math.isinf(hi):
        return NEVER
    return lo + float(f) * (hi - lo)


@dataclass(frozen=True)
class Summary:
    """What :func:`describe` found in one sample.

    ``m``: values in the sample; ``k``: finite ones; ``left_out``: never ones (m - k), left out of
    ``mean`` and ``ci95``; ``value``: the one value when m == 1 (a number or :data:`NEVER`), else None;
    ``quantiles``: p50 / p95 / p99 / max (numbers, :data:`NEVER`, or None when m == 0).
    """

    m: int
    k: int
    left_out: int
    value: Stat
    quantiles: dict[str, Stat]
    mean: float | None
    ci95: tuple[float, float] | None


def describe(values: Sequence[float]) -> Summary:
    """Summarise ``values`` (never as ``math.inf``; NaN is not allowed) for one aggregate row."""
    if any(math.isnan(v) for v in values):
        raise ValueError("NaN is not a value")
    ordered = sorted(values)
    finite = [v for v in ordered if not math.isinf(v)]
    if any(v < 0 for v in ordered if math.isinf(v)):
        raise ValueError("-infinity is not a value")
    qs: dict[str, Stat] = {name: _round(quantile(ordered, q)) for name, q in QUANTILES.items()}
    qs["max"] = _round(quantile(ordered, 1.0))
    k = len(finite)
    mean = math.fsum(finite) / k if k else None
    sd = (
        math.sqrt(math.fsum((v - mean) ** 2 for v in finite) / (k - 1))
        if mean is not None and k > 1
        else None
    )
    ci = mean_ci(mean, sd, k)
    return Summary(
        m=len(ordered),
        k=k,
        left_out=len(ordered) - k,
        value=qs["max"] if len(ordered) == 1 else None,
        quantiles=qs,
        mean=None if mean is None else _r(mean),
        ci95=None if ci is None else (_r(ci[0]), _r(ci[1])),
    )


def _round(v: Stat) -> Stat:
    return _r(v) if isinstance(v, float) else v


def _r(v: float) -> float:
    return round(v, DIGITS)


def statistic(row: Mapping[str, Any], stat: str) -> float | None:
    """Statistic ``stat`` (one of :data:`STATISTICS`) of an aggregate row as a number: ``math.inf``
    for never, None when the row has no value. ``mean`` reads never when any value of the row's
    sample was never (``left_out`` > 0): a mean that left a never out is not a finite answer."""
    if stat not in STATISTICS:
        raise ValueError(f"unknown statistic {stat!r}")
    if stat == "mean" and row.get("left_out"):
        return math.inf
    v = row.get(stat)
    if v == NEVER:
        return math.inf
    if v is None:
        return None
    return float(v)


@dataclass(frozen=True)
class Ratio:
    """The ratio of two sample means with its confidence interval.

    ``ratio``: mean(num) / mean(den), None when it has no finite value (an empty side, or
    mean(den) == 0); ``ci95``: None when either side has fewer than 2 values or either mean is 0;
    ``n``: the finite values used on each side.
    """

    ratio: float | None
    ci95: tuple[float, float] | None
    n: tuple[int, int]


def ratio_of_means(num: Sequence[float], den: Sequence[float], level: float = 0.95) -> Ratio:
    """R = mean(num) / mean(den) for two independent samples of finite values, with a ``level``
    confidence interval by the delta method on log R::

        se^2 = s_n^2 / (n_n m_n^2) + s_d^2 / (n_d m_d^2)
        CI   = R exp(-+ t(0.5 + level / 2, nu) se)
        nu   = se^4 / ((s_n^2 / (n_n m_n^2))^2 / (n_n - 1) + (s_d^2 / (n_d m_d^2))^2 / (n_d - 1))

    (Welch-Satterthwaite; s the sample standard deviations, m the means). When neither side varies the
    interval is [R, R]. The interval is always positive and asymmetric around R, as a ratio's should be.
    """
    n1, n2 = len(num), len(den)
    if any(math.isinf(v) or math.isnan(v) for v in (*num, *den)):
        raise ValueError("ratio_of_means takes finite values only")
    if n1 == 0 or n2 == 0:
        return Ratio(None, None, (n1, n2))
    m1, m2 = math.fsum(num) / n1, math.fsum(den) / n2
    if m2 == 0:
        return Ratio(None, None, (n1, n2))
    r = m1 / m2
    if n1 < 2 or n2 < 2 or m1 == 0:
        return Ratio(_r(r), None, (n1, n2))
    a = math.fsum((v - m1) ** 2 for v in num) / (n1 - 1) / (n1 * m1 * m1)
    b = math.fsum((v - m2) ** 2 for v in den) / (n2 - 1) / (n2 * m2 * m2)
    if a + b == 0:
        return Ratio(_r(r), (_r(r), _r(r)), (n1, n2))
    nu = (a + b) ** 2 / (a * a / (n1 - 1) + b * b / (n2 - 1))
    half = t_quantile(0.5 + level / 2.0, nu) * math.sqrt(a + b)
    return Ratio(_r(r), (_r(r * math.exp(-half)), _r(r * math.exp(half))), (n1, n2))
