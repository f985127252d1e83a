"""The published JSON Schema of ``metrics.json`` (``herdlab metrics schema``).

Contract
--------
The schema is a file shipped in the package, ``harness/analysis/metrics.schema.json`` (draft
2020-12), generated from the document's model :mod:`harness.analysis.metrics_model` by
:func:`schema_from_model` (``python -m harness.analysis.metrics_schema`` writes it; a test fails when the
file and the model disagree). It fixes what scripts may rely on (the format tag, the run header, the
top-level verdict with its three values and their rules, units and their triggers, the aggregate rows)
while leaving room for sections added within the same format. :func:`metrics_schema` returns the shipped
file; :func:`validate_metrics` checks a document against it with the ``jsonschema`` library and returns
one line per error (empty: valid).
"""

from __future__ import annotations

import json
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

from typing_extensions import is_typeddict

from harness.analysis import metrics_model
from harness.analysis.metrics_model import DEFS, Def, Json, MetricsDocument

SCHEMA_FILE = "metrics.schema.json"
TITLE = "herdlab metrics.json"
DESCRIPTION = (
    "The metrics document that `herdlab run` and `herdlab report` write (format herdlab-metrics/2; the whole"
    " shape is described in harness/analysis/analyze.py). This schema fixes the parts scripts rely on: the"
    " format tag, the run header, the cases, the top-level verdict, the units with every key of theirs and"
    " of their triggers, the aggregate rows and the migration, failover and coordinators summaries. Sections not named here may be added by later formats of the same major version (additional"
    " properties are allowed), so a script must ignore keys it does not know."
)
_SCALARS: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


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


class _Generator:
    """Turns the model's types into JSON Schema, collecting ``$defs`` on the way."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}

    def _ref(self, name: str, make: typing.Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if name not in self.defs:
            self.defs[name] = {}  # reserved before generating, so a part that refers to itself terminates
            self.defs[name] = make()
        return {"$ref": f"#/$defs/{name}"}

    def schema(self, tp: Any) -> dict[str, Any]:
        origin = get_origin(tp)
        if origin in (NotRequired, Required):
            return self.schema(get_args(tp)[0])
        if origin is Annotated:
            base, *meta = get_args(tp)
            extra = {k: v for m in meta if isinstance(m, Json) for k, v in m.keywords.items()}
            named = [m.name for m in meta if isinstance(m, Def)]
            if named:
                return self._ref(named[0], lambda: {**self.schema(base), **extra})
            return {**self.schema(base), **extra}
        if is_typeddict(tp):
            if tp in DEFS:
                name, keywords = DEFS[tp]
                return self._ref(name, lambda: {**self.object(tp), **keywords})
            return self.object(tp)
        if tp is Any:
            return {}
        if origin is Literal:
            values = list(get_args(tp))
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if origin is list:
            items = self.schema(get_args(tp)[0])
            return {"type": "array", **({"items": items} if items else {})}
        if origin is dict:
            values = self.schema(get_args(tp)[1])
            return {"type": "object", **({"additionalProperties": values} if values else {})}
        if origin in (Union, types.UnionType):
            out: dict[str, Any] = {"type": []}
            for member in get_args(tp):
                part = self.schema(member)
                out["type"].append(part.pop("type"))
                out.update(part)
            return out
        raise TypeError(f"no JSON Schema for {tp!r}")

    def object(self, cls: Any) -> dict[str, Any]:
        """A typed dict's schema: its required keys and the properties of its keys that constrain."""
        hints = get_type_hints(cls, include_extras=True)
        required = [k for k in hints if k in cls.__required_keys__]
        properties = {k: s for k, t in hints.items() if (s := self.schema(t))}
        return {
            "type": "object",
            **({"required": required} if required else {}),
            **({"properties": properties} if properties else {}),
        }


def schema_from_model() -> dict[str, Any]:
    """The JSON Schema of :class:`~harness.analysis.metrics_model.MetricsDocument` (see the contract)."""
    gen = _Generator()
    body = gen.object(MetricsDocument)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": TITLE,
        "description": DESCRIPTION,
        **body,
        "$defs": gen.defs,
    }


def schema_text() -> str:
    """:func:`schema_from_model` as the shipped file's text."""
    return json.dumps(schema_from_model(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    """Write the shipped schema file from the model."""
    path = Path(metrics_model.__file__).with_name(SCHEMA_FILE)
    path.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
