"""``herdlab bench analysis``'s linearity lines and median run, on figures worked out by hand."""

from __future__ import annotations

import pytest

from harness.bench.analysis import linearity, median_run


def test_a_fixed_cost_plus_a_constant_rate_is_linear() -> None:
    # 20 s at 1 M, 60 s at 10 M: 20 us per event, then 6 us; the line 15.6 s + 40/9 = 4.44 s per M,
    # which puts 3 M at 15.56 + 13.33 = 28.9 s; 30 s measured is 4 % above it
    lines = linearity([(10_000_000, 60.0), (1_000_000, 20.0), (3_000_000, 30.0)])
    assert lines == [
        "time per event at 10,000,000 / at 1,000,000: 0.30 -> linear (no worse) (limit 1.1)",
        "line through both: 15.6 s + 4.44 s per million events",
        "  3,000,000 events: 30.0 s measured, 28.9 s on the line (+4%)",
    ]


def test_time_per_event_that_grows_is_worse_than_linear() -> None:
    # 10 us per event at 1 M, 15 us at 4 M: ratio 1.5
    assert linearity([(1_000_000, 10.0), (4_000_000, 60.0)])[0].endswith(
        "1.50 -> worse than linear (limit 1.1)"
    )


def test_one_size_says_nothing() -> None:
    assert linearity([(1_000_000, 10.0)]) == []


def test_the_median_run_is_one_run_with_the_middle_time() -> None:
    # times 70, 55, 61: sorted 55, 61, 70, the middle one is the run of 61 s, with its own jobs
    runs = [(70.0, "a"), (55.0, "b"), (61.0, "c")]
    assert median_run(runs) == (61.0, "c")


def test_of_an_even_number_of_runs_the_lower_middle_one() -> None:
    # sorted 50, 52, 60, 64: the lower of the two middle runs (52), not their mean (56)
    assert median_run([(60.0, 1), (50.0, 2), (64.0, 3), (52.0, 4)]) == (52.0, 4)


def test_busy_seconds_counts_overlapping_jobs_once() -> None:
    from harness.analysis.bench import busy_seconds

    # [0, 2] and [1, 3] overlap: covered 0..3 = 3 s; [3.5, 4] adds 0.5 s; [3.6, 3.8] lies inside it
    assert busy_seconds([(1.0, 3.0), (0.0, 2.0), (3.5, 4.0), (3.6, 3.8)]) == pytest.approx(3.5)
    assert busy_seconds([]) == 0.0
    # one interval inside another adds nothing: 10 s
    assert busy_seconds([(0.0, 10.0), (2.0, 5.0)]) == pytest.approx(10.0)


def test_a_small_size_gets_one_case_and_one_repetition() -> None:
    from harness.bench.analysis import synthetic_shape

    # 10^4 events over 2 units of 61 s, records and their production: 10_000 / (2 * 2 * 61) = 40.98/s
    small = synthetic_shape(10_000)
    assert small["members"] == (10,) and small["repetitions"] == 1
    assert small["rate"] == pytest.approx(40.98, abs=0.01)
    # 10^6 keeps the herd shape (18 units): 10^6 / (2 * 18 * 61) = 455.4/s
    assert synthetic_shape(1_000_000) == {"rate": pytest.approx(455.37, abs=0.01)}
