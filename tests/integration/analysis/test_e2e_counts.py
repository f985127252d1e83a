"""End-to-end latency's Spark job (:func:`harness.analysis.e2e.counts`) and the driver's figures
from it, on the hand-made history of tests/integration/analysis/test_e2e.py (whose docstring gives
the timeline). Not the whole analysis, so that it stays a few seconds in the default run: the
frames and the record keys, with the trigger window given (:class:`Windows`). The whole analysis
and the report: test_e2e.py (long)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.e2e_history import EPOCH_S, history
from tests.support.histories import ns, write_run

pytestmark = pytest.mark.slow


class Windows:
    """The one trigger window of the history as the fold gives it (tid 0, [5000, 9000) ms): the
    fold itself (a Python worker per unit) is tested elsewhere and would triple this test's time."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def windows(self) -> Any:
        return self.spark.createDataFrame(
            [("e2e", "coordinator", 0, 0, ns(5000), ns(9000))],
            "case string, impl string, repetition int, tid int, t0 long, wend long",
        )


@pytest.fixture(scope="module")
def filled(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[Any]]:
    from harness.analysis import e2e, records
    from harness.analysis.frames import NS, UnitKey, prepare

    d = write_run(tmp_path_factory.mktemp("e2e-counts"), [history()], settle_window_s=1.0)
    frames = prepare(spark, str(d / "history.parquet"))
    key: UnitKey = ("e2e", "coordinator", 0)
    try:
        rows = e2e.counts(Windows(spark), records.record_keys(frames), frames)  # type: ignore[arg-type]
    finally:
        spark.catalog.clearCache()  # the deliveries and keys prepare and record_keys cached
    # the origin (the stable event at 1000 ms) and the trigger as the assembly gives them
    trig = {"index": 0, "key": "#1 leave", "t0_s": 4.0, "t1_s": None}
    units: dict[UnitKey, dict[str, Any]] = {key: {"origin": (EPOCH_S + 1) * NS, "triggers": [trig]}}
    series: list[Any] = []
    e2e.fill(rows, units, series)
    return units[key], series


def test_quantiles_from_sparks_counts(filled: tuple[dict[str, Any], list[Any]]) -> None:
    u, _ = filled
    # worked out in test_e2e.py: 39 latencies, one clamped; the window's 18 (the duplicate at 8000 is
    # not a first processing)
    assert u["e2e"] == {
        "count": 39,
        "p50_s": 0.19,
        "p90_s": 2.9,
        "p99_s": 3.05,
        "p999_s": 3.05,
        "max_s": 3.05,
        "clamped": 1,
    }
    t = u["triggers"][0]["e2e"]
    assert (t["count"], t["p50_s"], t["p90_s"], t["max_s"]) == (18, 2.6, 3.0, 3.05)


def test_buckets_and_lag_from_sparks_counts(filled: tuple[dict[str, Any], list[Any]]) -> None:
    _, (s,) = filled
    assert s["count"] == [9, 10, 1, 1, 6, 6, 6]
    assert s["lag"] == [1, 1, 10, 19, 13, 7, 1]


def test_the_spark_quantization_is_quantize(spark: Any) -> None:
    """The Spark expression floors to three significant digits as :func:`quantize` does, across every
    power of ten a long holds (values and expectations by hand)."""
    from harness.analysis.e2e import _quantize_expr  # noqa: PLC2701 - the expression under test

    cases = {
        0: 0, 7: 7, 999: 999, 1000: 1000, 1009: 1000, 1234: 1230, 99999: 99900, 100000: 100000,
        123456789: 123000000, 10**18 - 1: 999 * 10**15, 10**18 + 5: 10**18, 9_223_372_036_854_775_807: 9_220_000_000_000_000_000,
    }  # fmt: skip
    df = spark.createDataFrame([(v,) for v in cases], "us long")
    got = {r["us"]: r["q"] for r in df.select("us", _quantize_expr("us").alias("q")).collect()}
    assert got == cases
