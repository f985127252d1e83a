"""The published JSON Schemas (harness.scenario.schema, harness.analysis.metrics_schema), checked with
the jsonschema library: every shipped scenario validates, metrics dicts of the contract validate, and
documents broken on purpose do not, each for the reason the test names."""

from __future__ import annotations

import copy
import tomllib

import pytest
from jsonschema import Draft202012Validator

from harness.analysis.metrics_schema import metrics_schema, validate_metrics
from harness.scenario import load_scenario
from harness.scenario.loading import builtin_names, builtin_text
from harness.scenario.schema import scenario_schema, validate_scenario_data
from tests.support.metrics import build, trigger, unit
from tests.support.metrics import metrics as contract_metrics


def metrics(lost: int = 0) -> dict:
    """The default hand-made run (tests.support.metrics) with what document.finish adds to every
    real document and that helper leaves out: ``metric_info`` (empty here)."""
    return {**contract_metrics(lost=lost), "metric_info": {}}


def test_the_schemas_are_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(scenario_schema())
    Draft202012Validator.check_schema(metrics_schema())


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_scenario_validates(name: str) -> None:
    data = tomllib.loads(builtin_text(name))
    assert validate_scenario_data(data) == []
    load_scenario(name)  # and pydantic agrees


def test_durations_are_published_in_their_file_form() -> None:
    ok = {"name": "d", "settle_window": "500ms", "drain": 2.5, "stable_timeout": "2m"}
    assert validate_scenario_data(ok) == []
    assert validate_scenario_data({"name": "d", "drain": -1}) == [
        "drain: -1 is not valid under any of the given schemas"
    ]


def test_broken_scenarios_fail_for_the_named_reason() -> None:
    assert validate_scenario_data({"name": "x", "grup": {}}) == [
        "(top): Additional properties are not allowed ('grup' was unexpected)"
    ]
    assert validate_scenario_data({"name": "x", "implementations": ["zookeeper"]}) == [
        "implementations.0: 'zookeeper' is not one of ['legacy_zk', 'coordinator', 'consumer']"
    ]
    assert validate_scenario_data({"name": "x", "repetitions": 0}) == [
        "repetitions: 0 is less than the minimum of 1"
    ]
    assert validate_scenario_data({"description": "no name"}) == ["(top): 'name' is a required property"]
    bad_action = {"name": "x", "timeline": [{"at": "5s", "action": "explode", "targets": ["m1"]}]}
    assert validate_scenario_data(bad_action) != []


def test_the_schema_and_pydantic_agree_on_a_file(tmp_path) -> None:  # noqa: ANN001
    text = 'name = "mine"\nsettle_window = "1500ms"\n[group]\nmembers = [3, 6]\n'
    f = tmp_path / "mine.toml"
    f.write_text(text)
    assert validate_scenario_data(tomllib.loads(text)) == []
    s = load_scenario(str(f))
    assert (s.settle_window, s.group.members) == (1.5, [3, 6])


def test_metrics_of_the_contract_validate() -> None:
    assert validate_metrics(metrics()) == []
    assert validate_metrics(metrics(lost=1)) == []  # an invalid run is a valid document
    skipped = build([unit("legacy_zk", "c", 0, [trigger(outcome="skipped", latency=None)])])
    skipped["metric_info"] = {}
    assert skipped["verdict"]["valid"] == "unknown" and validate_metrics(skipped) == []


def test_broken_metrics_fail_for_the_named_reason() -> None:
    m = metrics()
    no_verdict = copy.deepcopy(m)
    del no_verdict["verdict"]
    assert validate_metrics(no_verdict) == ["(top): 'verdict' is a required property"]
    maybe = copy.deepcopy(m)
    maybe["verdict"]["valid"] = "maybe"
    assert validate_metrics(maybe) == ["verdict.valid: 'maybe' is not one of [True, False, 'unknown']"]
    reasons_when_valid = copy.deepcopy(m)
    reasons_when_valid["verdict"]["reasons"] = ["1 unit failed (x)"]
    (err,) = validate_metrics(reasons_when_valid)  # valid true allows no reason (maxItems 0)
    assert err.startswith("verdict.reasons: ['1 unit failed (x)'] is ")
    outcome = copy.deepcopy(m)
    outcome["units"][0]["triggers"][0]["outcome"] = "fine"
    assert validate_metrics(outcome) == [
        "units.0.triggers.0.outcome: 'fine' is not one of ['settled', 'never', 'no_effect', 'skipped']"
    ]
    fmt = copy.deepcopy(m)
    fmt["format"] = "herdlab-metrics/1"
    assert validate_metrics(fmt) == ["format: 'herdlab-metrics/1' does not match '^herdlab-metrics/2$'"]
