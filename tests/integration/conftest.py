"""Fixtures for integration tests: real broker processes (``python -m coordinator``).

* ``broker_factory``: start brokers with any options (``broker_factory(extra_args=[...],
  zookeeper=..., broker_id=...)``); every broker gets its own data directory, history file and
  log under the test's ``tmp_path`` and is stopped when the test ends.
* ``broker``: one broker with Kafka's default settings, no ZooKeeper, data kept on disk (so
  ``broker.restart()`` finds its topics, records and groups again).
* ``broker_with_zk``: the same, registered in the session's ``zookeeper`` (0.8 layout).
* ``shared_cluster``: a ZooKeeper and a broker (registered there, started with the broker options of
  a run shrunk by ``tests.support.runs.FAST``) for all the runs of one test module, given to
  ``run_scenario`` through the ``external`` backend (:class:`tests.support.runs.SharedCluster`): a
  run whose assertions need neither the broker's own history nor a broker restart can use it instead
  of starting a cluster of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from harness.cluster.broker import BrokerProcess
from harness.cluster.zookeeper import ZooKeeperServer
from tests.support.brokers import BrokerFactory
from tests.support.runs import SharedCluster, fast_broker_args


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


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedCluster]:
    home = tmp_path_factory.mktemp("shared-cluster")
    with ZooKeeperServer(tick_time_ms=200, name="zookeeper-shared") as zk:
        b = BrokerProcess(
            broker_id=0,
            zookeeper=zk.connect_string,
            data_dir=home / "data",
            history_path=home / "history.jsonl",
            log_path=home / "broker.log",
            extra_args=fast_broker_args(),
        )
        try:
            b.start(30.0)
            yield SharedCluster(zookeeper=zk.connect_string, bootstrap=b.bootstrap)
        finally:
            b.stop()
