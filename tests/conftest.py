"""Fixtures shared by every test: real ZooKeeper servers; and which marked tests a run selects.

* ``zookeeper``: one server for the whole session (tickTime 200 ms, so sessions may be as short as
  400 ms). Tests share it: use unique group / path names.
* ``fresh_zookeeper``: a server of the test's own, for tests that read ``mntr`` deltas or kill it.

Tests marked ``bench``, ``containers``, ``migration``, ``failover``, ``long``, ``kafka`` or ``clients`` run only when the ``-m`` expression
names that marker (``-m bench``, ``-m containers``, ``-m migration``, ``-m failover``, ``-m "containers or not containers"``);
otherwise they are deselected, whatever else ``-m`` says (:mod:`tests.support.selection`). So ``./herdlab test`` and
``./herdlab test -m "not slow"`` both leave them out.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.cluster.zookeeper import ZooKeeperServer
from tests.support.selection import opted_out_markers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    out = opted_out_markers(config.getoption("markexpr") or "")
    if not out:
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        (drop if any(item.get_closest_marker(m) for m in out) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tick_time_ms=200, name="zookeeper-tests") as zk:
        yield zk


@pytest.fixture
def fresh_zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tick_time_ms=200, name="zookeeper-fresh") as zk:
        yield zk


@pytest.fixture
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """herdlab's commands print through a console as wide as COLUMNS (80 when unset and not a terminal): a
    wide one, so that the temporary paths in their output (longer under pytest-xdist's worker directories)
    never wrap inside what a test looks for."""
    monkeypatch.setenv("COLUMNS", "250")
