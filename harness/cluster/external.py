"""The ``external`` cluster backend: addresses of an existing ZooKeeper and Kafka-compatible cluster.

Nothing is started or stopped. ZooKeeper is needed only by the legacy side (and for ``mntr``
counters, which work when the server allows four-letter words). Broker restarts are not possible
here: a scenario that asks for one fails with a clear error before the run starts.

Constructing an :class:`ExternalCluster` checks its addresses (:meth:`ExternalCluster.check`, see
:mod:`harness.cluster.probe`): every bootstrap address must be a Kafka broker a kafka-python client
bootstraps from, and the ZooKeeper connect string, when given, must reach ZooKeeper. Otherwise
:class:`harness.kernel.errors.Unreachable` names the address and the cause, within
:data:`CHECK_BUDGET_S` seconds and without a kafka-python or kazoo log line on the terminal.
"""

from __future__ import annotations

import time
from typing import Any

from harness.cluster.probe import Probe, check_bootstrap, check_zookeeper
from harness.cluster.zookeeper import four_letter, parse_mntr
from harness.faults.nemesis import FaultControls
from harness.kernel.errors import ConfigError

#: Upper bound of the whole address check, however many addresses are given.
CHECK_BUDGET_S = 10.0


class ExternalCluster:
    """An existing cluster, by address; the constructor checks the addresses (see the module docstring).

    ``probes``: what answered at each address, as the check found it.
    """

    def __init__(self, zookeeper: str | None, bootstrap: str) -> None:
        if not bootstrap:
            raise ConfigError(
                "the external backend needs --bootstrap HOST:PORT of the Kafka-compatible cluster"
            )
        self.zookeeper_connect = zookeeper or ""
        self.bootstrap = bootstrap
        self.probes: list[Probe] = self.check()

    def check(self, budget_s: float = CHECK_BUDGET_S) -> list[Probe]:
        """Check the bootstrap addresses, then ZooKeeper when given; raise ``Unreachable`` on the first
        failure (see :mod:`harness.cluster.probe`), return what answered otherwise."""
        deadline = time.monotonic() + budget_s
        probes = check_bootstrap(self.bootstrap, deadline)
        if self.zookeeper_connect:
            probes += check_zookeeper(self.zookeeper_connect, deadline)
        return probes

    def start(self) -> ExternalCluster:
        return self

    def stop(self) -> None:
        return None

    def fault_controls(self) -> FaultControls:
        """None: herdlab does not own an external cluster's processes."""
        return FaultControls()

    def zk_mntr(self) -> dict[str, Any] | None:
        if not self.zookeeper_connect:
            return None
        host, _, port = self.zookeeper_connect.split(",")[0].split("/")[0].rpartition(":")
        try:
            return parse_mntr(four_letter(host, int(port), "mntr", timeout=2.0))
        except (OSError, ValueError):
            return None

    def member_launcher(self, mounts: object) -> None:
        """Members run as local processes (see :class:`harness.cluster.base.Cluster`)."""
        return None

    def stop_broker(self, index: int = 0) -> None:
        raise ConfigError("the external backend cannot restart brokers")

    def start_broker(self, index: int = 0) -> None:
        raise ConfigError("the external backend cannot restart brokers")

    def __enter__(self) -> ExternalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
