"""The generated parts of herdlab's docs: the scenario and metrics references, written at build time.

Contract
--------
* :func:`scenario_reference` renders herdlab's scenario JSON Schema
  (:func:`harness.scenario.schema.scenario_schema`) as Markdown: one table per TOML table of a scenario
  file (top-level keys, ``[cluster]``, ``[group.legacy_zk]``, one per ``[[timeline]]`` action ...), each
  row a key with its type, default and description.
* :func:`metrics_reference` renders the analysis's definitions (:mod:`harness.analysis.definitions`:
  the terms the reports print, and the metrics with their unit, family and how ``herdlab compare``
  treats them) and the ``metrics.json`` JSON Schema (:func:`harness.analysis.metrics_schema.metrics_schema`)
  the same way, one table per object of the document.
* :func:`schema_sections` is the shared walk: every object schema reached from the root (inline, by
  ``$ref``, through arrays, maps and unions) becomes one :class:`Section`, a ``$ref`` target once; a
  key whose value is such an object links to its section with a ``{ref}`` role, so a broken link fails
  a ``-W`` build.
* The pages ``reference/scenario.md`` and ``reference/metrics.md`` hold a marker line
  (:data:`MARKER` with the page's name); :func:`setup` (a Sphinx extension) replaces it with the
  generated Markdown when Sphinx reads the page (on every build, incremental ones too), and fails
  the build when a page lacks its marker.

Pure functions of the schemas and definitions (no Sphinx import outside :func:`setup`), so the tests
can check what the pages will say without building the site.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The line a generated page holds where its reference goes, formatted with the page's name.
MARKER = "<!-- herdlab-reference: {} -->"


@dataclass
class Row:
    """One key of an object: its name, type (Markdown), whether required, default and description."""

    key: str
    type: str
    required: bool
    default: str
    description: str


@dataclass
class Section:
    """One object schema: a target label, a heading (Markdown), the plain text that links to it, the
    object's description and its keys."""

    label: str
    title: str
    short: str
    description: str
    rows: list[Row] = field(default_factory=list)


