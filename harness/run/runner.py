"""Running a scenario: every case x implementation x repetition, on one cluster backend.

Contract
--------
:func:`run_scenario` creates ``<out>/<scenario>/<run-id>/`` and, for each *unit* (case,
implementation, repetition), in order:

1. starts a fresh cluster (``local``: ZooKeeper + one broker; ``containers``: the same in containers,
   or Apache Kafka for the ``apache_kafka`` units; ``external``: nothing), creates the
   topic with a name and group of the unit's own, and starts proxies for members that a cut hits;
2. starts the producer and the initial members, and waits until the group is stable (every
   partition owned by exactly one live member for the settle window), or fails the unit after
   ``stable_timeout``;
3. performs the nemesis plan at its offsets from that moment, each action an ``invoke`` event just
   before acting and a ``complete`` once it took effect (or ``skipped`` with a reason), as
   :mod:`harness.kernel.events` defines them;
4. waits for the group to settle after the last action (bounded) and writes ``settling_end`` (nothing
   later belongs to a trigger), stops the producer, and drains: waits until every produced record was
   processed or ``drain`` passes, then writes ``drained``;
5. stops members (cleanly), producer and cluster, samples ZooKeeper's ``mntr`` into the history.

When all units ran (or on Ctrl-C / an error), the JSON-lines files of every unit are merged into
``history.parquet`` and ``manifest.json`` is written; nothing recorded is lost and no process is left
(every child goes through :mod:`harness.procs`). A Ctrl-C re-raises ``KeyboardInterrupt`` after that.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.cluster.base import Cluster, ClusterSpec, make_cluster
from harness.cluster.containers import APACHE_KAFKA, ContainersOptions, preflight
from harness.faults.proxy import ProxyHost, member_loopback_ip
from harness.history.manifest import write_manifest
from harness.history.schema import to_parquet
from harness.history.writer import HistoryWriter
from harness.kernel.errors import ConfigError, HerdlabError
from harness.kernel.events import JOIN_ACTIONS, Kind, Role
from harness.kernel.ownership import GroupView
from harness.procs import ChildProcess
from harness.run.launch import Endpoints, MemberHandle, start_member, start_producer
from harness.run.plan import Plan, Step, check_spacing, make_plan
from harness.run.tail import HistoryTail
from harness.scenario.loading import Case, expand
from harness.scenario.model import Scenario

log = logging.getLogger("harness.run")


@dataclass
class RunOptions:
    """How to run: backend and its addresses, where results go, how to report progress."""

    backend: str = "local"
    out: Path = Path("reports")
    zookeeper: str | None = None
    bootstrap: str | None = None
    progress: Callable[[dict[str, Any]], None] | None = None
    zk_tick_ms: int = 200
    containers: ContainersOptions = field(default_factory=ContainersOptions)


@dataclass
class Unit:
    case_index: int
    case: Case
    impl: str
    repetition: int
    dir: Path

    @property
    def key(self) -> str:
        return f"c{self.case_index}-{self.impl}-r{self.repetition}"

    @property
    def context(self) -> dict[str, Any]:
        return {"case": self.case.label, "impl": self.impl, "repetition": self.repetition}


@dataclass
class RunResult:
    run_dir: Path
    run_id: str
    units: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    events: int = 0


class UnitFailed(HerdlabError):
    """A unit could not do what the scenario asks (e.g. the group never became stable)."""


class _Skip(Exception):
    """A nemesis action that does not apply here (the message is the reason)."""


def _frozen(handle: MemberHandle) -> bool:
    """Whether a member is stopped (SIGSTOP) or its container paused."""
    box = getattr(handle, "box", None)
    if box is not None:  # a member container
        return bool(box.status() == "paused")
    import psutil

    try:
        return psutil.Process(handle.pid).status() == psutil.STATUS_STOPPED  # type: ignore[attr-defined]
    except psutil.NoSuchProcess:
        return False


def _cpu_since(r0: resource.struct_rusage) -> float:
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


class UnitRunner:
    """Runs one unit (see the module contract); all processes it starts are stopped by :meth:`close`."""

    def __init__(self, scenario: Scenario, unit: Unit, options: RunOptions, run_id: str) -> None:
        self.s = scenario
        self.unit = unit
        self.options = options
        self.run_id = run_id
        self.events_dir = unit.dir / "events"
        self.logs_dir = unit.dir / "logs"
        self.events_dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        suffix = f"{run_id}-{unit.key}" if options.backend == "external" else ""
        self.topic = f"{scenario.topic.name}-{suffix}" if suffix else scenario.topic.name
        self.group = f"{scenario.group.id}-{suffix}" if suffix else scenario.group.id
        self.plan: Plan = make_plan(unit.case.scenario, unit.case.members)
        self.partitions = unit.case.partitions
        self.nemesis = HistoryWriter(self.events_dir / "nemesis.jsonl", source="nemesis", role=Role.NEMESIS)
        self.action_ids = 0
        self.cluster: Cluster | None = None
        self.proxies: ProxyHost | None = None
        self.members: dict[str, MemberHandle] = {}
        self.endpoints: dict[str, Endpoints] = {}
        self.producer: ChildProcess | None = None
        self.tail = HistoryTail(self.events_dir)
        self.view = GroupView(partitions=self.partitions)
        self.ready: dict[str, int] = {}  # member -> ts_ns of its latest ready event
        self.produced: set[tuple[int, int]] = set()
        self.processed: set[tuple[int, int]] = set()
        self.registrations: dict[str, tuple[int, str]] = {}  # legacy member -> ZooKeeper session
        self.phase = "starting"
        self.stable_at: float | None = None
        self.outcome: dict[str, Any] = {"unit": unit.key, **unit.context}

    # -- observation ---------------------------------------------------------------------------
    def _observe(self) -> None:
        for e in self.tail.poll():
            self.view.apply(e)
            kind = e.get("kind")
            if kind == Kind.READY and e.get("role") == Role.MEMBER:
                self.ready[str(e.get("source"))] = int(e["ts_ns"])
            if kind == "produced":
                self.produced.add((e["partition"], e["offset"]))
            elif kind == "record":
                self.processed.add((e["partition"], e["offset"]))
            elif kind == "registered" and e.get("session_password"):
                self.registrations[e["source"]] = (int(e["session_id"]), e["session_password"])

    def _progress(self) -> None:
        if self.options.progress:
            self.options.progress(
                {
                    "run_dir": str(self.unit.dir.parent.parent),
                    "unit": self.unit.key,
                    "case": self.unit.case.label,
                    "impl": self.unit.impl,
                    "repetition": self.unit.repetition,
                    "phase": self.phase,
                    "members_up": len(self.view.live),
                    "owned": len(self.view.owners()),
                    "partitions": self.view.partitions,
                    "produced": len(self.produced),
                    "lag": len(self.produced - self.processed),
                }
            )

    def _wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Observe for up to ``seconds``; return True as soon as ``until()`` holds."""
        deadline = time.monotonic() + seconds
        while True:
            self._observe()
            self._progress()
            if until is not None and until():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(0.1, remaining))  # polling the members' histories, not synchronisation

    def _sample_zk(self, label: str) -> None:
        """ZooKeeper's mntr counters as a ``zk_mntr`` event (``label``: the window edge it marks)."""
        m = self.cluster.zk_mntr() if self.cluster else None
        if m:
            keep = {k: v for k, v in m.items() if isinstance(v, int | float)}
            self.nemesis.emit(Kind.ZK_MNTR, role=Role.HARNESS, label=label, counters=keep)

    def _mark(self, kind: str, **fields: Any) -> None:
        """A harness marker (unit_start, stable, settling_end, drained)."""
        self.nemesis.emit(kind, role=Role.HARNESS, **fields, **self.unit.context)

    # -- set-up --------------------------------------------------------------------------------
    def _start_cluster(self) -> None:
        c = self.s.group.coordinator
        broker_args = (
            "--group-initial-rebalance-delay-ms",
            str(c.initial_rebalance_delay_ms),
            "--group-min-session-timeout-ms",
            str(c.min_session_timeout_ms),
            "--no-auto-create-topics",
        )
        containers = self.options.containers
        self.cluster = make_cluster(
            ClusterSpec(
                backend=self.options.backend,
                workdir=self.unit.dir / "cluster",
                history_dir=self.events_dir,
                tick_time_ms=self.options.zk_tick_ms,
                broker_args=broker_args,
                zookeeper=self.options.zookeeper,
                bootstrap=self.options.bootstrap,
                images=containers.images,
                kafka_image=containers.kafka_image if self.unit.impl == APACHE_KAFKA else None,
                labels={"herdlab.run": self.run_id, "herdlab.unit": self.unit.key},
                members_in_containers=containers.members_in_containers,
            )
        ).start()
        if self.unit.impl == "legacy_zk" and not self.cluster.zookeeper_connect:
            raise ConfigError("legacy_zk needs ZooKeeper: give --zookeeper with the external backend")

    def _create_topic(self) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        assert self.cluster is not None
        admin = KafkaAdminClient(
            bootstrap_servers=self.cluster.bootstrap.split(","), client_id="herdlab-harness"
        )
        try:
            admin.create_topics([NewTopic(self.topic, self.partitions, 1)])
        except TopicAlreadyExistsError:
            raise UnitFailed(f"topic {self.topic} already exists on the cluster") from None
        finally:
            admin.close()

    def _endpoints_for(self, name: str, index: int) -> Endpoints:
        assert self.cluster is not None
        zk, bootstrap = self.cluster.zookeeper_connect, self.cluster.bootstrap
        cuts = self.plan.proxied.get(name, set())
        if cuts:
            if self.proxies is None:
                self.proxies = ProxyHost()
            if "zookeeper" in cuts and zk:
                host, _, port = zk.split(",")[0].rpartition(":")
                zk = self.proxies.add((host, int(port)), name=f"{name}-zookeeper").address
            if "broker" in cuts:
                host, _, port = bootstrap.split(",")[0].rpartition(":")
                ip = member_loopback_ip(index)
                bootstrap = self.proxies.add(
                    (host, int(port)), listen=(ip, int(port)), source_ip=ip, name=f"{name}-broker"
                ).address
        return Endpoints(zookeeper=zk, bootstrap=bootstrap)

    def _start_member(self, name: str) -> None:
        if name not in self.endpoints:
            self.endpoints[name] = self._endpoints_for(name, len(self.endpoints))
        assert self.cluster is not None
        launcher = self.cluster.member_launcher([self.events_dir])
        self.members[name] = start_member(
            "coordinator" if self.unit.impl == APACHE_KAFKA else self.unit.impl,  # kafka-python members
            self.unit.case.scenario,
            name,
            self.endpoints[name],
            self.events_dir,
            self.logs_dir,
            self.group,
            self.topic,
            launcher,
        )

    # -- the unit ------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        s = self.s
        self.phase = "cluster"
        self._start_cluster()
        assert self.cluster is not None
        self._create_topic()
        self._mark(
            Kind.UNIT_START,
            topic=self.topic,
            group=self.group,
            partitions=self.partitions,
            members=self.plan.initial,
        )
        self._sample_zk("start")
        self.producer = start_producer(
            self.unit.case.scenario, self.cluster.bootstrap, self.events_dir, self.logs_dir, self.topic
        )
        # All initial members start at once. Throttling start-up was tried (at most 4 booting): it
        # turned one coalesced legacy herd into a hundred sequential ones and doubled the wall time;
        # start-up starvation is reported apart from failures after the group became stable.
        for name in self.plan.initial:
            self._start_member(name)
        self.phase = "joining"
        now_ns = time.time_ns
        initial = set(self.plan.initial)
        if not self._wait(
            s.stable_timeout,
            lambda: (
                initial <= self.view.live
                and not (initial & self.view.rebalancing)
                and self.view.settled(now_ns(), s.settle_window)
            ),
        ):
            raise UnitFailed(
                f"{self.unit.key}: group not stable after {s.stable_timeout:g}s ({self.view.summary()}); see {self.logs_dir}"
            )
        self.stable_at = time.monotonic()
        self._mark(Kind.STABLE)
        self._sample_zk("stable")
        self.phase = "timeline"
        for step in self.plan.steps:
            self._wait(max(0.0, self.stable_at + step.at - time.monotonic()))
            self._perform(step)
        self.phase = "settling"
        # A fault's effect can lag by up to one session timeout (an expiry noticed on the next
        # request, a crash noticed when the session ends): look no earlier than that after the last step.
        c = self.unit.case.scenario.group
        detect_s = (
            c.legacy_zk.zookeeper_session_timeout_ms
            if self.unit.impl == "legacy_zk"
            else c.coordinator.session_timeout_ms
        ) / 1000
        earliest = time.monotonic() + (detect_s if self.plan.steps else 0.0)
        settled = self._wait(
            s.stable_timeout + detect_s,
            lambda: time.monotonic() >= earliest and self.view.settled(now_ns(), s.settle_window),
        )
        self._sample_zk("settling_end")
        self._mark(Kind.SETTLING_END, settled=settled)
        self.phase = "draining"
        if self.producer is not None:
            self.producer.signal(signal.SIGTERM, group=False)
            self.producer.wait(30)
        drained = self._wait(s.drain, lambda: self.produced <= self.processed)
        self._observe()
        self._mark(Kind.DRAINED, all_processed=drained)
        self.outcome.update(settled_at_end=settled, drained=drained)
        self.phase = "stopping"
        return self.outcome

    def _perform(self, step: Step) -> None:
        """One nemesis action: mntr sample (a window edge), ``invoke``, act, ``complete`` once the
        action took effect (or ``skipped`` with the reason it does not apply)."""
        self.action_ids += 1
        pair = {
            "action": step.kind,
            "action_id": self.action_ids,
            "targets": list(step.targets),
            "target": step.target,
            "value": step.value,
            "trigger": step.trigger,
            "partitions": int(step.value) if step.kind == "add_partitions" and step.value else None,
            **self.unit.context,
        }
        if step.trigger:
            self._sample_zk(f"invoke:{self.action_ids}")
        log.info("%s: %s %s %s", self.unit.key, step.kind, ",".join(step.targets), step.target or "")
        self.nemesis.emit(Kind.INVOKE, **pair)
        try:
            effect = self._act(step)
        except _Skip as e:
            self.nemesis.emit(Kind.SKIPPED, reason=str(e), **pair)
            return
        self.nemesis.emit(Kind.COMPLETE, **pair, **effect)

    def _act(self, step: Step) -> dict[str, Any]:
        """Carry out ``step``; return when it took effect, with fields for the ``complete`` event."""
        targets = [self.members[n] for n in step.targets if n in self.members]
        if step.kind in JOIN_ACTIONS:
            since = time.time_ns()
            for n in step.targets:
                self._start_member(n)
            # complete = every new process is ready to join (its `ready` event: t0 of the join)
            if not self._wait(
                self.s.stable_timeout, lambda: all(self.ready.get(n, 0) >= since for n in step.targets)
            ):
                raise UnitFailed(
                    f"{self.unit.key}: {','.join(step.targets)} not ready to join; see {self.logs_dir}"
                )
            return {"ready_ns": {n: self.ready[n] for n in step.targets}}
        if step.kind in ("leave", "stop_member"):
            for p in targets:
                p.signal(signal.SIGTERM, group=False)
            for p in targets:
                p.wait(30)
                p.stop()
            return {}
        if step.kind == "crash":
            for p in targets:
                p.signal(signal.SIGKILL)
            for p in targets:
                p.wait(10)
            return {}
        if step.kind in ("pause", "resume"):
            stop = step.kind == "pause"
            for p in targets:
                p.signal(signal.SIGSTOP if stop else signal.SIGCONT)
            if not self._wait(10, lambda: all(_frozen(p) == stop for p in targets)):
                raise UnitFailed(
                    f"{self.unit.key}: {step.kind} of {','.join(step.targets)} did not take effect"
                )
            return {}
        if step.kind in ("cut", "heal"):
            if step.target == "zookeeper" and self.unit.impl != "legacy_zk":
                # the coordinator's members never talk to ZooKeeper: nothing to cut them off from
                raise _Skip("coordinator members do not use ZooKeeper")
            if step.target == "broker" and self.unit.impl == APACHE_KAFKA:
                # Apache Kafka advertises its one listener, not the member's proxy address (see README).
                raise _Skip("broker cuts need the herdlab broker")
            assert self.proxies is not None
            for n in step.targets:
                proxy = f"{n}-{step.target}"
                (self.proxies.cut if step.kind == "cut" else self.proxies.restore)(proxy)
            return {}
        if step.kind == "expire":
            if self.unit.impl != "legacy_zk":
                raise _Skip("ZooKeeper sessions exist only on the legacy side")
            for n in step.targets:
                self._expire_session(n)
            return {}
        if step.kind == "add_partitions":
            from kafka.admin import KafkaAdminClient, NewPartitions

            assert self.cluster is not None
            admin = KafkaAdminClient(
                bootstrap_servers=self.cluster.bootstrap.split(","), client_id="herdlab-harness"
            )
            try:
                admin.create_partitions({self.topic: NewPartitions(int(step.value or 0))})
            finally:
                admin.close()
            return {}
        if step.kind == "restart_broker":
            assert self.cluster is not None
            self.cluster.stop_broker(0)
            self._wait(step.value or 0.0)
            self.cluster.start_broker(0)
            return {}
        raise ConfigError(f"unknown nemesis action {step.kind!r}")

    def _expire_session(self, name: str) -> None:
        """Expire member ``name``'s ZooKeeper session from outside, as ZooKeeper's own tests do.

        A second client attaches to the session with its id and password (from the member's
        ``registered`` event) and closes it: the server ends the session, deletes its ephemerals and
        the member learns of the expiry when it next talks to ZooKeeper.
        """
        from kazoo.client import KazooClient

        self._observe()
        reg = self.registrations.get(name)
        if reg is None or self.cluster is None:
            raise _Skip(f"{name} has no ZooKeeper session registered yet")
        sid, pwd = reg
        c = KazooClient(hosts=self.cluster.zookeeper_connect, client_id=(sid, bytes.fromhex(pwd)), timeout=10)
        try:
            c.start(timeout=15)
        finally:
            c.stop()
            c.close()

    def close(self) -> None:
        """Stop members (cleanly, in parallel), producer, proxies and cluster. Idempotent."""
        for p in self.members.values():
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
        with contextlib.suppress(Exception):
            self._sample_zk("end")
        if self.cluster is not None:
            self.cluster.stop()
        self.nemesis.close()


