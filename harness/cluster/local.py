"""The ``local`` cluster backend: ZooKeeper (and, once available, brokers) as child processes.

Contract: ``LocalCluster(...).start()`` starts ZooKeeper (one server, or with ``zookeeper_servers=3``
a :class:`~harness.cluster.zookeeper_ensemble.ZooKeeperEnsemble`, exposed as ``zookeeper_ensemble`` for
the nemesis; None with one server) then the brokers on free loopback ports and returns when all are
ready; ``stop()`` stops them in reverse order and is idempotent.

Broker faults (broker ids are the brokers' indexes 0..n-1): :meth:`LocalCluster.kill_broker`
(SIGKILL, returns once the process is gone), :meth:`~LocalCluster.pause_broker` /
:meth:`~LocalCluster.resume_broker` (SIGSTOP / SIGCONT, returns once the process is seen stopped /
running), :meth:`~LocalCluster.start_broker` (same id, port and data directory; returns once it serves)
and, with ``broker_zookeeper_proxies``, :meth:`~LocalCluster.cut_broker_zookeeper` /
:meth:`~LocalCluster.heal_broker_zookeeper`: each broker then reaches every ZooKeeper server through a
loopback proxy of its own (:mod:`harness.faults.proxy`, group ``broker-<id>-zookeeper``), and a cut
blackholes them and drops their connections (both directions) until healed. ``brokers_down``,
``brokers_paused`` and ``brokers_cut`` say which brokers a fault holds now. Both also run as a context manager. Each component is a :class:`~harness.cluster.service.Service`, held in a
:class:`~harness.cluster.service.ServiceStack`. ``describe()`` reports addresses and health for people and the CLI.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.service import ServiceStack
from harness.cluster.zookeeper import ZooKeeperServer
from harness.cluster.zookeeper_ensemble import ZooKeeperEnsemble
from harness.faults.nemesis import FaultControls
from harness.faults.proxy import ProxyHost

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
        broker_zookeeper_proxies: bool = False,
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
        self.broker_zookeeper_proxies = broker_zookeeper_proxies
        self.proxies: ProxyHost | None = None
        self.brokers_down: set[int] = set()
        self.brokers_paused: set[int] = set()
        self.brokers_cut: set[int] = set()

    def start(self) -> LocalCluster:
        try:
            self._services.push(self.zookeeper).start()
            if self.n_brokers:
                broker_mod = importlib.import_module("harness.cluster.broker")
                for i in range(self.n_brokers):
                    b = broker_mod.BrokerProcess(
                        broker_id=i,
                        zookeeper=self._broker_zookeeper(i),
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

    def _broker_zookeeper(self, broker_id: int) -> str:
        """The ZooKeeper connect string broker ``broker_id`` gets: ZooKeeper's own, or with
        ``broker_zookeeper_proxies`` one proxy per server, all in the group ``broker-<id>-zookeeper``."""
        connect = self.zookeeper.connect_string
        if not self.broker_zookeeper_proxies:
            return connect
        if self.proxies is None:
            self.proxies = ProxyHost()
        group = f"broker-{broker_id}-zookeeper"
        addresses = []
        for k, server in enumerate(connect.split(",")):
            host, _, port = server.rpartition(":")
            addresses.append(self.proxies.add((host, int(port)), name=f"{group}-{k}", group=group).address)
        return ",".join(addresses)

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string

    def fault_controls(self) -> FaultControls:
        """Every fault: the brokers' (kill, pause, cut from ZooKeeper), a ZooKeeper server's restart,
        and with three servers the ensemble's leader faults."""
        return FaultControls(brokers=self, ensemble=self.zookeeper_ensemble, zookeeper_restart=self.zookeeper)

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
        """Start broker ``index`` again on the same port with the same data directory (a killed broker
        waits for its old ZooKeeper session to expire, so this can take a session timeout)."""
        self.brokers[index].restart(timeout=60.0)
        self.brokers_down.discard(index)

    def broker_ids(self) -> list[int]:
        """The ids of the cluster's brokers (running or not)."""
        return [b.broker_id for b in self.brokers]

    def broker_alive(self, broker_id: int) -> bool:
        """Whether broker ``broker_id``'s process exists (a paused one does)."""
        b = self.brokers[broker_id]
        return b.process is not None and b.process.alive()

    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL broker ``broker_id`` (a crash); returns once its process is gone."""
        self.brokers[broker_id].kill()
        self.brokers_down.add(broker_id)

    def pause_broker(self, broker_id: int, timeout: float = 10.0) -> None:
        """SIGSTOP broker ``broker_id``; returns once it is seen stopped (RuntimeError after ``timeout``)."""
        self.brokers[broker_id].pause(timeout)
        self.brokers_paused.add(broker_id)

    def resume_broker(self, broker_id: int, timeout: float = 10.0) -> None:
        """SIGCONT broker ``broker_id``; returns once it runs again (RuntimeError after ``timeout``)."""
        self.brokers[broker_id].resume(timeout)
        self.brokers_paused.discard(broker_id)

    def cut_broker_zookeeper(self, broker_id: int) -> None:
        """Cut broker ``broker_id`` from every ZooKeeper server: its proxies blackhole and drop their
        connections. RuntimeError when the cluster runs without ``broker_zookeeper_proxies``."""
        self._broker_proxies().cut(f"broker-{broker_id}-zookeeper", drop=True)
        self.brokers_cut.add(broker_id)

    def heal_broker_zookeeper(self, broker_id: int) -> None:
        """Let broker ``broker_id`` reach ZooKeeper again (it reconnects on its own)."""
        self._broker_proxies().restore(f"broker-{broker_id}-zookeeper")
        self.brokers_cut.discard(broker_id)

    def _broker_proxies(self) -> ProxyHost:
        if self.proxies is None:
            raise RuntimeError(
                "this cluster's brokers reach ZooKeeper directly (no broker_zookeeper_proxies)"
            )
        return self.proxies

    def stop(self) -> None:
        """Stop the brokers (a paused one is resumed first), then ZooKeeper (every one, even if one
        fails), then the brokers' proxies. Idempotent."""
        for i in list(self.brokers_paused):
            if i < len(self.brokers):
                self.brokers[i].signal(signal.SIGCONT)
        self.brokers_paused.clear()
        try:
            self._services.stop_all()
        finally:
            self.brokers.clear()
            if self.proxies is not None:
                self.proxies.close()
                self.proxies = None

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
