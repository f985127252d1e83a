# pyright: strict
"""Running a scenario: every case x implementation x repetition, on one cluster backend.

Contract
--------
:func:`run_scenario` creates ``<out>/<scenario>/<run-id>/`` and, for each *unit* (case,
implementation, repetition), in order:

1. starts a fresh cluster (``local``: ZooKeeper + one broker, or the scenario's ``cluster.broker``;
   ``containers``: the same in containers; ``external``: nothing), creates the
   topic with a name and group of the unit's own, and starts proxies for members that a cut hits;
2. starts the producer and the initial members (and, held until their step, the members the joins
   will add: :meth:`~harness.run.rig.UnitRig.prestart_member`), and waits until the group is stable (every
   partition owned by exactly one live member for the settle window), or fails the unit after
   ``stable_timeout``;
3. performs the nemesis plan at its offsets from that moment, each action an ``invoke`` event just
   before acting and a ``complete`` once it took effect (or ``skipped`` with a reason), as
   :mod:`harness.kernel.events` defines them;
4. waits for the group to settle after the last action (bounded) and writes ``settling_end`` (nothing
   later belongs to a trigger), stops the producer, and drains: waits until every produced record was
   processed or ``drain`` passes, then writes ``drained``;
5. stops members (cleanly), producer and cluster, samples ZooKeeper's ``mntr`` into the history.

With a coordinator fault in the timeline, a coordinator unit also writes ``offsets_snapshot`` events
(:mod:`harness.run.snapshots`): after each fault's end step once the group settled again (one session
timeout at least, bounded by the next step's time) and at the unit's end after draining.

When all units ran (or on Ctrl-C / an error), the JSON-lines files of every unit are merged into
``history.parquet`` and ``manifest.json`` is written; nothing recorded is lost and no process is left
(every child goes through :mod:`harness.procs`). A Ctrl-C re-raises ``KeyboardInterrupt`` after that.

The parts (Jepsen's split): the plan is pure (:mod:`harness.run.plan`); :class:`UnitRunner` is a
short interpreter of it (for each step: wait until its offset, look up its nemesis in
:mod:`harness.faults.actions`, run it); the processes come from a :class:`~harness.run.rig.Rig`;
observation, progress and waiting live in :mod:`harness.run.observe`. Every event the runner writes
goes to the unit's ``nemesis.jsonl`` stamped by its :class:`~harness.run.clock.Clock`.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.cluster.containers import ContainersOptions, preflight
from harness.faults.actions import nemesis_for
from harness.faults.nemesis import ActionFailed, ActionPair
from harness.history.schema import to_parquet
from harness.history.writer import HistoryWriter
from harness.kernel.errors import ConfigError, HerdlabError, Unreachable
from harness.kernel.events import COORDINATOR_END_ACTIONS, COORDINATOR_FAULT_ACTIONS, Kind, Role
from harness.run.clock import Clock, SystemClock
from harness.run.context import UnitContext
from harness.run.interpreter import Stage, Timing, detection_s, interpret
from harness.run.manifest import write_manifest
from harness.run.observe import Progress, Waiter
from harness.run.plan import Plan, Step, check_spacing, make_plan
from harness.run.rig import Rig, RigSpec, UnitFailed, UnitRig
from harness.run.snapshots import OffsetsSnapshots
from harness.run.tail import GroupWatch
from harness.scenario.loading import Case, expand, left_out
from harness.scenario.model import Scenario
from harness.scenario.random_nemesis import replay_data
from harness.scenario.random_nemesis import resolve as resolve_random

__all__ = [
    "RunOptions",
    "RunResult",
    "Unit",
    "UnitFailed",
    "UnitRunner",
    "new_run_id",
    "planned_cases",
    "run_scenario",
]

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
    #: an unpacked Apache Kafka distribution (``--kafka-home``; None: $HERDLAB_KAFKA_HOME or the fetched one)
    kafka_home: Path | None = None


@dataclass
class Unit:
    case_index: int
    case: Case
    impl: str
    repetition: int
    dir: Path
    number: int = 1  # its place in the run (1-based) and how many units the run has: for progress reports
    of: int = 1

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
    units: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    interrupted: bool = False
    events: int = 0
    #: why the run stopped before its last unit (an error no unit could go on after), else None
    stopped: str | None = None


def _cpu_since(r0: resource.struct_rusage) -> float:
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


class UnitRunner(Stage):
    """Runs one unit (see the module contract): an interpreter of its plan. Everything it starts goes
    through ``rig`` and is stopped by :meth:`close`; ``rig`` and ``clock`` default to the real ones."""

    def __init__(
        self,
        scenario: Scenario,
        unit: Unit,
        options: RunOptions,
        run_id: str,
        rig: Rig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.s = scenario
        self.unit = unit
        self.options = options
        self.run_id = run_id
        self.events_dir = unit.dir / "events"
        self.logs_dir = unit.dir / "logs"
        self.events_dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        shared = options.backend == "external" or unit.case.scenario.cluster.broker == "external"
        suffix = f"{run_id}-{unit.key}" if shared else ""  # an existing cluster may hold other runs' names
        self.topic = f"{scenario.topic.name}-{suffix}" if suffix else scenario.topic.name
        self.group = f"{scenario.group.id}-{suffix}" if suffix else scenario.group.id
        self.plan: Plan = make_plan(
            unit.case.scenario, unit_members(unit.case, unit.impl), repetition=unit.repetition
        )
        self.partitions = unit_partitions(unit.case, unit.impl)
        self.clock: Clock = clock or SystemClock()
        self.history = HistoryWriter(self.events_dir / "nemesis.jsonl", source="nemesis", role=Role.NEMESIS)
        self.action_ids = 0
        self.rig: Rig = rig or UnitRig(
            RigSpec(
                scenario=unit.case.scenario,
                impl=unit.impl,
                plan=self.plan,
                topic=self.topic,
                group=self.group,
                partitions=self.partitions,
                events_dir=self.events_dir,
                logs_dir=self.logs_dir,
                cluster_dir=unit.dir / "cluster",
                backend=options.backend,
                zookeeper=options.zookeeper,
                bootstrap=options.bootstrap,
                zk_tick_ms=options.zk_tick_ms,
                containers=options.containers,
                labels={"herdlab.run": run_id, "herdlab.unit": unit.key},
                kafka_home=options.kafka_home,
            )
        )
        self.watch = GroupWatch(self.events_dir, self.partitions, clock=self.clock)
        self.view = self.watch.view
        self.progress = Progress(
            options.progress, unit.dir.parent.parent, unit.key, unit.context, number=unit.number, of=unit.of
        )
        self.waiter = Waiter(self.watch, self.progress)
        self.ctx = UnitContext(
            rig=self.rig,
            waiter=self.waiter,
            impl=unit.impl,
            unit_key=unit.key,
            logs_dir=self.logs_dir,
            stable_timeout=scenario.stable_timeout,
            topic=self.topic,
            group=self.group,
        )
        self.stable_at: float | None = None
        # the offsets snapshot due once the group settled after a coordinator fault's end step
        self._pending: str | None = None
        self.outcome: dict[str, Any] = {"unit": unit.key, **unit.context}
        self.snapshots: OffsetsSnapshots | None = None
        if unit.impl != "legacy_zk" and any(st.kind in COORDINATOR_FAULT_ACTIONS for st in self.plan.steps):
            grown = [int(st.value or 0) for st in self.plan.steps if st.kind == "add_partitions"]
            self.snapshots = OffsetsSnapshots(
                self.history,
                self.clock.time_ns,
                lambda: self.rig.cluster.bootstrap if self.rig.cluster else "",
                self.group,
                self.topic,
                max([self.partitions, *grown]),
                unit.context,
            )

    # -- history -------------------------------------------------------------------------------
    def _sample_zk(self, label: str) -> None:
        """ZooKeeper's mntr counters as a ``zk_mntr`` event (``label``: the window edge it marks)."""
        m = self.rig.cluster.zk_mntr() if self.rig.cluster else None
        if m:
            keep = {k: v for k, v in m.items() if isinstance(v, int | float)}
            self.history.emit(
                Kind.ZK_MNTR, ts_ns=self.clock.time_ns(), role=Role.HARNESS, label=label, counters=keep
            )

    def _mark(self, kind: str, **fields: Any) -> None:
        """A harness marker (unit_start, stable, settling_end, drained)."""
        self.history.emit(kind, ts_ns=self.clock.time_ns(), role=Role.HARNESS, **fields, **self.unit.context)

    def _phase(self, phase: str) -> None:
        self.progress.phase = phase

    # -- the unit: the interpreter's stage ------------------------------------------------------
    @property
    def unit_key(self) -> str:
        return self.unit.key

    def run(self) -> dict[str, Any]:
        """Run the unit (:func:`harness.run.interpreter.interpret` on this stage); its outcome."""
        s = self.s  # the phases' bounds: the scenario's; the detection time: the case's session timeouts
        detect_s = detection_s(self.unit.case.scenario, self.unit.impl, self.plan)
        ending = interpret(self, Timing(s.stable_timeout, s.settle_window, s.drain, detect_s))
        self.outcome.update(settled_at_end=ending.settled, drained=ending.drained)
        self._phase("stopping")
        return self.outcome

    def start(self) -> None:
        self._phase("cluster")
        self.rig.start()
        self.outcome["broker_config"] = self.rig.broker_config()
        self._mark(
            Kind.UNIT_START,
            topic=self.topic,
            group=self.group,
            partitions=self.partitions,
            members=self.plan.initial,
        )
        self._sample_zk("start")
        self.rig.start_producer()
        # All initial members start at once: throttled start-ups would turn one coalesced legacy herd into
        # one herd per member; start-up starvation is reported apart from failures after the group became
        # stable.
        for name in self.plan.initial:
            self.rig.start_member(name)
        # every member a join will add: its process starts up now, with the initial members, and waits
        # for its step (UnitRig.prestart_member), so that the machine's load does not stretch the join
        for step in self.plan.steps:
            if step.kind == "join":
                for name in step.targets:
                    self.rig.prestart_member(name, step.member_kind, dict(step.props) or None)

    def wait(self, timeout_s: float, condition: Callable[[], bool] | None) -> bool:
        return self.waiter.wait(timeout_s, condition)

    def mark(self, kind: str, **fields: Any) -> None:
        self._mark(kind, **fields)

    def phase(self, name: str) -> None:
        self._phase(name)

    def sample(self, label: str) -> None:
        self._sample_zk(label)

    def start_failure(self) -> str | None:
        """An initial member whose process ended before the group was stable (a member refused by its
        client, say): the unit cannot become stable, so it fails now, not after stable_timeout."""
        members = self.rig.members
        gone = [n for n in self.plan.initial if n in members and not members[n].alive()]
        if not gone:
            return None
        return (
            f"{self.unit.key}: member {gone[0]} exited before the group was stable: "
            f"{_last_line(self.logs_dir / f'{gone[0]}.log')} (see {self.logs_dir})"
        )

    def not_stable(self, timeout_s: float) -> str:
        return f"{self.unit.key}: group not stable after {timeout_s:g}s ({self.view.summary()}); see {self.logs_dir}"

    def stable(self, at: float) -> None:
        self.stable_at = at

    def before_wait(self, step: Step, due: float) -> None:
        """The offsets snapshot due once the group settled after a coordinator fault's end."""
        if self._pending is not None:
            self._snapshot_when_settled(self._pending, due)
            self._pending = None

    def after_step(self, step: Step) -> None:
        if self.snapshots is not None and step.kind in COORDINATOR_END_ACTIONS:
            self._pending = f"after:{self.action_ids}"

    def settled(self) -> None:
        if self._pending is not None and self.snapshots is not None:
            self.snapshots.take(self._pending)

    def stop_producer(self) -> None:
        self.rig.stop_producer()

    def drained(self) -> None:
        if self.snapshots is not None:
            self.snapshots.take("end")
            self.snapshots.join()

    def _snapshot_when_settled(self, label: str, due: float) -> None:
        """Wait until the group settled again after a fault's end (no earlier than one session timeout
        later, no later than ``due``, the next step's time), then start the snapshot ``label``."""
        assert self.snapshots is not None
        clock, view, window = self.clock, self.view, self.s.settle_window
        earliest = clock.monotonic() + detection_s(self.unit.case.scenario, self.unit.impl, self.plan)
        self.waiter.wait(
            max(0.0, due - clock.monotonic()),
            lambda: clock.monotonic() >= earliest and view.settled(clock.time_ns(), window),
        )
        self.snapshots.take(label)

    def perform(self, step: Step) -> None:
        """One step: its nemesis, a mntr sample before a trigger (a window edge), then the nemesis's
        ``invoke`` / ``complete`` | ``skipped`` pair."""
        nemesis = nemesis_for(step)
        self.action_ids += 1
        pair = ActionPair(step, self.action_ids, self.history, self.clock.time_ns, self.unit.context)
        if step.trigger:
            self._sample_zk(f"invoke:{self.action_ids}")
        try:
            nemesis.run(pair, self.ctx)
        except ActionFailed as e:
            raise UnitFailed(str(e)) from None

    def close(self) -> None:
        """Stop members (cleanly, in parallel), producer, proxies and cluster (once every offsets snapshot
        started has ended, bounded). Idempotent."""
        if self.snapshots is not None:
            self.snapshots.join()
        self.rig.stop_processes()
        with contextlib.suppress(Exception):
            self._sample_zk("end")
        self.rig.stop_cluster()
        self.history.close()