def run_scenario(scenario: Scenario, options: RunOptions) -> RunResult:
    """Run every unit of ``scenario`` (see the module contract) and return where the results are."""
    if options.backend == "external" and any(a.action == "restart_broker" for a in scenario.timeline):
        raise ConfigError(
            "the external backend cannot restart brokers; remove restart_broker from the timeline"
        )
    if options.backend == "external" and "legacy_zk" in scenario.implementations and not options.zookeeper:
        raise ConfigError("legacy_zk needs ZooKeeper: give --zookeeper with the external backend")
    if options.backend != "containers" and options.containers.kafka_image:
        raise ConfigError("--kafka-image needs --backend containers")
    if options.backend == "containers":
        preflight(options.containers)
    cases = expand(scenario)
    for case in cases:  # refuse what the analysis could not measure before anything starts
        try:
            check_spacing(make_plan(case.scenario, case.members), case.scenario.settle_window)
        except ValueError as e:
            where = f" case {case.label}" if len(cases) > 1 else ""
            raise ConfigError(f"scenario {scenario.name}{where}: {e}") from None
    impls = list(scenario.implementations)
    if options.backend == "containers" and options.containers.kafka_image and "coordinator" in impls:
        impls.insert(impls.index("coordinator") + 1, APACHE_KAFKA)  # the third column
    run_id = new_run_id()
    run_dir = options.out / scenario.name / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    result = RunResult(run_dir=run_dir, run_id=run_id)
    units = [
        Unit(ci, case, impl, rep, run_dir / "units" / f"c{ci}-{impl}-r{rep}")
        for ci, case in enumerate(cases)
        for rep in range(scenario.repetitions)
        for impl in impls
    ]
    started = datetime.now(UTC).isoformat()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.monotonic()
    try:
        for unit in units:
            runner = UnitRunner(scenario, unit, options, run_id)
            try:
                result.units.append(runner.run())
            except UnitFailed as e:
                log.error("%s", e)
                result.units.append({**runner.outcome, "failed": str(e)})
            finally:
                runner.close()
    except KeyboardInterrupt:
        result.interrupted = True
        raise
    finally:
        sources = [
            (p, {"run_id": run_id, "scenario": scenario.name, **u.context})
            for u in units
            for p in sorted((u.dir / "events").glob("*.jsonl"))
        ]
        result.events = to_parquet(sources, run_dir / "history.parquet")
        write_manifest(
            run_dir / "manifest.json",
            run_id=run_id,
            scenario=scenario.model_dump(mode="json"),
            cases=[
                {
                    "index": i,
                    "label": c.label,
                    "params": c.params,
                    "members": c.members,
                    "partitions": c.partitions,
                }
                for i, c in enumerate(cases)
            ],
            repetitions=scenario.repetitions,
            seed=scenario.seed,
            backend=options.backend,
            started=started,
            finished=datetime.now(UTC).isoformat(),
            interrupted=result.interrupted,
            units=result.units,
            # CPU of the harness process itself (not its children): it must not starve the members.
            harness_cpu_s=round(_cpu_since(cpu0), 2),
            wall_s=round(time.monotonic() - wall0, 2),
        )
    return result
