"""The published JSON Schema of scenario files (``herdlab scenarios schema``).

Contract
--------
* :func:`scenario_schema` is the JSON Schema (draft 2020-12) of one scenario TOML file, read as a
  table: pydantic's validation schema of :class:`harness.scenario.model.Scenario`, with durations
  published as what a file may write (a non-negative number of seconds or a string such as
  ``"500ms"``, ``"5s"``, ``"2m"``), not as the float seconds they are held as.
* :func:`validate_scenario_data` checks a parsed TOML table against it with the ``jsonschema``
  library and returns one line per error (empty: valid).
* The schema covers the shape: keys, types, enums and bounds. Rules that span keys (a migration
  needs ``implementations = ["legacy_zk"]``, coordinator faults need two brokers, ...) are checked by
  ``herdlab scenarios check`` and every command that loads a scenario, not by the schema.
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from harness.scenario.model import _DURATION, Scenario, parse_duration

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: What a duration may be in a file (parse_duration's input).
DURATION_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": _DURATION.pattern},
    ],
    "description": "seconds, or a string with a unit: '500ms', '5s', '2m', '1h'",
}


class _FileSchema(GenerateJsonSchema):
    """Pydantic's generator, publishing a duration as its file form (see the module contract)."""

    def function_before_schema(self, schema: core_schema.BeforeValidatorFunctionSchema) -> JsonSchemaValue:
        if schema["function"].get("function") is parse_duration:
            return dict(DURATION_SCHEMA)
        return super().function_before_schema(schema)


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (see the module contract)."""
    schema = Scenario.model_json_schema(mode="validation", schema_generator=_FileSchema)
    return {**schema, "$schema": SCHEMA_DIALECT, "title": "herdlab scenario file"}


def validate_scenario_data(data: dict[str, Any]) -> list[str]:
    """One line per way ``data`` (a parsed scenario file) breaks :func:`scenario_schema`; [] if none."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(scenario_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errors]