def md_text(text: str) -> str:
    """A docstring-style description as one line of Markdown: reST literals and roles become code spans."""
    text = re.sub(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    return " ".join(text.split())


def cell(text: str) -> str:
    """``text`` made safe for a Markdown table cell (pipes escaped, one line)."""
    return re.sub(r"(?<!\\)\|", r"\\|", " ".join(text.split()))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _code(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`"


class _Walker:
    """Collects the sections of one schema (see :func:`schema_sections`)."""

    def __init__(
        self,
        schema: dict[str, Any],
        page: str,
        title: Callable[[str], str],
        named: Callable[[str, Any], tuple[str, str] | None],
        aliases: list[tuple[dict[str, Any], str]],
    ) -> None:
        self.aliases = aliases
        self.defs: dict[str, Any] = schema.get("$defs", {})
        self.page = page
        self.title = title
        self.named = named
        self.sections: list[Section] = []
        self.def_labels: dict[str, str] = {}
        self.labels: set[str] = set()

    def _label(self, text: str) -> str:
        base = f"{self.page}-{_slug(text) or 'top'}"
        label, n = base, 1
        while label in self.labels:
            n += 1
            label = f"{base}-{n}"
        self.labels.add(label)
        return label

    def _link(self, label: str, text: str) -> str:
        return f"{{ref}}`{text} <{label}>`"

    def visit(self, node: dict[str, Any], path: str, def_name: str | None = None) -> str:
        """Add ``node`` (an object schema with properties) as a section; return its label."""
        title, short = self.named(path, node) or (self.title(path), self.title(path).replace("`", ""))
        label = self._label(def_name or title)
        if def_name:
            self.def_labels[def_name] = label
        section = Section(label, title, short, md_text(node.get("description", "")))
        self.sections.append(section)
        required = set(node.get("required", []))
        for key, prop in node.get("properties", {}).items():
            sub = f"{path}.{key}" if path else key
            default = prop.get("default")
            default_md = "" if "default" not in prop or isinstance(default, dict) else cell(_code(default))
            section.rows.append(
                Row(
                    key=key,
                    type=self.describe(prop, sub),
                    required=key in required,
                    default=default_md,
                    description=cell(md_text(prop.get("description", ""))),
                )
            )
        return label

    def _is_object(self, node: dict[str, Any]) -> bool:
        return bool(node.get("properties"))

    def describe(self, node: dict[str, Any], path: str) -> str:
        """The type of ``node`` as Markdown, visiting the object schemas it reaches."""
        for shape, text in self.aliases:
            if all(node.get(k) == v for k, v in shape.items()):
                return text
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            target = self.defs[name]
            if not self._is_object(target):
                return self.describe(target, path)
            if name not in self.def_labels:
                self.visit(target, path, def_name=name)
            return self._link(self.def_labels[name], self._short(self.def_labels[name]))
        for union in ("anyOf", "oneOf"):
            if union in node:
                alts = [self.describe(alt, path) for alt in node[union]]
                # a long union (the timeline's actions) reads as a list
                return " or ".join(alts) if len(alts) <= 3 else "one of: " + ", ".join(alts)
        if "const" in node:
            return _code(node["const"])
        if "enum" in node:
            return "one of " + ", ".join(_code(v) for v in node["enum"])
        types = node.get("type", [])
        types = [types] if isinstance(types, str) else list(types)
        if self._is_object(node):
            label = self.visit(node, path)
            return self._link(label, self._short(label)) + (" or null" if "null" in types else "")
        parts: list[str] = []
        for t in types or ["any"]:
            if t == "array":
                if "prefixItems" in node:
                    items = ", ".join(self.describe(i, f"{path}[]") for i in node["prefixItems"])
                    parts.append(f"array [{items}]")
                elif "items" in node:
                    parts.append(f"array of {self.describe(node['items'], f'{path}[]')}")
                else:
                    parts.append("array")
            elif t == "object" and isinstance(node.get("additionalProperties"), dict):
                parts.append(f"map of {self.describe(node['additionalProperties'], f'{path}.*')}")
            else:
                parts.append(t)
        text = (", or " if any(" " in p for p in parts) else " or ").join(parts)
        bounds = [f"{op} {node[k]}" for k, op in (("minimum", ">="), ("maximum", "<=")) if k in node]
        if "minItems" in node and node.get("minItems") == node.get("maxItems"):
            bounds.append(f"{node['minItems']} items")
        else:
            bounds += [
                f"{op} {node[k]} items" for k, op in (("minItems", ">="), ("maxItems", "<=")) if k in node
            ]
        if bounds:
            text += " (" + ", ".join(bounds) + ")"
        if "pattern" in node:
            text += f" matching `{node['pattern']}`"
        return cell(text)

    def _short(self, label: str) -> str:
        return next(s.short for s in self.sections if s.label == label)


def schema_sections(
    schema: dict[str, Any],
    page: str,
    title: Callable[[str], str],
    named: Callable[[str, Any], tuple[str, str] | None] = lambda path, node: None,
    aliases: list[tuple[dict[str, Any], str]] | None = None,
) -> list[Section]:
    """Every object schema reached from ``schema``'s root, root first, as :class:`Section` (see the
    module contract). ``title(path)`` names a section by its key path (``group.legacy_zk``,
    ``timeline[]``; ``""`` for the root); ``named(path, node)`` may name it from the schema instead,
    as (heading, link text). ``page`` prefixes the sections' labels. ``aliases``: (shape, text) pairs; a schema holding every
    key of a shape with the same value is described as that text (a duration, say)."""
    walker = _Walker(schema, page, title, named, aliases or [])
    walker.visit(schema, "")
    return walker.sections


def render_sections(sections: list[Section], level: int = 2) -> str:
    """The sections as Markdown: a labelled heading, the description, a table of the keys (three
    columns, so it fits the page: a required key says so beside its name, a default ends its text)."""
    out: list[str] = []
    hashes = "#" * level
    for s in sections:
        out += [f"({s.label})=", f"{hashes} {s.title}", ""]
        if s.description:
            out += [s.description, ""]
        if s.rows:
            out += ["| Key | Type | Description |", "| --- | --- | --- |"]
            for r in s.rows:
                key = f"`{r.key}` (required)" if r.required else f"`{r.key}`"
                default = f"Default: {r.default}." if r.default else ""
                sentence = r.description + ("." if r.description and r.description[-1] not in ".:)" else "")
                text = " ".join(t for t in (sentence, default) if t)
                out.append(f"| {key} | {r.type} | {text} |")
            out.append("")
    return "\n".join(out)


def _toml_title(path: str) -> str:
    if not path:
        return "Top-level keys"
    if path.endswith("[]"):
        return f"`[[{path[:-2]}]]`"
    return f"`[{path}]`"


def _action_title(path: str, node: Any) -> tuple[str, str] | None:
    """A timeline entry is named by its action (``[[timeline]] action = "crash"``, linked as ``crash``)."""
    action = node.get("properties", {}).get("action", {})
    if path.endswith("[]") and "const" in action:
        return f'`[[{path[:-2]}]]` action = "{action["const"]}"', action["const"]
    return None


def scenario_reference() -> str:
    """The scenario file reference, generated from the scenario JSON Schema (see the module contract)."""
    from harness.scenario.schema import DURATION_SCHEMA, scenario_schema

    schema = scenario_schema()
    # scenario.md holds the target: what a duration may be written as
    aliases = [({"anyOf": DURATION_SCHEMA["anyOf"]}, "{ref}`duration <scenario-duration>`")]
    sections = schema_sections(schema, "scenario", _toml_title, _action_title, aliases)
    return render_sections(sections)


def _json_title(path: str) -> str:
    return "The document" if not path else f"`{path}`"


def metrics_reference() -> str:
    """The metrics reference, generated from the analysis's definitions and the metrics.json schema."""
    from harness.analysis.definitions import (
        DEFINITIONS,
        FAILOVER_DEFINITIONS,
        MIGRATION_DEFINITIONS,
        TRIGGER_METRICS,
        UNIT_METRICS,
        Metric,
    )
    from harness.analysis.metrics_schema import metrics_schema

    def terms(pairs: list[tuple[str, str]]) -> list[str]:
        out: list[str] = []
        for term, text in pairs:
            out += [f"**{term}**", f": {md_text(text)}", ""]
        return out

    def table(metrics: list[Metric], prefix: str) -> list[str]:
        out = [
            "| Metric | Label | Unit | Family | Compared (absolute slack) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for m in metrics:
            label = cell(m.label) + (" (missing: `never`, +infinity)" if m.censored else "")
            slack = f" ({m.abs_tolerance:g} {m.unit})".replace(" )", ")") if m.abs_tolerance else ""
            compared = f"yes{slack}" if m.compare else "no"
            out.append(f"| `{prefix}{m.name}` | {label} | {m.unit} | {m.family} | {compared} |")
        return [*out, ""]

    schema = metrics_schema()
    lines = [
        "## Definitions",
        "",
        "The terms every report prints with its results.",
        "",
        *terms(DEFINITIONS),
        "### Migration",
        "",
        "Added to a report when some unit switched its members between kinds.",
        "",
        *terms(MIGRATION_DEFINITIONS),
        "### Failover",
        "",
        "Added to a report when some unit had a coordinator or ZooKeeper-leader fault.",
        "",
        *terms(FAILOVER_DEFINITIONS),
        "## Metrics of a trigger",
        "",
        "Measured in each trigger's window. By-operation metrics such as `zk_requests[getData]` take their "
        "family metric's unit and are not compared.",
        "",
        *table(TRIGGER_METRICS, ""),
        "## Metrics of a unit",
        "",
        "Measured over a whole unit; statistics name them with the prefix `unit.`.",
        "",
        *table(UNIT_METRICS, "unit."),
        "## The metrics.json document",
        "",
        render_sections(schema_sections(schema, "metrics", _json_title), level=3),
    ]
    return "\n".join(lines)


#: The generated pages: docname -> the function that writes its reference.
GENERATED: dict[str, Callable[[], str]] = {
    "reference/scenario": scenario_reference,
    "reference/metrics": metrics_reference,
}


def replace_marker(docname: str, source: str) -> str:
    """``source`` of a generated page with its marker replaced by the reference; others unchanged."""
    make = GENERATED.get(docname)
    if make is None:
        return source
    marker = MARKER.format(docname.rsplit("/", 1)[-1])
    if marker not in source:
        raise ValueError(f"docs/{docname}.md lacks its marker line {marker}")
    return source.replace(marker, make())


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: fill the generated pages when they are read."""

    def on_source_read(app: Any, docname: str, source: list[str]) -> None:
        source[0] = replace_marker(docname, source[0])

    def always_outdated(
        app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]
    ) -> list[str]:
        # the sources of a generated page are the schemas, not its file: read it again on every build
        return [d for d in GENERATED if d in env.found_docs]

    app.connect("source-read", on_source_read)
    app.connect("env-get-outdated", always_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
