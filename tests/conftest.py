"""Fixtures shared by every test: real ZooKeeper servers.

* ``zookeeper``: one server for the whole session (tickTime 200 ms, so sessions may be as short as
  400 ms). Tests share it: use unique group / path names.
* ``fresh_zookeeper``: a server of the test's own, for tests that read ``mntr`` deltas or kill it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.cluster.zookeeper import ZooKeeperServer


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tick_time_ms=200, name="zookeeper-tests") as zk:
        yield zk


@pytest.fixture
def fresh_zookeeper() -> Iterator[ZooKeeperServer]:
    with ZooKeeperServer(tick_time_ms=200, name="zookeeper-fresh") as zk:
        yield zk