def _last_line(path: Path) -> str:
    """The last non-empty line of a log (what a process said before it ended), or ``""``."""
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def unit_members(case: Case, impl: str) -> int:
    """The initial members of ``impl``'s units of ``case`` (``[group.<impl>] members``, else the case's)."""
    return case.scenario.group.members_for(impl)


def unit_partitions(case: Case, impl: str) -> int:
    """The topic's partitions in ``impl``'s units of ``case``: ``topic.partitions``, or with
    ``"members"`` as many as the unit's initial members (:func:`unit_members`)."""
    p = case.scenario.topic.partitions
    return unit_members(case, impl) if p == "members" else int(p)


def planned_cases(scenario: Scenario) -> list[Case]:
    """The scenario's matrix cases, each checked by planning it: a plan that cannot be made (a switch with
    no legacy member present, a rollback with nothing to roll back, too many members asked for) or whose
    triggers the analysis could not measure apart is a :class:`ConfigError` naming the case. Used before
    anything starts (``run``) and by ``herdlab scenarios check``. A random schedule (``[[nemesis]]``) is
    drawn first (:func:`harness.scenario.random_nemesis.resolve`)."""
    scenario = resolve_random(scenario)[0]
    cases = expand(scenario)
    for case in cases:
        try:
            for n in sorted({unit_members(case, impl) for impl in scenario.implementations}):
                check_spacing(make_plan(case.scenario, n), case.scenario.settle_window)
        except ValueError as e:
            where = f" case {case.label}" if len(cases) > 1 else ""
            raise ConfigError(f"scenario {scenario.name}{where}: {e}") from None
    return cases


