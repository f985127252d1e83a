"""The metrics document's model (harness.analysis.metrics_model) and its published schema: the shipped
``metrics.schema.json`` is what the model generates, the generator maps each kind of type as written
out here by hand, and every document of the regression fixture validates. (No ``from __future__ import annotations``: the sample
typed dict reads its required keys from its annotations.)"""

import json
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

import pytest
from typing_extensions import TypedDict

from harness.analysis import metrics_schema
from harness.analysis.metrics_model import Json, MetricsDocument, Trigger, Unit
from harness.analysis.metrics_schema import schema_from_model, validate_metrics

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "harness" / "analysis" / "metrics.schema.json"
FIXTURE = sorted((ROOT / "tests" / "data" / "regression").glob("*/expected-metrics.json"))


def test_the_shipped_schema_is_the_models() -> None:
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert shipped == schema_from_model(), (
        "harness/analysis/metrics.schema.json and harness/analysis/metrics_model.py disagree: change the "
        "model, then write the file with `python -m harness.analysis.metrics_schema`"
    )


def test_the_generated_text_parses_to_the_same_schema() -> None:
    assert json.loads(metrics_schema.schema_text()) == schema_from_model()


class _Inner(TypedDict, extra_items=Any):
    name: str


class _Sample(TypedDict, extra_items=Any):
    count: Annotated[int | None, Json(minimum=0)]
    kind: Literal["a", "b"]
    flag: NotRequired[Literal[True]]
    tags: NotRequired[list[str] | None]
    loose: NotRequired[list[Any]]
    props: NotRequired[dict[str, str]]
    inner: NotRequired[_Inner]
    anything: Any


def test_the_generator_maps_each_kind_of_type() -> None:
    gen = metrics_schema._Generator()
    assert gen.object(_Sample) == {
        "type": "object",
        "required": ["count", "kind", "anything"],
        "properties": {
            "count": {"type": ["integer", "null"], "minimum": 0},
            "kind": {"enum": ["a", "b"]},
            "flag": {"const": True},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "loose": {"type": "array"},
            "props": {"type": "object", "additionalProperties": {"type": "string"}},
            "inner": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        },
    }
    assert gen.defs == {}


def test_the_schema_keeps_what_scripts_rely_on() -> None:
    schema = schema_from_model()
    assert schema["required"] == [
        "format",
        "run",
        "spark",
        "definitions",
        "metric_info",
        "cases",
        "units",
        "aggregates",
        "series",
        "alerts",
        "verdict",
    ]
    assert schema["properties"]["format"] == {"type": "string", "pattern": "^herdlab-metrics/2$"}
    assert schema["properties"]["run"]["required"] == ["run_id", "scenario"]
    assert schema["$defs"]["verdict"]["properties"]["valid"] == {"enum": [True, False, "unknown"]}
    assert len(schema["$defs"]["verdict"]["allOf"]) == 3
    trigger, unit = schema["$defs"]["trigger"], schema["$defs"]["unit"]
    # required: what every document of the format carried; the rest typed where present
    assert trigger["required"] == ["index", "key", "action", "outcome"]
    assert unit["required"] == ["case", "impl", "repetition"]
    assert trigger["properties"]["detection_s"] == {"type": ["number", "null"]}
    assert trigger["properties"]["e2e"] == {"$ref": "#/$defs/e2e"}
    assert unit["properties"]["startup"] == {"$ref": "#/$defs/split-brain"}
    assert unit["properties"]["lost_sample"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer"}},
    }
    assert schema["$defs"]["aggregate"]["required"] == ["impl", "case", "trigger", "metric", "n"]
    assert schema["properties"]["units"] == {"type": "array", "items": {"$ref": "#/$defs/unit"}}


@pytest.mark.parametrize("path", FIXTURE, ids=[p.parent.name for p in FIXTURE])
def test_the_regression_fixtures_documents_validate(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert validate_metrics(doc) == []
    assert set(MetricsDocument.__required_keys__) <= set(doc)


def _declared(td: Any) -> set[str]:
    return set(td.__required_keys__) | set(td.__optional_keys__)


@pytest.mark.parametrize("path", FIXTURE, ids=[p.parent.name for p in FIXTURE])
def test_the_model_declares_every_key_of_the_fixtures_units_and_triggers(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    for u in doc["units"]:
        assert set(u) - _declared(Unit) == set()
        for t in u["triggers"]:
            assert set(t) - _declared(Trigger) == set()


def test_the_fixture_has_documents() -> None:
    assert len(FIXTURE) == 5
