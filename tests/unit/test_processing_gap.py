"""The processing gap bound each case's units get (harness.scenario.processing), worked out by hand."""

from __future__ import annotations

import pytest

from harness.kernel.errors import ConfigError
from harness.scenario import expand, load_scenario


def gaps(*overrides: str) -> dict[str, float]:
    (case,) = expand(load_scenario("split-brain", ["matrix={}", *overrides]))
    return case.processing_gaps


def test_the_split_brain_scenario_s_bounds() -> None:
    # 6 partitions at 300 records/s: a record of one partition every 20 ms, ten of them 0.2 s.
    # legacy_zk: fetch wait 100 ms + poll 100 ms = 0.2 s -> 0.2 s; coordinator (kafka-python):
    # fetch.max.wait.ms 500 + poll 200 = 0.7 s -> 0.7 s
    assert gaps() == {"legacy_zk": 0.2, "coordinator": 0.7}


def test_a_slow_workload_widens_the_bound_past_the_fetch_wait() -> None:
    # 6 partitions at 10 records/s: one every 0.6 s, ten 6 s, above both clients' 0.2 / 0.7 s
    assert gaps("workload.rate=10") == {"legacy_zk": 6.0, "coordinator": 6.0}


def test_the_client_s_own_fetch_wait_property_counts() -> None:
    # librdkafka names it fetch.wait.max.ms: 100 + 200 = 0.3 s (ten records: 0.2 s)
    got = gaps(
        "group.coordinator.client=librdkafka", 'group.coordinator.properties={"fetch.wait.max.ms"=100}'
    )
    assert got["coordinator"] == 0.3
    got = gaps('group.coordinator.properties={"fetch.max.wait.ms"=1000}')
    assert got["coordinator"] == 1.2


def test_the_scenario_setting_overrides_the_derived_bound() -> None:
    assert gaps('split_brain_gap="2s"') == {"legacy_zk": 2.0, "coordinator": 2.0}


def test_a_bound_that_is_no_positive_duration_is_refused() -> None:
    with pytest.raises(ConfigError, match="split_brain_gap"):
        load_scenario("split-brain", ["split_brain_gap=0"])


def test_the_analysis_reads_the_manifest_s_bound_else_derives_it(caplog: pytest.LogCaptureFixture) -> None:
    from harness.analysis.units import _processing_gap_s  # pyright: ignore[reportPrivateUsage]

    case = {"label": "c", "params": {}, "partitions": 4}
    assert _processing_gap_s({**case, "processing_gap_s": {"coordinator": 1.5}}, "coordinator", {}) == 1.5
    # derived: 4 partitions at 10 records/s, one record of a partition every 0.4 s, ten 4 s (> 0.7 s)
    assert _processing_gap_s(case, "coordinator", {"name": "x", "workload": {"rate": 10}}) == 4.0
    # a case parameter applies: 4 partitions at 400 records/s, ten records 0.1 s < legacy's 0.2 s
    params = {**case, "params": {"workload.rate": 400}}
    assert _processing_gap_s(params, "legacy_zk", {"name": "x", "workload": {"rate": 10}}) == 0.2
    # a scenario this version does not read (an older run's key): the defaults at its rate, with a warning
    assert (
        _processing_gap_s(case, "coordinator", {"name": "x", "members": 3, "workload": {"rate": 10}}) == 4.0
    )
    assert "processing gap bound is the defaults'" in caplog.text
