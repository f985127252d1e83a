"""The ``Cluster`` seam: what a run needs from a cluster, and the one factory that makes one.

Contract
--------
* :class:`Cluster` is what the runner, benches and tests use: the two addresses, ZooKeeper's
  ``mntr`` counters, stopping and starting a broker (the ``restart-broker`` action), a launcher for
  member processes, and ``start`` / ``stop``. ``stop`` is idempotent and leaves no process or
  container behind. Implementations live beside this module: :mod:`~harness.cluster.local` (processes
  on loopback), :mod:`~harness.cluster.containers` (containers on the host network),
  :mod:`~harness.cluster.external` (an existing cluster, by address), :mod:`~harness.cluster.tansu` (a
  third-party broker, ``cluster.broker = "tansu"``).
* :class:`ClusterSpec` says which backend and how; :func:`make_cluster` turns it into an unstarted
  :class:`Cluster` (``start()`` it). An unknown backend is a :class:`ConfigError` naming the known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.cluster.containers import ContainersCluster
from harness.cluster.external import ExternalCluster
from harness.cluster.local import LocalCluster
from harness.faults.nemesis import FaultControls
from harness.images import image_names
from harness.kernel.errors import ConfigError

__all__ = ["BACKENDS", "Cluster", "ClusterSpec", "Launcher", "make_cluster"]

BACKENDS = ("local", "containers", "external")

Launcher = Callable[[list[str], str, Path], Any]
"""``(argv, name, log_path) -> handle``: starts one member process somewhere (see
:func:`harness.run.launch.start_member`); None from :meth:`Cluster.member_launcher` means a local process."""


class Cluster(Protocol):
    """A ZooKeeper ensemble and Kafka-protocol brokers, wherever they run."""

    @property
    def zookeeper_connect(self) -> str:
        """ZooKeeper connect string, ``""`` when the cluster has no ZooKeeper."""
        ...

    @property
    def bootstrap(self) -> str:
        """Comma-separated ``host:port`` of the brokers."""
        ...

    def start(self) -> Cluster:
        """Start every component and wait until each serves; on failure stop what started, re-raise."""
        ...

    def stop(self) -> None:
        """Stop every component the cluster started (idempotent)."""
        ...

    def fault_controls(self) -> FaultControls:
        """The faults the cluster can do (:class:`harness.faults.nemesis.FaultControls`)."""
        ...

    def zk_mntr(self) -> dict[str, Any] | None:
        """ZooKeeper's ``mntr`` counters now, or None when unavailable."""
        ...

    def stop_broker(self, index: int = 0) -> None:
        """Stop broker ``index`` (a clean shutdown)."""
        ...

    def start_broker(self, index: int = 0) -> None:
        """Start broker ``index`` again and wait until it serves."""
        ...

    def member_launcher(self, mounts: Sequence[Path]) -> Launcher | None:
        """How member processes start on this cluster (None: local processes); ``mounts`` are the
        host directories a member must see (its history and log directories)."""
        ...


