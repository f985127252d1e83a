"""A broker's stop while its ZooKeeper calls hang, on a real in-process broker.

The ZooKeeper shell is the fake of :mod:`tests.support.replicas` whose ``create_topic`` waits, as a request to an
unreachable ZooKeeper does, until the shell's ``stop`` closes its session (which fails the waiting requests). More
topics are auto-created at once (one Metadata request per connection) than the loop's default executor has
threads, so a broker that ran the shell's calls and its stop in that one executor would never stop.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from coordinator.cluster import ClusterView
from coordinator.config import BrokerConfig, ReplicationConfig
from coordinator.inprocess import LoopThread
from coordinator.rawclient import RawClient
from coordinator.server import Broker
from harness.kernel.errors import Unreachable
from tests.support.replicas import FakeZk, ListHistory, replicated_cluster
from tests.support.waiting import wait_until


class HangingZk(FakeZk):
    """A FakeZk whose shells' ``create_topic`` waits until that shell's ``stop``, then fails."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = threading.Event()
        self._lock = threading.Lock()
        self.waiting = 0

    def factory(self, config: Any, store: Any, cluster: ClusterView, port: int, loop: Any, **kw: Any) -> Any:
        shell = super().factory(config, store, cluster, port, loop, **kw)
        zk = self

        def create_topic(name: str, partitions: int, replication_factor: int | None) -> None:
            with zk._lock:
                zk.waiting += 1
            zk.closed.wait()
            raise Unreachable("the ZooKeeper session was closed")

        def stop() -> None:
            zk.closed.set()
            type(shell).stop(shell)

        shell.create_topic = create_topic
        shell.stop = stop
        return shell


def test_stop_returns_while_more_zookeeper_calls_hang_than_the_default_executor_has_threads(
    tmp_path: Path,
) -> None:
    default_threads = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default max_workers
    hanging = default_threads + 2
    zk = HangingZk()
    loop = LoopThread()
    config = BrokerConfig(
        broker_id=1,
        zookeeper="127.0.0.1:1",  # replaced by the fake shell (zk_factory): never contacted
        data_dir=tmp_path / "b1",
        metrics_interval_s=0,
        replication=ReplicationConfig(enabled=True),
    )
    broker = Broker(config, history=ListHistory(), cluster=replicated_cluster(1), zk_factory=zk.factory)
    loop.run(broker.start())
    clients: list[RawClient] = []
    try:
        for i in range(hanging):
            raw = RawClient("127.0.0.1", broker.port)
            clients.append(raw)
            topic = MetadataRequest.MetadataRequestTopic(name=f"auto-{i}")  # type: ignore[attr-defined]
            raw.send(MetadataRequest(topics=[topic], allow_auto_topic_creation=True), 10)
        # at least 4 (the broker's ZooKeeper executor) are waiting in create_topic, the rest queued behind them
        wait_until(lambda: zk.waiting >= 4, 15, what="auto-creations waiting on ZooKeeper")
        loop.run(broker.stop(), timeout=20)  # TimeoutError: stop queued behind the hanging calls
        assert zk.closed.is_set()
    finally:
        zk.closed.set()
        for raw in clients:
            raw.close()
        loop.close()
