"""Three replicating herdlab broker processes on one real ZooKeeper, with one replicated topic: the cluster of
the coordinator failover tests (classic and consumer groups)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka.admin import KafkaAdminClient, NewTopic

from harness.cluster.broker import BrokerProcess
from tests.support.brokers import BrokerFactory

__all__ = ["PARTITIONS", "REPLICATION", "TOPIC", "bootstrap_of", "three_brokers", "wait_for"]

TOPIC = "orders"
PARTITIONS = 3
REPLICATION = ["--replication", "--metrics-interval", "0"]


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``condition`` until it returns a truthy value (returned) or fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)  # polling pace toward a deadline, not synchronisation


def three_brokers(zookeeper: Any, broker_factory: BrokerFactory) -> list[BrokerProcess]:
    """Three replicating brokers, known to the controller, then :data:`TOPIC` with :data:`PARTITIONS`
    partitions replicated three times."""
    brokers = [
        broker_factory(broker_id=i, zookeeper=zookeeper.connect_string, extra_args=REPLICATION)
        for i in range(3)
    ]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    # The controller must know all three before the topic is created (it decides the ISR from its view).
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="herdlab-harness", request_timeout_ms=10000
    )
    try:
        wait_for(lambda: len(admin.describe_cluster()["brokers"]) == 3, 30, "three live brokers in Metadata")
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
    finally:
        admin.close()
    return brokers


def bootstrap_of(brokers: list[BrokerProcess], but: int | None = None) -> str:
    """The bootstrap list of ``brokers``, leaving out broker ``but``."""
    return ",".join(b.bootstrap for b in brokers if b.broker_id != but)