def _external(unit: Unit, options: RunOptions) -> bool:
    """Whether the unit runs on a cluster the user gave (the external backend or broker), not one it started."""
    return options.backend == "external" or unit.case.scenario.cluster.broker == "external"


def unit_columns(scenario: Scenario, options: RunOptions) -> list[str]:
    """The run's columns, one unit each per case and repetition: the scenario's implementations."""
    return list(scenario.implementations)


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
    if options.backend == "external" and (
        scenario.zookeeper.servers != 1 or "zookeeper.servers" in scenario.matrix_keys
    ):
        raise ConfigError(f"zookeeper servers = 3 needs --backend local (not {options.backend}) for now")
    if options.backend != "local" and (
        scenario.cluster.brokers != 1 or "cluster.brokers" in scenario.matrix_keys
    ):
        raise ConfigError(f"cluster brokers > 1 needs --backend local (not {options.backend}) for now")
    if options.backend == "containers":
        preflight(options.containers)
    scenario, drawn = resolve_random(scenario)  # random schedules drawn into the timeline
    cases = planned_cases(scenario)
    impls = unit_columns(scenario, options)
    run_id = new_run_id()
    run_dir = options.out / scenario.name / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    result = RunResult(run_dir=run_dir, run_id=run_id)
    keys = [
        (ci, case, impl, rep)
        for ci, case in enumerate(cases)
        for rep in range(scenario.repetitions)
        for impl in impls
    ]
    units = [
        Unit(ci, case, impl, rep, run_dir / "units" / f"c{ci}-{impl}-r{rep}", i + 1, len(keys))
        for i, (ci, case, impl, rep) in enumerate(keys)
    ]
    started = datetime.now(UTC).isoformat()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.monotonic()
    try:
        for unit in units:
            runner = UnitRunner(scenario, unit, options, run_id)
            try:
                result.units.append(runner.run())
            except (UnitFailed, Unreachable) as e:
                # a server the unit started that did not come up fails the unit; an unreachable cluster the
                # user gave (external) fails every unit alike: it stops the run
                if isinstance(e, Unreachable) and _external(unit, options):
                    raise
                log.error("%s", e)
                result.units.append({**runner.outcome, "failed": str(e)})
            finally:
                runner.close()
    except KeyboardInterrupt:
        result.interrupted = True
        raise
    except HerdlabError as e:
        result.stopped = str(e)
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
                    "processing_gap_s": c.processing_gaps,
                }
                for i, c in enumerate(cases)
            ],
            left_out=[{"label": c.label, "params": c.params, "reason": c.reason} for c in left_out(scenario)],
            repetitions=scenario.repetitions,
            seed=scenario.seed,
            backend=options.backend,
            started=started,
            finished=datetime.now(UTC).isoformat(),
            interrupted=result.interrupted,
            stopped=result.stopped,
            units=result.units,
            # CPU of the harness process itself (not its children): it must not starve the members.
            harness_cpu_s=round(_cpu_since(cpu0), 2),
            wall_s=round(time.monotonic() - wall0, 2),
            # what a random schedule drew, and what `herdlab run --replay` runs again
            drawn_timeline=drawn,
            replay_scenario=replay_data(scenario),
        )
    return result
