"""coordinator.core.replication is pure: no module of it imports sockets, threads, clocks, asyncio or ZooKeeper."""

from __future__ import annotations

import ast
from pathlib import Path

import coordinator.core
import coordinator.core.replication

IMPURE = {
    "socket",
    "threading",
    "time",
    "asyncio",
    "kazoo",
    "concurrent",
    "selectors",
    "subprocess",
    "datetime",
}


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_replication_module_imports_io_threads_clocks_or_zookeeper() -> None:
    package = Path(coordinator.core.replication.__file__).parent
    modules = sorted(package.glob("*.py"))
    assert {m.name for m in modules} >= {
        "__init__.py",
        "partition.py",
        "election.py",
        "state.py",
        "errors.py",
    }
    for module in modules:
        assert imported_roots(module) & IMPURE == set(), module.name
        assert module.read_text().startswith("# pyright: strict\n"), module.name


def test_no_core_module_imports_io_threads_clocks_or_zookeeper() -> None:
    root = Path(coordinator.core.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert {m.relative_to(root).as_posix() for m in modules} >= {
        "__init__.py",
        "group/machine.py",
        "group/api.py",
        "replication/partition.py",
    }
    for module in modules:
        assert imported_roots(module) & IMPURE == set(), module
        assert module.read_text().startswith("# pyright: strict\n"), module
