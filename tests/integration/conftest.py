"""Fixtures for integration tests: real broker processes (``python -m coordinator``).

* ``broker_factory``: start brokers with any options (``broker_factory(extra_args=[...],
  zookeeper=..., broker_id=...)``); every broker gets its own data directory, history file and
  log under the test's ``tmp_path`` and is stopped when the test ends.
* ``broker``: one broker with Kafka's default settings, no ZooKeeper, data kept on disk (so
  ``broker.restart()`` finds its topics, records and groups again).
* ``broker_with_zk``: the same, registered in the session's ``zookeeper`` (0.8 layout).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from harness.cluster.broker import BrokerProcess
from harness.cluster.zookeeper import ZooKeeperServer
from tests.support.brokers import BrokerFactory


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    started: list[BrokerProcess] = []

    def make(
        broker_id: int = 0,
        zookeeper: str | None = None,
        extra_args: Sequence[str] = (),
        persistent: bool = True,
        timeout: float = 30.0,
    ) -> BrokerProcess:
        home = tmp_path / f"broker-{broker_id}-{len(started)}"
        b = BrokerProcess(
            broker_id=broker_id,
            zookeeper=zookeeper,
            data_dir=home / "data" if persistent else None,
            history_path=home / "history.jsonl",
            log_path=home / "broker.log",
            extra_args=extra_args,
        )
        started.append(b)
        return b.start(timeout)

    yield make
    for b in reversed(started):
        b.stop()


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture
def broker_with_zk(broker_factory: BrokerFactory, zookeeper: ZooKeeperServer) -> BrokerProcess:
    return broker_factory(zookeeper=zookeeper.connect_string)