@dataclass(frozen=True)
class ClusterSpec:
    """Which cluster a unit runs on.

    ``backend``: one of :data:`BACKENDS`. ``workdir``: logs and data. ``history_dir``: where brokers
    write their history. ``broker_args``: extra broker options (local and containers).
    ``zookeeper_servers``: how many ZooKeeper servers the local backend starts (1, or 3 for an
    ensemble whose leader the ``kill_zk_leader`` / ``pause_zk_leader`` actions hit); the containers and
    external backends take only 1 for now (a :class:`ConfigError` otherwise).
    ``brokers``: how many brokers (ids 0..n-1). ``broker_zookeeper_proxies`` (local backend): each broker
    reaches ZooKeeper through loopback proxies of its own, so the ``cut_coordinator`` action can cut it
    from ZooKeeper (off: brokers connect directly, as before).
    ``zookeeper`` / ``bootstrap``: the external cluster's addresses. ``images``, ``kafka_image`` (the
    ``apache-kafka`` broker's image instead of ``<prefix>kafka:<version>``), ``labels``,
    ``members_in_containers``: the containers backend's options.
    ``broker`` (the scenario's ``cluster.broker``): ``"herdlab"`` (the backend's own brokers), ``"tansu"``
    (:class:`~harness.cluster.tansu.TansuCluster`, local backend only), ``"apache-kafka"`` (Apache Kafka
    ``kafka_version``, from the cache or ``kafka_home``, configured with ``broker_settings`` by Kafka names:
    :class:`~harness.cluster.apache_kafka.ApacheKafkaCluster`, on the host or, on the containers backend, in
    the ``zookeeper`` and Kafka images with its members on the host) or ``"external"`` (the
    Kafka-compatible cluster at ``bootstrap``, whatever the backend: :class:`~harness.cluster.external.ExternalCluster`).
    """

    backend: str = "local"
    workdir: Path | None = None
    history_dir: Path | None = None
    brokers: int = 1
    tick_time_ms: int = 500
    broker_args: tuple[str, ...] = ()
    zookeeper: str | None = None
    bootstrap: str | None = None
    images: Any = None
    kafka_image: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    members_in_containers: bool = False
    zookeeper_servers: int = 1
    broker_zookeeper_proxies: bool = False
    broker: str = "herdlab"
    kafka_version: str | None = None
    kafka_home: Path | None = None
    broker_settings: Mapping[str, str] = field(default_factory=dict)


def make_cluster(spec: ClusterSpec) -> Cluster:
    """An unstarted cluster for ``spec`` (see the module contract)."""
    if spec.zookeeper_servers != 1 and spec.backend == "external":
        raise ConfigError(
            f"zookeeper servers = {spec.zookeeper_servers} needs --backend local "
            f"(the {spec.backend} backend runs one ZooKeeper server for now)"
        )
    if spec.broker == "tansu":
        if spec.backend != "local":
            raise ConfigError(f"cluster.broker = 'tansu' needs --backend local (not {spec.backend})")
        # deferred: start-up: the Tansu cluster (kio) loads only when chosen
        from harness.cluster.tansu import TansuCluster

        return TansuCluster(workdir=spec.workdir, history_dir=spec.history_dir)
    if spec.broker == "apache-kafka":
        if spec.backend not in ("local", "containers"):
            raise ConfigError(
                f"cluster.broker = 'apache-kafka' needs --backend local or containers (not {spec.backend})"
            )
        if spec.backend == "containers" and spec.members_in_containers:
            raise ConfigError(
                "cluster.broker = 'apache-kafka' runs its members on the host: drop --members-in-containers"
            )
        # deferred: start-up: the Apache Kafka cluster (kio) loads only when chosen
        from harness.cluster.apache_kafka import ApacheKafkaCluster

        containers = spec.backend == "containers"
        return ApacheKafkaCluster(
            spec.kafka_version,
            None if containers else spec.kafka_home,
            spec.broker_settings,
            workdir=spec.workdir,
            history_dir=spec.history_dir,
            tick_time_ms=spec.tick_time_ms,
            images=(spec.images or image_names()) if containers else None,
            image=spec.kafka_image if containers else None,
            labels=spec.labels,
        )
    if spec.broker == "external":
        return ExternalCluster(None, spec.bootstrap or "")
    if spec.backend == "local":
        return LocalCluster(
            brokers=spec.brokers,
            tick_time_ms=spec.tick_time_ms,
            workdir=spec.workdir,
            broker_args=spec.broker_args,
            history_dir=spec.history_dir,
            zookeeper_servers=spec.zookeeper_servers,
            broker_zookeeper_proxies=spec.broker_zookeeper_proxies,
        )
    if spec.backend == "containers":
        return ContainersCluster(
            brokers=spec.brokers,
            tick_time_ms=spec.tick_time_ms,
            workdir=spec.workdir,
            broker_args=spec.broker_args,
            history_dir=spec.history_dir,
            images=spec.images,
            labels=spec.labels,
            members_in_containers=spec.members_in_containers,
            zookeeper_servers=spec.zookeeper_servers,
        )
    if spec.backend == "external":
        return ExternalCluster(spec.zookeeper, spec.bootstrap or "")
    raise ConfigError(f"unknown backend {spec.backend!r} (known: {', '.join(BACKENDS)})")
