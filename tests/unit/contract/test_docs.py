"""The docs site (docs/): every page is in a table of contents, the CLI reference covers every command,
and the generated references render the schemas and definitions they are made from.

The fast tests read the pages and call the generator (docs/_ext/herdlab_docs.py) without Sphinx; the
test marked ``slow`` builds the site with ``-W`` once per session (it needs the ``docs`` extra and is
skipped without it; CI installs the extra and builds the site in .ci/run too).
"""

from __future__ import annotations

import fnmatch
import html
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest

from harness.cli import cli

DOCS = Path(__file__).resolve().parents[3] / "docs"
TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```", re.S | re.M)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("herdlab_docs", DOCS / "_ext" / "herdlab_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("herdlab_docs", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen = _generator()


def _pages() -> set[str]:
    """Every page's docname (path below docs/ without .md), leaving out the build and the extension."""
    return {
        p.relative_to(DOCS).with_suffix("").as_posix()
        for p in DOCS.rglob("*.md")
        if not {"_build", "_ext"} & set(p.relative_to(DOCS).parts)
    }


def _toctree_entries(docname: str, pages: set[str]) -> list[str]:
    """The docnames ``docname``'s toctrees name, in order (glob patterns expanded, sorted as Sphinx does)."""
    text = (DOCS / f"{docname}.md").read_text(encoding="utf-8")
    base = docname.rsplit("/", 1)[0] + "/" if "/" in docname else ""
    out: list[str] = []
    for block in TOCTREE.findall(text):
        lines = [line.strip() for line in block.splitlines()]
        glob = ":glob:" in lines
        for entry in (line for line in lines if line and not line.startswith(":")):
            name = base + entry.removesuffix(".md")
            if glob and any(c in entry for c in "*?["):
                out += sorted(p for p in pages if fnmatch.fnmatch(p, name) and p != docname)
            else:
                out.append(name)
    return out


def test_the_guide_and_references_are_in_the_landing_pages_toctree_in_order() -> None:
    assert _toctree_entries("index", _pages()) == [
        "quickstart",
        "concepts",
        "backends",
        "faults",
        "migration",
        "failover",
        "ci",
        "simulator",
        "development",
        "reference/cli",
        "reference/scenario",
        "reference/metrics",
        "validation/index",
    ]


def test_every_page_is_reachable_from_the_landing_page_and_every_entry_exists() -> None:
    pages = _pages()
    seen: set[str] = set()
    todo = ["index"]
    while todo:
        doc = todo.pop()
        if doc in seen:
            continue
        seen.add(doc)
        entries = _toctree_entries(doc, pages)
        assert set(entries) <= pages, f"{doc} names pages that do not exist: {set(entries) - pages}"
        todo += entries
    assert pages - seen == set(), "pages in no toctree"


def test_the_validation_index_has_a_line_for_every_record() -> None:
    index = (DOCS / "validation" / "index.md").read_text(encoding="utf-8")
    records = sorted(p.name for p in (DOCS / "validation").glob("*.md") if p.name != "index.md")
    assert "simulator-profile.md" in records
    assert [r for r in records if f"]({r})" not in index] == []


def _command_paths(group: click.Group, prefix: str = "") -> Iterator[str]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        path = f"{prefix}{name}"
        yield path
        if isinstance(command, click.Group):
            yield from _command_paths(command, f"{path} ")


def test_the_cli_reference_documents_the_root_group_with_every_subcommand() -> None:
    text = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    directive = re.search(r"^\.\. click:: (\S+)\n((?:   :\S+:.*\n)+)", text, re.M)
    assert directive, "reference/cli.md has no sphinx-click directive"
    assert directive.group(1) == "harness.cli:cli"
    options = directive.group(2).split("\n")
    assert "   :nested: full" in options and "   :prog: herdlab" in options
    # the walk the build relies on reaches nested groups too
    paths = set(_command_paths(cli))
    assert {"cluster up", "member legacy_zk", "bench simulator validate", "scenarios schema"} <= paths


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sphinx_click", reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("docs") / "html"
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def _text(page: Path) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))).split())


@pytest.mark.slow
def test_the_built_cli_reference_shows_the_usage_of_every_command(built_site: Path) -> None:
    text = _text(built_site / "reference" / "cli.html")
    missing = [p for p in _command_paths(cli) if f"herdlab {p} [OPTIONS]" not in text]
    assert missing == []


@pytest.mark.slow
def test_the_built_references_hold_the_generated_tables(built_site: Path) -> None:
    scenario = _text(built_site / "reference" / "scenario.html")
    assert "herdlab-reference" not in scenario  # the marker was replaced
    assert "[cluster]" in scenario and '[[timeline]] action = "crash"' in scenario
    metrics = _text(built_site / "reference" / "metrics.html")
    assert "rebalance latency" in metrics and "unit.lost" in metrics


# The generator, on a schema small enough to work out its Markdown by hand.
SMALL = {
    "type": "object",
    "description": "A file with ``[box]``, see :class:`x.Box`.",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": "^(a|b)$"},
        "wait": {"anyOf": [{"type": "number"}, {"type": "string"}], "default": 5.0},
        "box": {"$ref": "#/$defs/Box"},
        "steps": {"type": "array", "items": {"oneOf": [{"$ref": "#/$defs/Go"}]}},
        "pair": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        "many": {"type": "object", "properties": {"k": {"anyOf": [{"const": n} for n in (1, 2, 3, 4)]}}},
    },
    "$defs": {
        "Box": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 5, "description": "The size."}
            },
        },
        "Go": {
            "type": "object",
            "description": "Go.",
            "properties": {
                "action": {"const": "go"},
                "mode": {"enum": ["x", "y"], "default": "x", "description": "the mode"},
            },
        },
    },
}


def _toml_title(path: str) -> str:
    return "Top" if not path else f"`[{path}]`"


def _named(path: str, node: dict) -> tuple[str, str] | None:
    action = node.get("properties", {}).get("action", {})
    return (f"step {action['const']}", action["const"]) if "const" in action else None


def test_the_generator_renders_one_table_per_object_with_links_between_them() -> None:
    sections = gen.schema_sections(
        SMALL, "t", _toml_title, _named, [({"anyOf": [{"type": "number"}, {"type": "string"}]}, "duration")]
    )
    assert gen.render_sections(sections) == "\n".join(
        [
            "(t-top)=",
            "## Top",
            "",
            "A file with `[box]`, see `x.Box`.",
            "",
            "| Key | Type | Description |",
            "| --- | --- | --- |",
            "| `name` (required) | string matching `^(a\\|b)$` |  |",
            "| `wait` | duration | Default: `5.0`. |",
            "| `box` | {ref}`[box] <t-box>` |  |",
            "| `steps` | array of {ref}`go <t-go>` |  |",
            "| `pair` | array of string, or null (2 items) |  |",
            "| `many` | {ref}`[many] <t-many>` |  |",
            "",
            "(t-box)=",
            "## `[box]`",
            "",
            "| Key | Type | Description |",
            "| --- | --- | --- |",
            "| `size` | integer (>= 1, <= 5) | The size. |",
            "",
            "(t-go)=",
            "## step go",
            "",
            "Go.",
            "",
            "| Key | Type | Description |",
            "| --- | --- | --- |",
            '| `action` | `"go"` |  |',
            '| `mode` | one of `"x"`, `"y"` | the mode. Default: `"x"`. |',
            "",
            "(t-many)=",
            "## `[many]`",
            "",
            "| Key | Type | Description |",
            "| --- | --- | --- |",
            "| `k` | one of: `1`, `2`, `3`, `4` |  |",
            "",
        ]
    )


def test_the_scenario_reference_has_a_section_for_every_table_and_action() -> None:
    from harness.scenario.schema import scenario_schema

    schema = scenario_schema()
    text = gen.scenario_reference()
    for title in ("## Top-level keys", "## `[cluster]`", "## `[group.legacy_zk]`", "## `[[nemesis]]`"):
        assert f"\n{title}\n" in f"\n{text}"
    actions = schema["properties"]["timeline"]["items"]["discriminator"]["mapping"]
    assert len(actions) > 20
    for action in actions:
        assert f'\n## `[[timeline]]` action = "{action}"\n' in text
    # every key of every table is a row
    for part in [schema, *schema["$defs"].values()]:
        for key in part.get("properties", {}):
            assert f"| `{key}` " in text  # "| `key` |" or "| `key` (required) |"


def test_the_metrics_reference_names_every_term_and_metric() -> None:
    from harness.analysis.definitions import (
        DEFINITIONS,
        FAILOVER_DEFINITIONS,
        MIGRATION_DEFINITIONS,
        TRIGGER_METRICS,
        UNIT_METRICS,
    )
    from harness.analysis.metrics_schema import metrics_schema

    text = gen.metrics_reference()
    for term, _ in DEFINITIONS + MIGRATION_DEFINITIONS + FAILOVER_DEFINITIONS:
        assert f"\n**{term}**\n: " in text
    for m in TRIGGER_METRICS:
        assert f"| `{m.name}` | " in text
    for m in UNIT_METRICS:
        assert f"| `unit.{m.name}` | " in text
    # two rows worked out from definitions.py: a censored, compared time and a time shown only
    assert (
        "| `latency_s` | rebalance latency (missing: `never`, +infinity) | s | latency | yes (0.05 s) |"
        in text
    )
    assert "| `startup_s` | process start-up (joins) | s | latency | no |" in text
    assert "| `lost` " in text  # a key of the metrics.json schema's unit
    objects = [name for name, part in metrics_schema()["$defs"].items() if part.get("properties")]
    assert "unit" in objects and "count" not in objects  # a scalar definition is a type, not a table
    assert [name for name in objects if f"(metrics-{name})=" not in text] == []


def test_a_generated_page_without_its_marker_fails() -> None:
    assert gen.replace_marker("quickstart", "# Q\n") == "# Q\n"
    with pytest.raises(ValueError, match="marker"):
        gen.replace_marker("reference/scenario", "# Scenario file reference\n")
    filled = gen.replace_marker("reference/metrics", "# M\n\n<!-- herdlab-reference: metrics -->\n")
    assert filled.startswith("# M\n\n## Definitions\n")
