"""The ``apache-kafka`` broker: Apache Kafka's own jars as a child process, behind a Kafka tap.

Contract
--------
* :class:`ApacheKafkaCluster` is a :class:`harness.cluster.base.Cluster` of one Apache Kafka broker
  (:mod:`.kafka_dist` finds its jars) on free loopback ports. A 3.x broker runs in ZooKeeper mode against
  a ZooKeeper server the cluster starts (:class:`~harness.cluster.zookeeper.ZooKeeperServer`, the same
  server as herdlab's local backend): it registers ``/brokers/ids`` and ``/brokers/topics`` there in the
  layout 0.8-era consumers read, so ``zookeeper_connect`` is that server. A 4.x broker runs in KRaft
  combined mode (``process.roles=broker,controller``, one voter), its storage formatted first with a new
  cluster id (``kafka.tools.StorageTool format``); ``zookeeper_connect`` is then ``""``.
* Clients reach the broker only through a :class:`~harness.cluster.kafka_tap.KafkaTap` (the broker
  advertises the tap's address), which writes the coordination requests and request counters Apache
  Kafka does not write (``tap.jsonl`` in ``history_dir``), as for tansu. ``bootstrap`` is the tap.
* The broker's configuration (:func:`broker_properties`): ``settings`` (Kafka property names, such as the
  scenario's ``group.initial.rebalance.delay.ms``) over what a one-broker cluster on loopback needs
  (internal topics with replication factor 1, no automatic topic creation); written to
  ``<workdir>/server.properties``, its effective values in :attr:`ApacheKafkaCluster.properties`.
* JVM (:mod:`harness.kernel.jvm`'s ``kafka`` kind, each option with its reason; ``HERDLAB_JVM_KAFKA_OPTS``
  replaces them): Kafka's own collector choice (G1, 20 ms pause goal, as ``kafka-run-class.sh``), a 768 MB
  heap and the collector's threads capped, so that the broker's GC does not take cores from the members.
  The broker logs to ``<workdir>/kafka.log`` (its own log4j output).
* ``start()`` returns once a kafka-python client bootstraps through the tap; ``stop()`` (idempotent) closes the
  tap, then stops the broker (SIGTERM to its process group, SIGKILL after a grace period), then ZooKeeper.
  ``stop_broker`` / ``start_broker`` stop and start the broker process on its data (a restart keeps
  topics, groups and offsets); ``member_launcher`` None (members are local processes).
* With ``images`` (the containers backend) the same broker, configuration and tap, but ZooKeeper runs in
  the ``zookeeper`` image and the broker in ``<prefix>kafka:<version>`` (:mod:`harness.images.build`
  puts the fetched jars on the runtime image at :data:`IMAGE_KAFKA_HOME`), host network, the work
  directory bind-mounted at its own path; the tap stays on the host. A missing image is a one-line
  :class:`EnvironmentProblem` saying how to build it.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.cluster.container_services import ZooKeeperContainer, wait_ready
from harness.cluster.engine import LABEL_UNIT, Box, uid_gid
from harness.cluster.java import check_java
from harness.cluster.kafka_dist import KafkaHome, kafka_home, resolve_version
from harness.cluster.kafka_tap import KafkaTap
from harness.cluster.probe import check_bootstrap
from harness.cluster.service import ProcessService
from harness.cluster.zookeeper import ZooKeeperServer
from harness.faults.nemesis import FaultControls
from harness.history.writer import HistoryWriter
from harness.images import ImageNames, docker_client, image_labels
from harness.kernel import jvm
from harness.kernel.errors import EnvironmentProblem, HerdlabError, Unreachable
from harness.kernel.events import Role
from harness.kernel.history import History, NullHistory
from harness.procs import free_port

__all__ = ["ApacheKafkaCluster", "broker_properties"]

log = logging.getLogger("harness.cluster")

HOST = "127.0.0.1"
#: Where the Kafka image (``herdlab images build``) holds the distribution: ``libs/`` with every jar.
IMAGE_KAFKA_HOME = "/opt/kafka"
#: what every broker here runs with, under the scenario's settings
BASE_PROPERTIES = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "log.flush.interval.messages": "9223372036854775807",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
}


def broker_properties(
    home: KafkaHome,
    data_dir: Path,
    ports: tuple[int, int, int],
    advertised_port: int,
    zookeeper: str | None,
    settings: Mapping[str, str],
) -> dict[str, str]:
    """The broker's ``server.properties`` (see the module contract). ``ports``: the clients' listener (which
    advertises the tap at ``advertised_port``), the broker's own listener (``INTERNAL``: its controller and
    inter-broker traffic, not through the tap, so the tap counts clients' requests only) and the KRaft
    controller's. ZooKeeper mode with ``zookeeper``, else KRaft combined mode."""
    client, internal, controller = ports
    props = dict(BASE_PROPERTIES)
    props["log.dirs"] = str(data_dir)
    listeners = [f"PLAINTEXT://{HOST}:{client}", f"INTERNAL://{HOST}:{internal}"]
    props["advertised.listeners"] = f"PLAINTEXT://{HOST}:{advertised_port},INTERNAL://{HOST}:{internal}"
    props["inter.broker.listener.name"] = "INTERNAL"
    protocols = "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"
    if home.zookeeper_mode:
        assert zookeeper, "a ZooKeeper-mode broker needs zookeeper.connect"
        props.update(
            {"broker.id": "0", "zookeeper.connect": zookeeper, "zookeeper.session.timeout.ms": "18000"}
        )
    else:
        listeners.append(f"CONTROLLER://{HOST}:{controller}")
        protocols += ",CONTROLLER:PLAINTEXT"
        props.update(
            {
                "process.roles": "broker,controller",
                "node.id": "1",
                "controller.quorum.voters": f"1@{HOST}:{controller}",
                "controller.listener.names": "CONTROLLER",
            }
        )
    props["listeners"] = ",".join(listeners)
    props["listener.security.protocol.map"] = protocols
    props.update({k: str(v) for k, v in settings.items()})
    return props


