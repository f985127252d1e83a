"""The ``containers`` cluster backend: ZooKeeper, the broker (and optionally the members) in containers.

Contract
--------
* ``ContainersCluster(...).start()`` has the shape of :class:`~harness.cluster.local.LocalCluster`:
  it starts a ZooKeeper container (image ``<prefix>zookeeper``), then ``brokers`` broker containers
  (image ``<prefix>herdlab``, ``python -m harness.cluster.broker_main``) and returns when all are ready
  (Apache Kafka on this backend is :class:`~harness.cluster.apache_kafka.ApacheKafkaCluster` with images); ``stop()`` removes them (idempotent),
  members first, then brokers, then ZooKeeper (a :class:`~harness.cluster.service.ServiceStack`).
  ``zookeeper_connect``, ``bootstrap``, ``zk_mntr()``, ``stop_broker(i)``, ``start_broker(i)`` and
  ``describe()`` mean what they mean for the local backend.
* ``zookeeper_servers=3`` (``zookeeper.servers = 3``): ZooKeeper is an ensemble of three containers
  (:class:`~harness.cluster.container_ensemble.ZooKeeperEnsembleContainers`), exposed as
  ``zookeeper_ensemble`` for the nemesis (``kill_zk_leader`` / ``pause_zk_leader``) exactly as the local
  backend exposes its own (None with one server); ``zookeeper_connect`` lists every server, so the
  brokers and the members get all of them; ``zk_mntr()`` is the ensemble's summed ``mntr`` and
  ``describe()`` has one line per server with its mode (leader, follower, paused, down).
* Logs: ``docker logs`` of each container is saved when it is removed (ZooKeeper to
  ``<workdir>/zookeeper/zookeeper.log``, or ``<workdir>/zookeeper/zk-<i>/zookeeper.log`` per server of
  an ensemble, broker ``i`` to ``<workdir>/broker-<i>/broker.log``, a member
  to the log path the runner gave), so the unit directory looks as it does with the local backend.
* :func:`preflight` fails early, with one line, when the engine is unreachable or an image is missing.

The backend is three modules: :mod:`harness.cluster.engine` (docker client use, :class:`Box`, labels,
the session reaper), :mod:`harness.cluster.container_services` (one Service per kind of container)
and this one (the cluster, its options, preflight). Each name is imported from the module that defines
it (``SESSION`` and ``remove_leftovers`` from the engine).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.container_ensemble import ZooKeeperEnsembleContainers
from harness.cluster.container_services import (
    IMAGE_PYTHON,
    BrokerContainer,
    MemberContainer,
    ZooKeeperContainer,
)
from harness.cluster.engine import (
    LABEL_UNIT,
    Box,
    uid_gid,
)
from harness.cluster.local import ComponentHealth
from harness.cluster.service import ServiceStack
from harness.faults.nemesis import FaultControls
from harness.images import LABEL_SOURCE, ImageNames, docker_client, image_labels, image_names, source_digest
from harness.kernel.errors import EnvironmentProblem

__all__ = ["ContainersCluster", "ContainersOptions", "Launcher", "preflight"]

log = logging.getLogger("harness.containers")


@dataclass
class ContainersOptions:
    """Options of the containers backend (``herdlab run --backend containers ...``).

    ``images``: the ZooKeeper and herdlab images (default: :func:`harness.images.image_names`).
    ``members_in_containers``: run each member in the herdlab image too. ``kafka_image``: the image of
    the ``apache-kafka`` broker instead of ``<prefix>kafka:<version>`` (one holding Apache Kafka's
    distribution at ``/opt/kafka`` with ``java`` on the PATH, as Apache's own ``apache/kafka`` images do;
    pulled when the engine lacks it, which needs an image registry).
    """

    images: ImageNames = field(default_factory=image_names)
    members_in_containers: bool = False
    kafka_image: str | None = None


def _require_image(client: Any, ref: str) -> dict[str, str]:
    """The labels of our image ``ref``; a one-line error saying how to build it when it is missing
    (our images are never pulled: they exist in no registry)."""
    labels = image_labels(client, ref)
    if labels is None:
        raise EnvironmentProblem(
            f"image {ref} not found in the Docker engine: build it with "
            "`herdlab images build --offline` (no registry needed) or `herdlab images build`"
        )
    return labels


def preflight(options: ContainersOptions) -> None:
    """Fail early, with one line, when the engine is unreachable or an image is missing (before a
    run creates its directory); the Apache Kafka image may be pulled later, when its unit starts."""
    client = docker_client()
    try:
        for ref in (options.images.zookeeper, options.images.herdlab):
            _require_image(client, ref)
    finally:
        client.close()


Launcher = Callable[[list[str], str, Path], MemberContainer]
_warned: set[str] = set()


def _stop_service(service: Any) -> None:
    """How the cluster stops one of its services: a member with a short grace, errors ignored (it
    may be gone already); the others as they stop themselves."""
    if isinstance(service, MemberContainer):
        with contextlib.suppress(Exception):
            service.stop(grace=1.0)
    else:
        service.stop()


class ContainersCluster:
    """ZooKeeper and brokers in containers on the host network (see the module contract).

    ``labels`` are added to every container (the runner sets ``herdlab.run`` and ``herdlab.unit``).
    ``zookeeper_servers``: 1 (one ZooKeeper container, the default) or more (an ensemble).
    """

    def __init__(
        self,
        brokers: int = 1,
        tick_time_ms: int = 500,
        workdir: str | os.PathLike[str] | None = None,
        broker_args: tuple[str, ...] = (),
        history_dir: str | os.PathLike[str] | None = None,
        images: ImageNames | None = None,
        labels: Mapping[str, str] | None = None,
        members_in_containers: bool = False,
        zookeeper_servers: int = 1,
    ) -> None:
        if zookeeper_servers < 1:
            raise ValueError("zookeeper_servers must be at least 1")
        self.members_in_containers = members_in_containers
        self.zookeeper_servers = zookeeper_servers
        self._given_workdir = Path(workdir).resolve() if workdir else None
        self.workdir: Path | None = None
        self.history_dir = Path(history_dir).resolve() if history_dir else None
        self.n_brokers = brokers
        self.tick_time_ms = tick_time_ms
        self.broker_args = tuple(broker_args)
        self.images = images or image_names()
        self.labels = dict(labels or {})
        self.zookeeper: ZooKeeperContainer | ZooKeeperEnsembleContainers | None = None
        self.brokers: list[BrokerContainer] = []
        self.members: list[MemberContainer] = []
        self._services = ServiceStack()
        self._client: Any = None

    # -- images ---------------------------------------------------------------------------------
    def _check_images(self, need_herdlab: bool) -> None:
        client = self._client
        wanted = [self.images.zookeeper] + ([self.images.herdlab] if need_herdlab else [])
        for ref in wanted:
            labels = _require_image(client, ref)
            stale = labels.get(LABEL_SOURCE) not in (None, source_digest())
            if ref == self.images.herdlab and stale and ref not in _warned:
                _warned.add(ref)
                log.warning(
                    "image %s was built from other herdlab sources than this checkout's; "
                    "rebuild it with `herdlab images build`",
                    ref,
                )

    # -- life cycle -----------------------------------------------------------------------------
    def start(self, members_in_containers: bool | None = None) -> ContainersCluster:
        """Start ZooKeeper, then the brokers; on any failure remove what was started and re-raise.

        ``members_in_containers`` (default: the constructor's) also checks the herdlab image for members.
        """
        if members_in_containers is not None:
            self.members_in_containers = members_in_containers
        members_in_containers = self.members_in_containers
        self._client = docker_client()
        try:
            ours = self.n_brokers > 0
            self._check_images(need_herdlab=ours or members_in_containers)
            if self._given_workdir is not None:
                self.workdir = self._given_workdir
                self.workdir.mkdir(parents=True, exist_ok=True)
            else:
                self.workdir = Path(tempfile.mkdtemp(prefix="herdlab-containers-"))
            unit = self.labels.get(LABEL_UNIT, "cluster")
            self.zookeeper = self._services.push(self._make_zookeeper(unit))
            self.zookeeper.start()
            for i in range(self.n_brokers):
                b = BrokerContainer(
                    self.images.herdlab,
                    broker_id=i,
                    zookeeper=self.zookeeper.connect_string,
                    workdir=self.workdir / f"broker-{i}",
                    history_path=self.history_dir / f"broker-{i}.jsonl" if self.history_dir else None,
                    extra_args=self.broker_args,
                    labels=self.labels,
                    name=f"{unit}-broker-{i}",
                )
                self.brokers.append(self._services.push(b))
                b.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _make_zookeeper(self, unit: str) -> ZooKeeperContainer | ZooKeeperEnsembleContainers:
        """One ZooKeeper container, or an ensemble of :attr:`zookeeper_servers` (unstarted)."""
        if self.zookeeper_servers == 1:
            return ZooKeeperContainer(
                self.images.zookeeper,
                tick_time_ms=self.tick_time_ms,
                workdir=self._workdir() / "zookeeper",
                labels=self.labels,
                name=f"{unit}-zookeeper",
            )
        return ZooKeeperEnsembleContainers(
            self.images.zookeeper,
            n=self.zookeeper_servers,
            tick_time_ms=self.tick_time_ms,
            workdir=self._workdir() / "zookeeper",
            labels=self.labels,
            name=f"{unit}-zookeeper",
        )

    def _workdir(self) -> Path:
        if self.workdir is None:
            raise RuntimeError("the containers cluster is not started")
        return self.workdir

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string if self.zookeeper else ""

    def fault_controls(self) -> FaultControls:
        """With a ZooKeeper ensemble (after start): its leader faults and a server's restart; no broker
        faults."""
        ensemble = self.zookeeper_ensemble
        return FaultControls(ensemble=ensemble, zookeeper_restart=ensemble)

    @property
    def zookeeper_ensemble(self) -> ZooKeeperEnsembleContainers | None:
        """The ensemble when the cluster runs several ZooKeeper servers (the ZooKeeper-leader faults
        need one); None with a single server or before start."""
        return self.zookeeper if isinstance(self.zookeeper, ZooKeeperEnsembleContainers) else None

    @property
    def bootstrap(self) -> str:
        """Comma-separated ``host:port`` of the brokers ('' when there are none)."""
        return ",".join(b.bootstrap for b in self.brokers if b.port)

    def zk_mntr(self) -> dict[str, Any] | None:
        """ZooKeeper's ``mntr`` counters now (None if it does not answer)."""
        try:
            return self.zookeeper.mntr() if self.zookeeper else None
        except (OSError, RuntimeError, AssertionError):
            return None

    def stop_broker(self, index: int = 0) -> None:
        """``docker stop`` broker ``index`` (a clean shutdown); :meth:`start_broker` brings it back."""
        self.brokers[index].halt()

    def start_broker(self, index: int = 0) -> None:
        """Start broker ``index``'s container again: same port, same data."""
        self.brokers[index].restart()

    def start_member(
        self, argv: Sequence[str], name: str, log_path: Path, mounts: Sequence[Path] = ()
    ) -> MemberContainer:
        """Run ``argv`` (``[python, -m, harness, member, ...]``; ``argv[0]``, the host's Python, is
        replaced by the image's) in a herdlab container with ``mounts`` bind-mounted (the history)."""
        unit = self.labels.get(LABEL_UNIT, "cluster")
        box = Box(
            self.images.herdlab,
            role="member",
            name=f"{unit}-{name}",
            command=[IMAGE_PYTHON, *list(argv)[1:]],
            env={k: v for k, v in os.environ.items() if k == "HERDLAB_LOG_LEVEL"},
            labels={**self.labels, "herdlab.member": name},
            mounts=[Path(m).resolve() for m in mounts],
            user=uid_gid(),
            log_path=log_path,
        )
        m = MemberContainer(box, name)
        self.members.append(self._services.push(m))
        return m.start()

    def member_launcher(self, mounts: Sequence[Path]) -> Launcher | None:
        """A launcher for :func:`harness.run.launch.start_member`: members in containers when the
        cluster was made with ``members_in_containers``, else None (local processes)."""
        if not self.members_in_containers:
            return None

        def launch(argv: list[str], name: str, log_path: Path) -> MemberContainer:
            return self.start_member(argv, name, log_path, mounts)

        return launch

    def stop(self) -> None:
        """Remove members, brokers and ZooKeeper (logs saved); idempotent."""
        try:
            self._services.stop_all(_stop_service)
        finally:
            self.members.clear()
            self.brokers.clear()
            self.zookeeper = None
        if self.workdir is not None and self._given_workdir is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir = None
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    def describe(self) -> list[ComponentHealth]:
        """Addresses and health of every component, checked now."""
        out: list[ComponentHealth] = []
        if isinstance(self.zookeeper, ZooKeeperEnsembleContainers):
            out += self._ensemble_health(self.zookeeper)
        elif self.zookeeper is not None and self.zookeeper.port is not None:
            zk = self.zookeeper
            box = zk.box
            out.append(
                ComponentHealth(
                    "zookeeper",
                    zk.connect_string,
                    None,
                    zk.is_serving(),
                    f"container {box.name if box else '-'} ({self.images.zookeeper})",
                )
            )
        for i, b in enumerate(self.brokers):
            out.append(
                ComponentHealth(
                    f"broker-{i}",
                    b.bootstrap if b.port else "-",
                    None,
                    b.alive(),
                    f"container {b.box.name if b.box else '-'} ({b.box.image if b.box else '-'})",
                )
            )
        return out

    def _ensemble_health(self, zk: ZooKeeperEnsembleContainers) -> list[ComponentHealth]:
        """One line per server of the ensemble: address, container, whether it serves, its mode."""
        out = []
        for i, p in enumerate(zk.peers):
            status = p.status()
            if i in zk.paused or status == "paused":
                mode = "paused"
            elif status != "running":
                mode = f"down ({status})"
            else:
                mode = p.mode() or "not serving"
            healthy = status == "running" and i not in zk.paused and p.ready()
            container = p.box.name if p.box is not None else "-"
            out.append(
                ComponentHealth(
                    p.name,
                    p.address,
                    None,
                    healthy,
                    f"container {container} ({self.images.zookeeper}), {mode}",
                    {"mode": mode, "myid": i + 1},
                )
            )
        return out

    def __enter__(self) -> ContainersCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
