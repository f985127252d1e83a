"""End-to-end latency on a hand-made history, through the whole analysis (Spark) and the report.

One coordinator unit, one partition, times in integer ms (origin: ``stable`` at 1000 ms). The
producer acknowledges offsets 0..39 at 1000 + 100 i. Member a processes:

* offsets 0..19 (before the trigger) at 1010 + 110 i: latency 10 (i + 1) ms, 10..200 ms;
* offset 5 again at 8000 (a duplicate: its latency stays its first processing's, 60 ms);
* offset 38 at 4790, 10 ms before its acknowledgement at 4800: -10 ms, clamped to 0;
* offsets 20..37 (in the window of the trigger ``leave b`` at 5000, until settling_end at 9000) at
  5200 + 150 j (j = i - 20): latency 5200 + 150 j - (3000 + 100 j) = 2200 + 50 j ms, 2200..3050 ms;
* never offset 39 (not drained: no latency).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.e2e_history import EPOCH_S, history
from tests.support.histories import write_run

# the whole analysis and the report: about 90 s under load on 2 cores, so opt-in (CI's .ci/run runs
# `long`); the default run exercises the same code through the other analysis tests, and the
# quantiles, lag, hlog and plot on hand-made counts in tests/unit/analysis/test_e2e.py
pytestmark = [pytest.mark.slow, pytest.mark.long]


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from harness.analysis.analyze import analyze
    from harness.analysis.load import load_run

    d = write_run(tmp_path_factory.mktemp("e2e"), [history()], settle_window_s=1.0)
    return d, analyze(spark, load_run(d))


def test_quantiles_per_unit_and_trigger_window(run: tuple[Path, dict[str, Any]]) -> None:
    (u,) = run[1]["units"]
    # 39 latencies: 0, 10..200 ms (20), 2200..3050 ms (18). p50: rank ceil(19.5) = 20 -> 190 ms
    # (0 is rank 1, 10 ms rank 2 ...); p90: rank ceil(35.1) = 36 -> 2200 + 50 (36 - 22) = 2900 ms;
    # p99 and p99.9: rank 39 -> 3050 ms
    assert u["e2e"] == {
        "count": 39,
        "p50_s": 0.19,
        "p90_s": 2.9,
        "p99_s": 3.05,
        "p999_s": 3.05,
        "max_s": 3.05,
        "clamped": 1,
    }
    (t,) = u["triggers"]
    # 2200 + 50 j, j = 0..17 (the duplicate at 8000 is not a first processing): p50 rank 9 -> j = 8,
    # 2600 ms; p90 rank ceil(16.2) = 17 -> j = 16, 3000 ms; p99 rank 18 -> 3050 ms
    assert t["e2e"] == {
        "count": 18,
        "p50_s": 2.6,
        "p90_s": 3.0,
        "p99_s": 3.05,
        "p999_s": 3.05,
        "max_s": 3.05,
        "clamped": 0,
    }
    aggs = {(a["trigger"], a["metric"]): a for a in run[1]["aggregates"]}
    assert aggs[("unit", "e2e_p50_s")]["value"] == 0.19
    assert aggs[(t["key"], "e2e_p99_s")]["value"] == 3.05


def test_series_per_second(run: tuple[Path, dict[str, Any]]) -> None:
    (s,) = run[1]["series"]["e2e"]
    assert s["epoch_s"] == list(range(EPOCH_S + 1, EPOCH_S + 8))
    assert s["t_s"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # second 1: i = 0..8 (1010..1890); 2: i = 9..18 (2000..2990); 3: i = 19 (3100); 4: offset 38;
    # 5: j = 0..5 (5200..5950); 6: j = 6..11; 7: j = 12..17 (7000..7750)
    assert s["count"] == [9, 10, 1, 1, 6, 6, 6]
    # second 2: 100..190 ms, p50 rank 5 -> 140 ms; second 6: 2500..2750, p50 rank 3 -> 2600 ms
    assert s["p50"][1] == 0.14 and s["p50"][5] == 2.6
    assert s["max"] == [0.09, 0.19, 0.2, 0.0, 2.45, 2.75, 3.05]
    # acknowledged by the ends: 10, 20, 30, 40, 40, 40, 40; processed (first times): 9, 19, 20, 21,
    # 27, 33, 39; the last 1 is offset 39, never processed
    assert s["lag"] == [1, 1, 10, 19, 13, 7, 1]


def test_report_writes_the_hlog_and_the_plot(run: tuple[Path, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogReader

    from harness.report import render_report

    d, metrics = run
    render_report(d, metrics)
    (hlog,) = sorted((d / "hdr").glob("*.hlog"))
    reader = HistogramLogReader(str(hlog), HdrHistogram(1, 3_600_000_000, 3))
    counts = []
    total = HdrHistogram(1, 3_600_000_000, 3)
    while (h := reader.get_next_interval_histogram()) is not None:
        counts.append(h.get_total_count())
        total.add(h)
    reader.close()
    assert counts == [9, 10, 1, 1, 6, 6, 6]
    assert total.get_count_at_value(2_600_000) == 1 and total.get_count_at_value(0) == 1
    assert total.values_are_equivalent(total.get_max_value(), 3_050_000)
    assert (d / "plots" / "e2e-coordinator-e2e-r0.png").stat().st_size > 0
    assert "e2e-coordinator-e2e-r0.png" in (d / "summary.md").read_text()