def _log_option(home: KafkaHome, workdir: Path) -> str:
    """The broker's log configuration (written, and the JVM option naming it): its own log4j output to
    stdout (the child's log file), INFO."""
    if home.zookeeper_mode:
        cfg = workdir / "log4j.properties"
        cfg.write_text(
            "log4j.rootLogger=INFO, stdout\n"
            "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.org.apache.zookeeper=WARN\n"
            "log4j.logger.kafka.request.logger=WARN\n"
        )
        return f"-Dlog4j.configuration=file:{cfg}"
    cfg = workdir / "log4j2.properties"
    cfg.write_text(
        "rootLogger.level=INFO\n"
        "rootLogger.appenderRef.stdout.ref=STDOUT\n"
        "appender.stdout.type=Console\n"
        "appender.stdout.name=STDOUT\n"
        "appender.stdout.layout.type=PatternLayout\n"
        "appender.stdout.layout.pattern=[%d] %p %m (%c)%n\n"
        "logger.request.name=kafka.request.logger\n"
        "logger.request.level=WARN\n"
    )
    return f"-Dlog4j2.configurationFile={cfg}"


def cluster_id() -> str:
    """A new KRaft cluster id: 16 random bytes, URL-safe base64 without padding, never starting with ``-``
    (as Kafka's ``Uuid.randomUuid``: the storage tool's argument parser would read it as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def java_argv(java: str, home: KafkaHome, workdir: Path) -> list[str]:
    """The JVM command line of the broker and its tools up to the main class: ``java`` (a path on the
    host, or ``java`` in the image), :mod:`harness.kernel.jvm`'s ``kafka`` options (the log configuration's among them) and
    ``home``'s jars."""
    return [java, *jvm.options("kafka", log_config=_log_option(home, workdir)), "-cp", home.classpath]


