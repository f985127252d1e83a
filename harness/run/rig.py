# pyright: strict
"""The processes of one run unit: cluster, topic, proxies, producer and members.

Contract
--------
* :class:`Rig` is what the unit interpreter (:class:`harness.run.runner.UnitRunner`) starts and stops
  things through; :class:`UnitRig` is the real one. Unit tests pass a fake.
* :meth:`UnitRig.start` starts a fresh cluster (:func:`harness.cluster.base.make_cluster`) and creates
  the unit's topic; a legacy unit on a cluster without ZooKeeper is a :class:`ConfigError`, a topic
  that already exists a :class:`UnitFailed`. The scenario's ``[cluster]`` table gives the number of
  brokers and their replication flags; a timeline with ``cut_coordinator`` puts every broker's ZooKeeper
  connection behind proxies of its own. With several brokers the topic is created with replication
  factor min(3, brokers) when they replicate (1 otherwise), and ``start`` returns only once
  FindCoordinator names a coordinator of the unit's group (so the offsets topic exists before the members
  start and the first trigger is not distorted); :class:`UnitFailed` after
  :data:`COORDINATOR_WARMUP_S`.
* :meth:`UnitRig.start_member` starts (or restarts, under the same name) one member; a member some
  cut hits (``Plan.proxied``) connects through proxies of its own, made on its first start (one per
  ZooKeeper server, all cut together). Its
  ``kind`` (``legacy_zk`` | ``coordinator``) and ``props`` (0.8 properties of a legacy member, on top
  of the scenario's) are remembered per name: a restart that gives None keeps what the member had (a
  new member: the unit's implementation, no props). Members of both kinds join the unit's one group on
  its one topic on the one cluster.
* :meth:`UnitRig.prestart_member` starts a member a ``join`` will add, held
  (:mod:`harness.members.release`): its process starts up now and waits; the join's
  :meth:`UnitRig.start_member` releases it instead of starting a process, so the join's ``ready`` follows
  its ``invoke`` by milliseconds however loaded the machine is. Only a member of its own local process
  (not one in a container, not one of a gevent host, never one started before); False when it was not
  held, and the join then starts it as before. A held process that died before its join (killed by
  the machine, a crash in its start-up) is not released: the join reaps it, logs a warning and starts
  the member afresh, as it would have without the hold (a process that dies between that check and the
  release is released dead, as any member that dies at its join).
* With ``[group.legacy_zk] members_per_host`` > 0, a legacy unit runs its untargeted initial members
  (no step of the plan names them, no proxy) on gevent, that many per process ``host<i>``
  (:func:`harness.run.launch.host_groups`, :func:`~harness.run.launch.start_host`; coordination-only:
  no record fetcher); the host starts on :meth:`UnitRig.start_member` of its first member and every
  member's handle is the host's. Members some action targets stay alone in their process. The original
  0.8.2.2 consumer (``group.legacy_zk.client = "kafka-0.8.2.2"``) is never hosted: one JVM per member.
  ``[group.coordinator] members_per_host`` does the same for a coordinator unit whose client hosts
  (java: one JVM, one KafkaConsumer per thread; :func:`~harness.run.launch.start_coordinator_host`), and
  ``[group.consumer] members_per_host`` for a consumer unit.
* A ``consumer`` unit (KIP-848's consumer group protocol) runs coordinator-kind members on
  ``[group.consumer]``'s client (:func:`~harness.run.launch.coordinator_argv`); its broker (and a coordinator
  unit's that migrates to the consumer protocol, :attr:`~harness.scenario.model.Scenario.has_protocol_migration`)
  gets that table's ``group.consumer.*`` settings (herdlab's broker as options, Apache Kafka 4 in its configuration:
  :mod:`harness.scenario.brokers`).
* With ``cluster.zookeeper_tap``, :meth:`UnitRig.start` starts one
  :class:`~harness.cluster.zk_tap.ZooKeeperTap` in front of the unit's ZooKeeper (none on a cluster without
  ZooKeeper) once the cluster serves
  (its events go to ``zk-tap.jsonl`` in the unit's history directory: source ``zk-tap``, role zookeeper);
  every member's (and gevent host's) ZooKeeper address is then the tap's, and a member's cut proxies
  point at the tap. The brokers, the topic's creation and the nemesis's own ZooKeeper clients keep the
  cluster's address. The tap is closed with the members' processes and again (idempotently) with the
  cluster, so a unit that fails or is interrupted leaves it closed too.
* :meth:`UnitRig.stop_processes` stops members (cleanly, in parallel; with hosts, every legacy process is
  quiesced first, SIGUSR1, so that tearing hundreds of members down causes no herd), producer and proxies;
  :meth:`UnitRig.stop_cluster` then the cluster. Both are idempotent; every child goes through
  :mod:`harness.procs`.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.cluster.base import Cluster, ClusterSpec, make_cluster
from harness.cluster.containers import ContainersOptions
from harness.cluster.zk_tap import ZooKeeperTap
from harness.faults.actions import process_frozen
from harness.faults.kafka_probe import find_coordinator
from harness.faults.nemesis import ClusterControl, MemberProcess, ProxyControl
from harness.faults.proxy import ProxyHost, member_loopback_ip
from harness.history.writer import HistoryWriter
from harness.kernel.errors import ConfigError, HerdlabError
from harness.kernel.events import Role
from harness.procs import ChildProcess
from harness.run.launch import (
    Endpoints,
    MemberHandle,
    host_groups,
    start_coordinator_host,
    start_host,
    start_member,
    start_producer,
)
from harness.run.plan import Plan
from harness.scenario.brokers import herdlab_consumer_args, kafka_broker_settings
from harness.scenario.model import Scenario
from harness.scenario.properties import HOSTING_CLIENTS

log = logging.getLogger("harness.run")

#: How long a unit with several brokers waits for FindCoordinator to name the group's coordinator.
COORDINATOR_WARMUP_S = 60.0


class UnitFailed(HerdlabError):
    """A unit could not do what the scenario asks (e.g. the group never became stable)."""


class RigCluster(ClusterControl, Protocol):
    """What the interpreter itself asks of the cluster beyond the nemesis: ``mntr`` samples."""

    def zk_mntr(self) -> dict[str, Any] | None: ...


class Rig(Protocol):
    """What the unit interpreter starts and stops things through (see the module contract)."""

    @property
    def cluster(self) -> RigCluster | None: ...
    @property
    def proxies(self) -> ProxyControl | None: ...
    @property
    def members(self) -> Mapping[str, MemberProcess]: ...

    def start(self) -> None: ...

    def start_producer(self) -> None: ...

    def stop_producer(self) -> None: ...

    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None: ...

    def prestart_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> bool: ...

    def frozen(self, member: MemberProcess) -> bool: ...

    def stop_processes(self) -> None: ...

    def stop_cluster(self) -> None: ...

    def broker_config(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RigSpec:
    """Where and how one unit runs: backend options, implementation, names, directories."""

    scenario: Scenario  # the unit's case (its scenario after the matrix substitution)
    impl: str
    plan: Plan
    topic: str
    group: str
    partitions: int
    events_dir: Path
    logs_dir: Path
    cluster_dir: Path
    backend: str
    zookeeper: str | None
    bootstrap: str | None
    zk_tick_ms: int
    containers: ContainersOptions
    labels: Mapping[str, str]
    #: an unpacked Apache Kafka distribution for cluster.broker = "apache-kafka" (None: the fetched one)
    kafka_home: Path | None = None


def _proxied_zookeeper(proxies: ProxyHost, connect: str, group: str) -> str:
    """``connect`` (``host:port,...[/chroot]``) with every server behind a proxy of the group ``group``
    (named ``<group>-<k>``), so one cut of ``group`` cuts the member from every server."""
    hosts, slash, chroot = connect.partition("/")
    addresses: list[str] = []
    for k, server in enumerate(hosts.split(",")):
        host, _, port = server.strip().rpartition(":")
        addresses.append(proxies.add((host, int(port)), name=f"{group}-{k}", group=group).address)
    return ",".join(addresses) + slash + chroot


class UnitRig:
    """The real processes of one unit (see the module contract)."""

    def __init__(self, spec: RigSpec) -> None:
        self.spec = spec
        self.cluster: Cluster | None = None
        self.proxies: ProxyHost | None = None
        #: the unit's ZooKeeper tap (cluster.zookeeper_tap) and the history it writes
        self.zk_tap: ZooKeeperTap | None = None
        self._zk_tap_history: HistoryWriter | None = None
        self.members: dict[str, MemberHandle] = {}
        self.endpoints: dict[str, Endpoints] = {}
        self.producer: ChildProcess | None = None
        self.kinds: dict[str, str] = {}
        self.props: dict[str, dict[str, str]] = {}
        # members started ahead of their join and waiting for its release file (prestart_member)
        self.held: dict[str, tuple[MemberHandle, Path]] = {}
        # the untargeted initial legacy members sharing gevent hosts (see the module contract)
        self.host_of: dict[str, tuple[str, tuple[str, ...]]] = {}
        g = spec.scenario.group
        per_host = {
            # the original 0.8.2.2 consumer runs one member per JVM (gevent hosts are herdlab's members')
            "legacy_zk": g.legacy_zk.members_per_host if g.legacy_zk.client == "python" else 0,
            # a client that cannot host runs every member in its own process (a matrix over clients)
            "coordinator": g.coordinator.members_per_host if g.coordinator.client in HOSTING_CLIENTS else 0,
            "consumer": g.consumer.members_per_host if g.consumer.client in HOSTING_CLIENTS else 0,
        }.get(spec.impl, 0)
        if per_host:
            plan = spec.plan
            alone = plan.isolated | set(plan.proxied) | {t for st in plan.steps for t in st.targets}
            groups = host_groups(plan.initial, alone, per_host)
            self.host_of = {n: (f"host{h}", g) for h, g in enumerate(groups) for n in g}

    def start(self) -> None:
        s = self.spec
        c = s.scenario.group.coordinator
        broker = s.scenario.cluster.broker
        # herdlab's broker options; tansu and an external broker take none of ours
        broker_args = (
            (
                "--group-initial-rebalance-delay-ms",
                str(c.initial_rebalance_delay_ms),
                "--group-min-session-timeout-ms",
                str(c.min_session_timeout_ms),
                "--no-auto-create-topics",
                *s.scenario.cluster.broker_args(),
                *(
                    herdlab_consumer_args(s.scenario)
                    if s.impl == "consumer" or s.scenario.has_protocol_migration
                    else ()
                ),
            )
            if broker == "herdlab"
            else ()
        )
        cut_brokers = any(a.action in ("cut_coordinator", "cut_broker_zk") for a in s.scenario.timeline)
        self.cluster = make_cluster(
            ClusterSpec(
                backend=s.backend,
                workdir=s.cluster_dir,
                history_dir=s.events_dir,
                tick_time_ms=s.zk_tick_ms,
                broker_args=broker_args,
                zookeeper=s.zookeeper,
                bootstrap=s.bootstrap,
                images=s.containers.images,
                kafka_image=s.containers.kafka_image,
                labels=s.labels,
                members_in_containers=s.containers.members_in_containers,
                zookeeper_servers=s.scenario.zookeeper.servers,
                brokers=s.scenario.cluster.brokers,
                broker_zookeeper_proxies=cut_brokers,
                broker=broker,
                kafka_version=s.scenario.cluster.kafka_version,
                kafka_home=s.kafka_home,
                broker_settings=kafka_broker_settings(s.scenario, s.impl) if broker == "apache-kafka" else {},
            )
        ).start()
        if s.impl == "legacy_zk" and not self.cluster.zookeeper_connect:
            raise ConfigError("legacy_zk needs ZooKeeper: give --zookeeper with the external backend")
        if s.scenario.zookeeper_tapped and self.cluster.zookeeper_connect:
            self._start_zk_tap(self.cluster.zookeeper_connect)
        self._create_topic()
        if s.scenario.cluster.brokers > 1:
            self._await_coordinator()

    def _start_zk_tap(self, connect: str) -> None:
        """The unit's ZooKeeper tap in front of ``connect`` (see the module contract)."""
        history = HistoryWriter(self.spec.events_dir / "zk-tap.jsonl", source="zk-tap", role=Role.ZOOKEEPER)
        self._zk_tap_history = history
        self.zk_tap = ZooKeeperTap(connect, history).start()
        log.info("ZooKeeper tap %s in front of %s", self.zk_tap.connect, connect)

    def _close_zk_tap(self) -> None:
        if self.zk_tap is not None:
            self.zk_tap.close()
        if self._zk_tap_history is not None:
            self._zk_tap_history.close()

    @property
    def members_zookeeper(self) -> str:
        """The ZooKeeper address members connect to: the tap's when the unit has one, else the cluster's."""
        assert self.cluster is not None
        return self.zk_tap.connect if self.zk_tap is not None else self.cluster.zookeeper_connect

    def _await_coordinator(self) -> None:
        """Until FindCoordinator names a coordinator of the group (see the module contract)."""
        assert self.cluster is not None
        if find_coordinator(self.cluster.bootstrap, self.spec.group, COORDINATOR_WARMUP_S) is None:
            raise UnitFailed(
                f"no broker named a coordinator of group {self.spec.group} within {COORDINATOR_WARMUP_S:g}s"
            )

    def _create_topic(self) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        assert self.cluster is not None
        admin = KafkaAdminClient(
            bootstrap_servers=self.cluster.bootstrap.split(","), client_id="herdlab-harness"
        )
        try:
            c = self.spec.scenario.cluster
            replicas = min(3, c.brokers) if c.replicated else 1
            topic = NewTopic(self.spec.topic, self.spec.partitions, replicas)
            admin.create_topics([topic])  # pyright: ignore[reportUnknownMemberType]
        except TopicAlreadyExistsError:
            raise UnitFailed(f"topic {self.spec.topic} already exists on the cluster") from None
        finally:
            admin.close()

    def start_producer(self) -> None:
        assert self.cluster is not None
        s = self.spec
        self.producer = start_producer(s.scenario, self.cluster.bootstrap, s.events_dir, s.logs_dir, s.topic)

    def stop_producer(self) -> None:
        if self.producer is not None:
            self.producer.signal(signal.SIGTERM, group=False)
            self.producer.wait(30)

    def _endpoints_for(self, name: str, index: int) -> Endpoints:
        assert self.cluster is not None
        zk, bootstrap = self.members_zookeeper, self.cluster.bootstrap
        cuts = self.spec.plan.proxied.get(name, set())
        if cuts:
            if self.proxies is None:
                self.proxies = ProxyHost()
            if "zookeeper" in cuts and zk:
                zk = _proxied_zookeeper(self.proxies, zk, f"{name}-zookeeper")
            if "broker" in cuts:
                host, _, port = bootstrap.split(",")[0].rpartition(":")
                ip = member_loopback_ip(index)
                bootstrap = self.proxies.add(
                    (host, int(port)), listen=(ip, int(port)), source_ip=ip, name=f"{name}-broker"
                ).address
        return Endpoints(zookeeper=zk, bootstrap=bootstrap)

    def start_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> None:
        held = self.held.pop(name, None)
        if held is not None:  # started ahead, waiting: released (see the module contract)
            handle, release = held
            if handle.alive():
                release.touch()
                self.members[name] = handle
                return
            status = handle.wait(0)
            handle.stop(grace=1.0)  # reaps it
            release.unlink(missing_ok=True)
            log.warning(
                "member %s of group %s: its held process died before its join (exit status %s); "
                "starting it afresh",
                name,
                self.spec.group,
                status,
            )
        self.members[name] = self._launch(name, kind, props)

    def prestart_member(
        self, name: str, kind: str | None = None, props: Mapping[str, str] | None = None
    ) -> bool:
        assert self.cluster is not None
        if (
            name in self.members
            or name in self.held
            or name in self.host_of
            or self.cluster.member_launcher([self.spec.events_dir]) is not None
        ):
            return False
        release = self.spec.events_dir / f".{name}.release"
        release.unlink(missing_ok=True)
        self.held[name] = (self._launch(name, kind, props, hold=release), release)
        return True

    def _launch(
        self,
        name: str,
        kind: str | None,
        props: Mapping[str, str] | None,
        hold: Path | None = None,
    ) -> MemberHandle:
        """Start ``name``'s process (or its gevent host) and return its handle; the caller files it."""
        if name not in self.endpoints:
            self.endpoints[name] = self._endpoints_for(name, len(self.endpoints))
        assert self.cluster is not None
        s = self.spec
        if name in self.host_of and name not in self.members and kind in (None, s.impl):
            return self._start_host(name)
        kind = self.kinds[name] = kind or self.kinds.get(name, s.impl)
        if props is not None:
            self.props[name] = dict(props)
        launcher = self.cluster.member_launcher([s.events_dir])
        return start_member(
            kind,
            s.scenario,
            name,
            self.endpoints[name],
            s.events_dir,
            s.logs_dir,
            s.group,
            s.topic,
            launcher,
            props=self.props.get(name, {}),
            hold=hold,
        )

    def _start_host(self, name: str) -> MemberHandle:
        """``name``'s host (legacy: gevent; coordinator: one JVM): started with all its members on the
        first of them; the others are the same process (their handle is the host's)."""
        assert self.cluster is not None
        s = self.spec
        host, names = self.host_of[name]
        started = next((self.members[n] for n in names if n in self.members), None)
        if started is None:
            ep = Endpoints(zookeeper=self.members_zookeeper, bootstrap=self.cluster.bootstrap)
            launcher = self.cluster.member_launcher([s.events_dir])
            args = (s.scenario, host, names, ep, s.events_dir, s.logs_dir, s.group, s.topic, launcher)
            started = start_host(*args) if s.impl == "legacy_zk" else start_coordinator_host(*args, s.impl)
        self.kinds[name] = s.impl
        return started

    def frozen(self, member: MemberProcess) -> bool:
        return process_frozen(member)

    def stop_processes(self) -> None:
        for handle, release in self.held.values():  # never released: nothing of theirs to leave cleanly
            handle.stop(grace=1.0)
            release.unlink(missing_ok=True)
        self.held.clear()
        if self.host_of:  # hundreds of legacy members: stop re-arming watches first, or teardown is a herd
            for n, p in self.members.items():
                if self.kinds.get(n) == "legacy_zk" and p.alive():
                    p.signal(signal.SIGUSR1, group=False)
        for p in {id(p): p for p in self.members.values()}.values():  # a host once
            if p.alive():
                p.signal(signal.SIGCONT)
                p.signal(signal.SIGTERM, group=False)
        deadline = time.monotonic() + 20
        for p in self.members.values():
            p.wait(max(0.0, deadline - time.monotonic()))
            p.stop(grace=1.0)
        if self.producer is not None:
            self.producer.stop()
        if self.proxies is not None:
            self.proxies.close()
        self._close_zk_tap()

    def broker_config(self) -> dict[str, Any]:
        """What the unit's broker runs with, for the manifest: ``broker`` (the scenario's value), and for
        Apache Kafka its ``version`` and every property of its ``server.properties``; for herdlab's
        broker the Kafka-named settings the scenario gives it (:func:`kafka_broker_settings`)."""
        s = self.spec.scenario
        broker = s.cluster.broker
        if broker == "apache-kafka":
            # deferred: start-up: the Apache Kafka cluster (kio) loads only when a unit uses it
            from harness.cluster.apache_kafka import ApacheKafkaCluster

            assert isinstance(self.cluster, ApacheKafkaCluster)
            out: dict[str, Any] = {
                "broker": broker,
                "version": self.cluster.version,
                "properties": dict(self.cluster.properties),
            }
            if self.cluster.images is not None:
                out["image"] = self.cluster.image_ref
            return out
        if broker == "herdlab":
            return {"broker": broker, "properties": kafka_broker_settings(s, self.spec.impl)}
        return {"broker": broker}

    def stop_cluster(self) -> None:
        self._close_zk_tap()
        if self.cluster is not None:
            self.cluster.stop()
