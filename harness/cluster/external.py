"""The ``external`` cluster backend: addresses of an existing ZooKeeper and Kafka-compatible cluster.

Nothing is started or stopped. ZooKeeper is needed only by the legacy side (and for ``mntr``
counters, which work when the server allows four-letter words). Broker restarts are not possible
here: a scenario that asks for one fails with a clear error before the run starts.
"""

from __future__ import annotations

from typing import Any

from harness.cluster.zookeeper import four_letter, parse_mntr
from harness.errors import ConfigError


class ExternalCluster:
    """An existing cluster, by address."""

    def __init__(self, zookeeper: str | None, bootstrap: str) -> None:
        if not bootstrap:
            raise ConfigError(
                "the external backend needs --bootstrap HOST:PORT of the Kafka-compatible cluster"
            )
        self.zookeeper_connect = zookeeper or ""
        self.bootstrap = bootstrap

    def start(self) -> ExternalCluster:
        return self

    def stop(self) -> None:
        return None

    def zk_mntr(self) -> dict[str, Any] | None:
        if not self.zookeeper_connect:
            return None
        host, _, port = self.zookeeper_connect.split(",")[0].split("/")[0].rpartition(":")
        try:
            return parse_mntr(four_letter(host, int(port), "mntr", timeout=2.0))
        except (OSError, ValueError):
            return None

    def stop_broker(self, index: int = 0) -> None:
        raise ConfigError("the external backend cannot restart brokers")

    def start_broker(self, index: int = 0) -> None:
        raise ConfigError("the external backend cannot restart brokers")

    def __enter__(self) -> ExternalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