def configure(
    home: KafkaHome,
    workdir: Path,
    properties: Mapping[str, str],
    java: list[str],
    run: Callable[[list[str]], int],
    log_path: Path,
) -> Path:
    """Write ``<workdir>/server.properties``; for KRaft, format the storage with ``run`` (the command's
    exit status) unless it is formatted already (a restart keeps it). Its path."""
    cfg = workdir / "server.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in sorted(properties.items())))
    if not home.zookeeper_mode and not (Path(properties["log.dirs"]) / "meta.properties").exists():
        status = run([*java, "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(cfg)])
        if status != 0:
            raise Unreachable(
                f"Apache Kafka {home.version}: formatting its storage failed (status {status}; see {log_path})"
            )
    return cfg


def _tap_ready(tap: KafkaTap) -> bool:
    try:
        check_bootstrap(tap.bootstrap, time.monotonic() + 3.0)
    except Unreachable:
        return False
    return True


class _KafkaProcess(ProcessService):
    """The Apache Kafka broker child process; ready when a Kafka client bootstraps through ``tap``."""

    def __init__(self, home: KafkaHome, workdir: Path, properties: dict[str, str], tap: KafkaTap) -> None:
        self.home = home
        self.workdir = workdir
        self.properties = properties
        self.tap = tap
        self.name = f"apache-kafka-{home.version}"
        self.process = None
        self.ready_seconds: float | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "kafka.log"

    def _java(self) -> list[str]:
        return java_argv(check_java(), self.home, self.workdir)

    def _format(self, argv: list[str]) -> int:
        with self.log_path.open("ab") as log:
            return subprocess.run(
                argv, stdout=log, stderr=subprocess.STDOUT, timeout=120, check=False
            ).returncode

    def configure(self) -> Path:
        """Write ``server.properties``; for KRaft, format the storage (once: a restart keeps it)."""
        return configure(self.home, self.workdir, self.properties, self._java(), self._format, self.log_path)

    def start(self, timeout: float = 90.0) -> _KafkaProcess:
        cfg = self.configure()
        port = self.properties["listeners"].split(",")[0].rsplit(":", 1)[1]
        self.ready_seconds = self._spawn_ready(
            [*self._java(), "kafka.Kafka", str(cfg)],
            f"Apache Kafka {self.home.version} broker at {HOST}:{port}",
            timeout,
            process_name=f"{self.name}:{port}",
        )
        return self

    def ready(self) -> bool:
        return _tap_ready(self.tap)

    def stop(self) -> None:
        self.stop_process(grace=15.0)


class _KafkaBox:
    """The Apache Kafka broker in a container of ``image`` (``herdlab images build``: Java 17 and the jars
    at :data:`IMAGE_KAFKA_HOME`), host network, ``workdir`` bind-mounted at its own path (configuration,
    data, log configuration), run as the invoking user. Ready when a client bootstraps through ``tap``;
    :meth:`stop` stops the container (its data stays for :meth:`start`), :meth:`remove` removes it with
    its log saved to ``<workdir>/kafka.log``."""

    def __init__(
        self,
        image: str,
        home: KafkaHome,
        workdir: Path,
        properties: dict[str, str],
        tap: KafkaTap,
        labels: Mapping[str, str],
        name: str,
    ) -> None:
        self.image = image
        self.home = home
        self.workdir = workdir
        self.properties = properties
        self.tap = tap
        self.labels = dict(labels)
        self.name = name
        self.box: Any = None
        self.process = None
        self.ready_seconds: float | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / "kafka.log"

    def _box(self, argv: list[str], name: str, log_path: Path) -> Any:

        return Box(
            self.image,
            role="kafka",
            name=name,
            command=argv,
            labels=self.labels,
            mounts=[self.workdir],
            user=uid_gid(),
            log_path=log_path,
        )

    def _format(self, argv: list[str]) -> int:
        box = self._box(argv, f"{self.name}-format", self.workdir / "kafka-format.log")
        try:
            box.start()
            status = box.wait(timeout=120)
            return -1 if status is None else status
        finally:
            box.remove()

    def start(self, timeout: float = 90.0) -> _KafkaBox:

        if self.box is not None:  # a restart: the same container on its data
            self.box.restart()
        else:
            java = java_argv("java", self.home, self.workdir)
            cfg = configure(self.home, self.workdir, self.properties, java, self._format, self.log_path)
            self.box = self._box([*java, "kafka.Kafka", str(cfg)], self.name, self.log_path)
            try:
                self.box.start()
            except BaseException:
                self.box.remove()
                self.box = None
                raise
        self.ready_seconds = wait_ready(
            self.box, f"Apache Kafka {self.home.version} broker", self.ready, timeout
        )
        return self

    def ready(self) -> bool:
        return _tap_ready(self.tap)

    def alive(self) -> bool:
        return self.box is not None and bool(self.box.alive())

    def stop(self) -> None:
        if self.box is not None:
            self.box.stop(grace=15.0)

    def remove(self) -> None:
        box, self.box = self.box, None
        if box is not None:
            box.remove()


class ApacheKafkaCluster:
    """One Apache Kafka broker (and, for 3.x, its ZooKeeper) behind a Kafka tap (see the module contract).

    ``version``: a line (``3.9``, ``4``) or an exact version; ``home``: a distribution directory instead of
    the cache (``--kafka-home``). ``settings``: broker properties by Kafka name. ``workdir``: configuration,
    data and logs (a temporary directory when None, removed at stop). ``history_dir``: where the tap writes
    ``tap.jsonl``. ``tick_time_ms``: the ZooKeeper server's tick (3.x).
    """

    def __init__(
        self,
        version: str | None = None,
        home: Path | None = None,
        settings: Mapping[str, str] | None = None,
        workdir: str | os.PathLike[str] | None = None,
        history_dir: str | os.PathLike[str] | None = None,
        tap_interval_s: float = 1.0,
        tick_time_ms: int = 500,
        images: ImageNames | None = None,
        image: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.images = images
        self.image = image
        self.labels = dict(labels or {})
        if images is not None:  # the jars are in the image (herdlab images build)
            self.home = KafkaHome(Path(IMAGE_KAFKA_HOME), resolve_version(version))
        else:
            self.home = kafka_home(version, home)
        self.settings = dict(settings or {})
        self._temporary = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="herdlab-kafka-"))
        self.history_dir = Path(history_dir) if history_dir else None
        self.tap_interval_s = tap_interval_s
        self.tick_time_ms = tick_time_ms
        self.zookeeper: ZooKeeperServer | ZooKeeperContainer | None = None
        self.tap: KafkaTap | None = None
        self.broker: _KafkaProcess | _KafkaBox | None = None
        self.properties: dict[str, str] = {}
        self._history: History | None = None

    @property
    def version(self) -> str:
        return self.home.version

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string if self.zookeeper is not None else ""

    @property
    def bootstrap(self) -> str:
        if self.tap is None:
            raise HerdlabError("the Apache Kafka cluster is not started")
        return self.tap.bootstrap

    def start(self, timeout: float = 90.0) -> ApacheKafkaCluster:
        """ZooKeeper (3.x), the tap, then the broker behind it; returns once a client bootstraps."""
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            if self.images is not None:
                self._check_image()
            if self.home.zookeeper_mode and self.images is not None:
                self.zookeeper = ZooKeeperContainer(
                    self.images.zookeeper,
                    tick_time_ms=self.tick_time_ms,
                    workdir=self.workdir / "zookeeper",
                    labels=self.labels,
                    heap_mb=256,
                    name=f"{self._name}-zookeeper",
                )
                self.zookeeper.start()
            elif self.home.zookeeper_mode:
                self.zookeeper = ZooKeeperServer(
                    tick_time_ms=self.tick_time_ms, workdir=self.workdir / "zookeeper", heap_mb=256
                ).start()
            self._history = (
                HistoryWriter(self.history_dir / "tap.jsonl", source="tap", role=Role.BROKER.value)
                if self.history_dir
                else NullHistory()
            )
            port = free_port(HOST)
            self.tap = KafkaTap((HOST, port), self._history, interval_s=self.tap_interval_s).start()
            self.properties = broker_properties(
                self.home,
                self.workdir / "data",
                (port, free_port(HOST), free_port(HOST)),
                self.tap.port,
                self.zookeeper_connect or None,
                self.settings,
            )
            if self.images is not None:
                self.broker = _KafkaBox(
                    self.image_ref,
                    self.home,
                    self.workdir,
                    self.properties,
                    self.tap,
                    self.labels,
                    f"{self._name}-kafka",
                )
            else:
                self.broker = _KafkaProcess(self.home, self.workdir, self.properties, self.tap)
            self.broker.start(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def _name(self) -> str:

        return self.labels.get(LABEL_UNIT, "cluster")

    def _check_image(self) -> None:
        """The Kafka image of this version is in the engine: else a one-line error saying how to build it."""

        ref = self.image_ref
        client = docker_client()
        try:
            if image_labels(client, ref) is not None:
                return
            if self.image is None:
                raise EnvironmentProblem(
                    f"image {ref} not found in the Docker engine: build it with "
                    f"`herdlab images build --offline --kafka {self.version}`"
                )
            log.warning("pulling %s (needs an image registry)", ref)
            try:
                client.images.pull(ref)
            except Exception as e:  # noqa: BLE001 - the engine's reason, on one line
                raise EnvironmentProblem(
                    f"image {ref} is not in the Docker engine and could not be pulled "
                    f"({str(e).splitlines()[0][:200]}): --kafka-image needs an image registry"
                ) from None
        finally:
            client.close()

    @property
    def image_ref(self) -> str:
        """The broker's image on the containers backend: ``--kafka-image``, else ``<prefix>kafka:<version>``."""
        assert self.images is not None
        return self.image or self.images.kafka(self.version)

    def stop(self) -> None:
        """Close the tap, stop the broker (a container: removed, its log saved), then ZooKeeper. Idempotent."""
        broker, self.broker = self.broker, None
        zk, self.zookeeper = self.zookeeper, None
        try:
            if self.tap is not None:
                self.tap.close()
        finally:
            try:
                if broker is not None:
                    broker.stop()
                    if isinstance(broker, _KafkaBox):
                        broker.remove()
            finally:
                if zk is not None:
                    zk.stop()
                if self._history is not None:
                    self._history.close()
                    self._history = None
                if self._temporary:
                    shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        """The broker's process id while it runs (for tests that check it is gone)."""
        if self.broker is None or self.broker.process is None:
            return None
        return self.broker.process.pid

    @property
    def ready_seconds(self) -> float | None:
        """How long the broker took from its process start to its first bootstrap."""
        return self.broker.ready_seconds if self.broker is not None else None

    def fault_controls(self) -> FaultControls:
        """A restart of its ZooKeeper server when that runs on the host; no broker or ensemble faults."""
        zk = self.zookeeper
        return FaultControls(zookeeper_restart=zk if isinstance(zk, ZooKeeperServer) else None)

    def zk_mntr(self) -> dict[str, Any] | None:
        """ZooKeeper's ``mntr`` counters now (None for KRaft, or when it does not answer)."""
        if self.zookeeper is None:
            return None
        try:
            return self.zookeeper.mntr()
        except (OSError, RuntimeError):
            return None

    def member_launcher(self, mounts: object) -> None:
        """Members run as local processes (see :class:`harness.cluster.base.Cluster`)."""
        return None

    def stop_broker(self, index: int = 0) -> None:
        """Stop the broker process (its data stays)."""
        if index != 0 or self.broker is None:
            raise HerdlabError(f"the Apache Kafka cluster has broker 0 only (not {index})")
        self.broker.stop()

    def start_broker(self, index: int = 0) -> None:
        """Start the broker again on its data and wait until it serves."""
        if index != 0 or self.broker is None:
            raise HerdlabError(f"the Apache Kafka cluster has broker 0 only (not {index})")
        self.broker.start()

    def __enter__(self) -> ApacheKafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
