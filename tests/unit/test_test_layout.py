"""The test tree's own rule: a test module imports shared helpers from ``tests.support`` only, never from
another test module or a ``conftest.py`` (pytest collects those; importing one runs it twice under two
names and couples tests that should stand alone)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.selection import opted_out_markers

TESTS = Path(__file__).resolve().parents[1]


def _imported_test_modules(path: Path) -> list[str]:
    """The modules under ``tests`` that ``path`` imports, other than ``tests.support``; relative imports
    are reported as written (``.name``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")] if node.level else [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            inside = name.startswith(".") or name == "tests" or name.startswith("tests.")
            support = name == "tests.support" or name.startswith("tests.support.")
            if inside and not support:
                found.append(name)
    return found


def test_the_scan_sees_absolute_and_relative_imports_of_test_modules(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import os\n"
        "from tests.support.waiting import wait_until\n"
        "from tests.unit.coordinator.test_group_harness import Driver\n"
        "from .conftest import thing\n"
        "import tests.integration.conftest\n"
        "def f():\n"
        "    from tests.integration.legacy_zk.conftest import fast_config\n"
    )
    assert _imported_test_modules(sample) == [
        "tests.unit.coordinator.test_group_harness",
        ".conftest",
        "tests.integration.conftest",
        "tests.integration.legacy_zk.conftest",
    ]


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {
        str(p.relative_to(TESTS)): names
        for p in sorted(TESTS.rglob("*.py"))
        if (names := _imported_test_modules(p))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    ("markexpr", "out"),
    [
        ("", {"bench", "containers", "migration", "failover", "long", "kafka", "clients"}),
        ("not slow", {"bench", "containers", "migration", "failover", "long", "kafka", "clients"}),
        ("containers", {"bench", "migration", "failover", "long", "kafka", "clients"}),
        ("bench and not slow", {"containers", "migration", "failover", "long", "kafka", "clients"}),
        ("containers or bench", {"migration", "failover", "long", "kafka", "clients"}),
        ("migration or failover", {"bench", "containers", "long", "kafka", "clients"}),
        ("migration or failover or long", {"bench", "containers", "kafka", "clients"}),
        ("containers or bench or migration or failover or long", {"kafka", "clients"}),
        ("kafka and (long or not long)", {"bench", "containers", "migration", "failover", "clients"}),
        (
            "not benchmarks",
            {"bench", "containers", "migration", "failover", "long", "kafka", "clients"},
        ),  # a whole word only
        ("clients", {"bench", "containers", "migration", "failover", "long", "kafka"}),
        (
            "longer",
            {"bench", "containers", "migration", "failover", "long", "kafka", "clients"},
        ),  # a whole word only
    ],
)
def test_opt_in_markers_run_only_when_the_mark_expression_names_them(markexpr: str, out: set[str]) -> None:
    assert opted_out_markers(markexpr) == out


def test_not_slow_still_leaves_out_containers_tests() -> None:
    """pytest keeps only the last -m: the conftest must deselect containers tests under -m "not slow" too."""
    target = str(TESTS / "integration" / "containers" / "test_cluster.py")  # every test marked containers
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not slow",
    ]
    r = subprocess.run([*argv, target], capture_output=True, text=True, timeout=120)
    assert r.returncode == 5, r.stdout[-2000:]  # 5: nothing collected (all deselected)
    assert "deselected" in r.stdout
