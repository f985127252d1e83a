"""End-to-end latency's driver half (harness.analysis.e2e), its HdrHistogram logs and its plot, on
hand-made value counts (the rows Spark's job collects); every expected figure is worked out here.
The Spark half runs in tests/integration/analysis/test_e2e.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from harness.analysis.e2e import fill, quantiles, quantize
from harness.analysis.frames import UnitKey
from harness.report.hdr import hlog_name, write_hlogs

EPOCH = 1_800_000_000  # seconds
UNIT: UnitKey = ("c", "coordinator", 0)


def test_quantize_keeps_three_significant_digits_floored() -> None:
    assert quantize(0) == 0
    assert quantize(7) == 7
    assert quantize(999) == 999
    assert quantize(1234) == 1230
    assert quantize(1_234_567) == 1_230_000
    assert quantize(2_999_999) == 2_990_000


def test_quantiles_nearest_rank() -> None:
    # 1..100 once each: p50 = rank 50, p90 = 90, p99 = 99, p99.9 = ceil(99.9) = 100
    got = quantiles({v: 1 for v in range(1, 101)})
    assert got == {"p50": 50, "p90": 90, "p99": 99, "p999": 100, "max": 100}
    # 10 x 5 and 1 x 1000 (N = 11): p50 rank 6 -> 5; p90 rank ceil(9.9) = 10 -> 5; p99 rank 11 -> 1000
    assert quantiles({5: 10, 1000: 1}) == {"p50": 5, "p90": 5, "p99": 1000, "p999": 1000, "max": 1000}
    assert quantiles({}) == {"p50": None, "p90": None, "p99": None, "p999": None, "max": None}


def _p(sec: int, tid: int, us: int, n: int, neg: bool = False) -> dict[str, Any]:
    return {"case": UNIT[0], "impl": UNIT[1], "repetition": UNIT[2], "sec": EPOCH + sec, "kind": "p"} | {
        "tid": tid,
        "us": us,
        "neg": neg,
        "n": n,
    }


def _a(sec: int, n: int) -> dict[str, Any]:
    return {"case": UNIT[0], "impl": UNIT[1], "repetition": UNIT[2], "sec": EPOCH + sec, "kind": "a"} | {
        "tid": None,
        "us": None,
        "neg": None,
        "n": n,
    }


def _filled() -> tuple[dict[Any, dict[str, Any]], list[Any]]:
    """Unit origin at EPOCH + 1 s; one trigger (#1 leave, tid 0) with t0 at 3.0 s.

    Before it (tid -1): second 1 has 4 records at 10 ms and 1 clamped (below 0, at 0); second 2 has
    3 at 20 ms. In it (tid 0): second 4 has 2 at 500 ms and 1 at 2 s. Acknowledged: 6 in second 1,
    4 in second 2, 3 in second 3 (14: one never processed)."""
    rows = [
        _p(1, -1, 10_000, 4),
        _p(1, -1, 0, 1, neg=True),
        _p(2, -1, 20_000, 3),
        _p(4, 0, 500_000, 2),
        _p(4, 0, 2_000_000, 1),
        _a(1, 6),
        _a(2, 4),
        _a(3, 3),
    ]
    trig = {"index": 0, "key": "#1 leave", "t0_s": 3.0, "t1_s": None}
    units = {UNIT: {"origin": (EPOCH + 1) * 10**9, "triggers": [trig]}}
    series: list[Any] = []
    fill(rows, units, series)
    return units, series


def test_unit_and_trigger_quantiles() -> None:
    units, _ = _filled()
    u = units[UNIT]
    # 11 values: 0, 10 ms x4, 20 ms x3, 500 ms x2, 2 s. p50 rank 6 -> 20 ms; p90 rank ceil(9.9) = 10
    # -> 500 ms; p99 and p99.9 rank 11 -> 2 s
    assert u["e2e"] == {
        "count": 11,
        "p50_s": 0.02,
        "p90_s": 0.5,
        "p99_s": 2.0,
        "p999_s": 2.0,
        "max_s": 2.0,
        "clamped": 1,
    }
    assert (u["e2e_p50_s"], u["e2e_p99_s"], u["e2e_max_s"]) == (0.02, 2.0, 2.0)
    t = u["triggers"][0]
    # 500 ms x2, 2 s: p50 rank 2 -> 500 ms; p90 rank ceil(2.7) = 3 -> 2 s
    assert t["e2e"]["count"] == 3 and t["e2e"]["clamped"] == 0
    assert (t["e2e_p50_s"], t["e2e_p90_s"], t["e2e_max_s"]) == (0.5, 2.0, 2.0)


def test_series_buckets_and_lag() -> None:
    _, series = _filled()
    (s,) = series
    assert s["epoch_s"] == [EPOCH + 1, EPOCH + 2, EPOCH + 3, EPOCH + 4]
    assert s["t_s"] == [0.0, 1.0, 2.0, 3.0]
    assert s["count"] == [5, 3, 0, 3]
    # second 1: 0, 10 ms x4 -> p50 rank 3 = 10 ms; second 3 had none
    assert s["p50"] == [0.01, 0.02, None, 0.5]
    assert s["max"] == [0.01, 0.02, None, 2.0]
    # acknowledged so far 6, 10, 13, 13; processed so far 5, 8, 8, 11
    assert s["lag"] == [1, 2, 5, 2]
    assert s["hdr"][2] is None and all(s["hdr"][i] for i in (0, 1, 3))
    assert s["triggers"] == [[3.0, "#1 leave", None]]


def test_hlog_round_trips(tmp_path: Path) -> None:
    _, series = _filled()
    paths = write_hlogs(tmp_path, {"series": {"e2e": series}})
    assert [p.name for p in paths] == [hlog_name(series[0])] == ["coordinator-c-r0.hlog"]
    reader = HistogramLogReader(str(paths[0]), HdrHistogram(1, 3_600_000_000, 3))
    got = []
    while (h := reader.get_next_interval_histogram()) is not None:
        got.append(h)
    reader.close()
    # one interval per bucket with records, their counts as counted, each a second long
    assert [h.get_total_count() for h in got] == [5, 3, 3]
    assert [h.get_start_time_stamp() // 1000 for h in got] == [EPOCH + 1, EPOCH + 2, EPOCH + 4]
    last = got[-1]
    assert last.get_count_at_value(500_000) == 2 and last.get_count_at_value(2_000_000) == 1
    assert last.values_are_equivalent(last.get_max_value(), 2_000_000)
    assert got[0].get_count_at_value(0) == 1  # the clamped one


def test_e2e_plot_is_drawn_for_the_timeline_units() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from harness.report.plots import all_plots

    _, series = _filled()
    timeline = {
        "case": UNIT[0],
        "impl": UNIT[1],
        "repetition": UNIT[2],
        "partitions": [0],
        "claims": [],
        "triggers": [[3.0, "#1 leave", None]],
    }
    metrics = {"units": [], "cases": [], "aggregates": [], "series": {"e2e": series, "timelines": [timeline]}}
    plots = {p.name: p for p in all_plots(metrics)}
    assert "e2e-coordinator-c-r0" in plots
    assert plots["e2e-coordinator-c-r0"].png.startswith(b"\x89PNG")
