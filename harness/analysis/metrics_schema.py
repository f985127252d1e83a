"""The published JSON Schema of ``metrics.json`` (``herdlab metrics schema``).

Contract
--------
The schema is a file shipped in the package, ``harness/analysis/metrics.schema.json`` (draft
2020-12), written by hand rather than generated: the document is built as plain dicts by
:mod:`harness.analysis.document`, and the schema fixes what scripts may rely on (the format tag,
the run header, the top-level verdict with its three values and their rules, units and their
triggers, the aggregate rows) while leaving room for sections added within the same format.
:func:`metrics_schema` returns it; :func:`validate_metrics` checks a document against it with the
``jsonschema`` library and returns one line per error (empty: valid).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_FILE = "metrics.schema.json"


def metrics_schema() -> dict[str, Any]:
    """The JSON Schema of ``metrics.json`` (the shipped file, parsed)."""
    text = resources.files("harness.analysis").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_metrics(doc: Any) -> list[str]:
    """One line per way ``doc`` breaks :func:`metrics_schema`; [] when it conforms."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(metrics_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}" for e in errors]
