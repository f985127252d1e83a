"""The ``local`` cluster backend: ZooKeeper (and, once available, brokers) as child processes.

Contract: ``LocalCluster(...).start()`` starts ZooKeeper (one server, or with ``zookeeper_servers=3``
a :class:`~harness.cluster.zookeeper_ensemble.ZooKeeperEnsemble`, exposed as ``zookeeper_ensemble`` for
the nemesis; None with one server) then the brokers on free loopback ports and returns when all are
ready; ``stop()`` stops them in reverse order and is idempotent. Both also run as a context manager. Each component is a :class:`~harness.cluster.service.Service`, held in a
:class:`~harness.cluster.service.ServiceStack`. ``describe()`` reports addresses and health for people and the CLI.
"""

from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.service import ServiceStack
from harness.cluster.zookeeper import ZooKeeperServer
from harness.cluster.zookeeper_ensemble import ZooKeeperEnsemble

log = logging.getLogger("harness.cluster")


@dataclass
class ComponentHealth:
    """One line of ``describe()``: what runs where, and whether it answers."""

    name: str
    address: str
    pid: int | None
    healthy: bool
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class LocalCluster:
    """ZooKeeper plus ``brokers`` broker processes on 127.0.0.1.

    ``workdir``: where logs and data go (a temporary directory per component when None).
    ``tick_time_ms``: ZooKeeper's tick. ``zookeeper_servers``: 1 (a standalone server, the default) or
    more (an ensemble; the brokers and members get every server's address). Brokers need
    :mod:`harness.cluster.broker`; when that module is not installed yet, asking for brokers is an error.
    """

    def __init__(
        self,
        brokers: int = 0,
        tick_time_ms: int = 500,
        workdir: str | os.PathLike[str] | None = None,
        broker_args: tuple[str, ...] = (),
        history_dir: str | os.PathLike[str] | None = None,
        zookeeper_servers: int = 1,
    ) -> None:
        self.workdir = Path(workdir) if workdir else None
        self.history_dir = Path(history_dir) if history_dir else None
        zk_dir = self.workdir / "zookeeper" if self.workdir else None
        self.zookeeper: ZooKeeperServer | ZooKeeperEnsemble = (
            ZooKeeperServer(tick_time_ms=tick_time_ms, workdir=zk_dir)
            if zookeeper_servers == 1
            else ZooKeeperEnsemble(n=zookeeper_servers, tick_time_ms=tick_time_ms, workdir=zk_dir)
        )
        self.n_brokers = brokers
        self.broker_args = broker_args
        self.brokers: list[Any] = []
        self._services = ServiceStack()

    def start(self) -> LocalCluster:
        try:
            self._services.push(self.zookeeper).start()
            if self.n_brokers:
                broker_mod = importlib.import_module("harness.cluster.broker")
                for i in range(self.n_brokers):
                    b = broker_mod.BrokerProcess(
                        broker_id=i,
                        zookeeper=self.zookeeper.connect_string,
                        data_dir=self.workdir / f"broker-{i}" / "data" if self.workdir else None,
                        log_path=self.workdir / f"broker-{i}" / "broker.log" if self.workdir else None,
                        history_path=self.history_dir / f"broker-{i}.jsonl" if self.history_dir else None,
                        extra_args=self.broker_args,
                    )
                    self.brokers.append(self._services.push(b))
                    b.start()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string

    @property
    def zookeeper_ensemble(self) -> ZooKeeperEnsemble | None:
        """The ensemble when the cluster runs several ZooKeeper servers (the ZooKeeper-leader faults
        need one); None with a single server."""
        return self.zookeeper if isinstance(self.zookeeper, ZooKeeperEnsemble) else None

    @property
    def bootstrap(self) -> str:
        """Comma-separated ``host:port`` of the brokers ('' when there are none)."""
        return ",".join(b.bootstrap for b in self.brokers)

    def zk_mntr(self) -> dict[str, Any] | None:
        """ZooKeeper's ``mntr`` counters now (None if it does not answer)."""
        try:
            return self.zookeeper.mntr()
        except (OSError, RuntimeError):
            return None

    def member_launcher(self, mounts: object) -> None:
        """Members run as local processes (see :class:`harness.cluster.base.Cluster`)."""
        return None

    def stop_broker(self, index: int = 0) -> None:
        """Stop broker ``index`` (SIGTERM, then SIGKILL); :meth:`start_broker` brings it back."""
        self.brokers[index].stop()

    def start_broker(self, index: int = 0) -> None:
        """Start broker ``index`` again on the same port with the same data directory."""
        self.brokers[index].restart()

    def stop(self) -> None:
        """Stop the brokers, then ZooKeeper (every one, even if one fails). Idempotent."""
        try:
            self._services.stop_all()
        finally:
            self.brokers.clear()

    def describe(self) -> list[ComponentHealth]:
        """Addresses and health of every component, checked now."""
        zk = self.zookeeper
        out: list[ComponentHealth] = []
        if isinstance(zk, ZooKeeperEnsemble):
            out += _ensemble_health(zk)
        elif zk.port is not None:
            healthy = zk.is_serving()
            extra: dict[str, Any] = {}
            detail = ""
            if healthy:
                m = zk.mntr()
                extra = {
                    k: m.get(k)
                    for k in (
                        "zk_server_state",
                        "zk_num_alive_connections",
                        "zk_znode_count",
                        "zk_packets_received",
                    )
                }
                detail = f"ZooKeeper {zk.version}, {zk.rss_bytes() / 2**20:.0f} MiB RSS, ready in {zk.ready_seconds:.2f}s"
            out.append(
                ComponentHealth(
                    "zookeeper",
                    zk.connect_string,
                    zk.process.pid if zk.process else None,
                    healthy,
                    detail,
                    extra,
                )
            )
        for i, b in enumerate(self.brokers):
            alive = b.process is not None and b.process.alive()
            out.append(
                ComponentHealth(f"broker-{i}", b.bootstrap, b.process.pid if b.process else None, alive)
            )
        return out

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _ensemble_health(zk: ZooKeeperEnsemble) -> list[ComponentHealth]:
    """One line per server of an ensemble: its address, pid, whether it serves, and its mode."""
    out = []
    for i, p in enumerate(zk.peers):
        paused = i in zk.paused
        healthy = p.alive() and not paused and p.ready()
        mode = "paused" if paused else (p.mode() or "not serving")
        pid = p.process.pid if p.process is not None and p.alive() else None
        out.append(ComponentHealth(p.name, p.address, pid, healthy, f"ZooKeeper {zk.version}, {mode}"))
    return out
