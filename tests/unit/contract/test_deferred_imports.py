"""Imports of our own packages sit at module level. An import inside a function, method or class body is
allowed only where a cycle or start-up cost requires it, and then says so: the import line, or the line
before it, carries ``# deferred: <reason>`` with a non-empty reason; a comment line directly above a run of imports on
consecutive lines covers the run. ``if TYPE_CHECKING:`` blocks (and
any other ``if``/``try`` at module level) count as module level."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
OUR_PACKAGES = ("harness", "coordinator", "legacy_zk")
_REASON = re.compile(r"#\s*deferred:\s*\S")


def _ours(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names of our own modules this import statement imports (relative imports are ours)."""
    if isinstance(node, ast.ImportFrom):
        if node.level > 0:
            return ["." * node.level + (node.module or "")]
        names = [node.module or ""]
    else:
        names = [alias.name for alias in node.names]
    return [n for n in names if n.split(".")[0] in OUR_PACKAGES]


def _nested_imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, int]]:
    """Every import statement inside a function, method or class body (at any depth), with the first line
    of the run of import statements it belongs to (imports on consecutive lines of one body)."""

    def walk(node: ast.AST, nested: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, int]]:
        run_first, run_last = 0, -1
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                if child.lineno != run_last + 1:
                    run_first = child.lineno
                run_last = child.end_lineno or child.lineno
                if nested:
                    yield child, run_first
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                yield from walk(child, True)
            else:
                yield from walk(child, nested)

    return walk(tree, False)


def offences(source: str, name: str) -> list[str]:
    """``name:line: module`` for each non-module-level import of our packages lacking a deferred reason."""
    lines = source.splitlines()
    found: list[str] = []
    for node, run_first in _nested_imports(ast.parse(source, name)):
        modules = _ours(node)
        if not modules:
            continue
        # the statement's own lines (a parenthesised import spans several), and the line before its run of
        # imports if that line is only a comment (one import's trailing reason does not cover the next)
        first, last = node.lineno, node.end_lineno or node.lineno
        span = lines[first - 1 : last]
        if run_first >= 2 and lines[run_first - 2].lstrip().startswith("#"):
            span.append(lines[run_first - 2])
        if not any(_REASON.search(line) for line in span):
            found.append(f"{name}:{first}: {', '.join(modules)}")
    return found


def _sources() -> list[Path]:
    return sorted(p for pkg in OUR_PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_snippet_without_reason_is_reported() -> None:
    bad = (
        "import os\n"
        "from harness.kernel import errors\n"
        "def f():\n"
        "    from harness.analysis import verdict\n"
        "    import coordinator.wire, json  # deferred: cycle\n"
        "    import coordinator.dataplane\n"
        "    return verdict\n"
        "def g():\n"
        "    # deferred: start-up\n"
        "    import harness.report.plots\n"
        "\n"
        "    import harness.report.html\n"
        "class C:\n"
        "    from . import sibling\n"
        "    def m(self):\n"
        "        # deferred:\n"
        "        from legacy_zk import paths\n"
    )
    assert offences(bad, "bad.py") == [
        "bad.py:4: harness.analysis",
        "bad.py:6: coordinator.dataplane",
        "bad.py:12: harness.report.html",
        "bad.py:14: .",
        "bad.py:17: legacy_zk",
    ]


def test_snippet_with_reasons_or_at_module_level_passes() -> None:
    good = (
        "from typing import TYPE_CHECKING\n"
        "from harness.kernel import errors\n"
        "if TYPE_CHECKING:\n"
        "    from harness.analysis import verdict\n"
        "try:\n"
        "    import coordinator.wire\n"
        "except ImportError:\n"
        "    pass\n"
        "def f():\n"
        "    import json\n"
        "    # deferred: start-up: loads pyspark\n"
        "    from harness.analysis import spark\n"
        "    from ..run import runner  # deferred: cycle: harness.run.runner imports this module\n"
        "    # deferred: start-up: matplotlib\n"
        "    from harness.report import plots\n"
        "    from harness.report import html\n"
        "    from harness.cluster import (  # deferred: start-up: docker client\n"
        "        containers,\n"
        "    )\n"
        "    return spark, runner, containers, json\n"
    )
    assert offences(good, "good.py") == []


def test_every_function_level_import_of_ours_says_why() -> None:
    found = [o for p in _sources() for o in offences(p.read_text(), str(p.relative_to(ROOT)))]
    assert not found, "imports of our modules not at module level, without '# deferred: <reason>':\n" + (
        "\n".join(found)
    )


@pytest.mark.parametrize("path", ["harness", "coordinator", "legacy_zk"])
def test_the_packages_are_scanned(path: str) -> None:
    assert any(p.is_relative_to(ROOT / path) for p in _sources())
