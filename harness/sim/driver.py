"""The simulator's driver: one unit's plan interpreted in virtual time, as the real runner does it.

Contract
--------
:class:`SimUnitRunner` is a :class:`harness.run.interpreter.Stage`: the one interpreter of a unit's
plan (:func:`harness.run.interpreter.interpret`, as real runs use it) drives it in virtual time. It runs one :class:`harness.run.runner.Unit` (same plan, members and seed as a real
run: :func:`harness.run.plan.make_plan`) on a fresh :class:`~harness.sim.clock.VirtualScheduler`:

1. writes ``unit_start`` (topic, group, partitions, members), starts the producer
   (:class:`harness.sim.workload.SimProducer` on the unit's :class:`~harness.sim.workload.SimTopic`, its
   first record at a time drawn uniformly over the model's ``producer_start_spread_s``) and
   every initial member at once (``SimGroup.start_member``; each ready at a time drawn uniformly over the
   model's ``member_start_spread_s`` from the unit's random source when it is set);
2. waits until the group is first stable with the runner's own condition and fold: the events the
   simulation writes are fed to a :class:`harness.run.tail.GroupWatch` (the runner's fold of
   :mod:`harness.kernel.ownership`), polled every :data:`harness.run.tail.POLL_S` of virtual time, with
   the runner's test (every initial member live, none rebalancing, the view settled for
   ``settle_window``); writes ``stable`` or fails the unit after ``stable_timeout`` of virtual time
   (scaled to the group when the scenario does not set it, and a step waits for the previous trigger to
   settle from :data:`WAIT_SETTLED_FROM` members on: :func:`unit_timing`);
3. performs each step at ``stable + at``, late by a time drawn from the model (``runner_step_late_*``),
   with the real nemesis's ``invoke`` / ``complete`` | ``skipped`` events
   (:class:`harness.faults.nemesis.ActionPair`: the same fields): ``join`` releases its targets, which
   the real runner started held with the initial members (each ready after a release time drawn from
   the model, ``member_release_poll_s``); ``start_member`` starts its targets, each after a boot time drawn
   from the model (``member_boot_*``); both complete when each wrote ``ready`` (``ready_ns``);
   ``leave`` / ``stop_member``
   stop them cleanly and complete when they stopped; ``crash`` kills them (their sessions or memberships
   expire on the server side later). Every other action (pause, stall, cut, expire, broker, ZooKeeper and
   coordinator faults, partition growth) is **skipped with the reason "not simulated"**: the unit goes
   on, and the report shows the pair as skipped, as for an action that does not apply;
4. settles as the runner does (no earlier than one session timeout after the last step, bounded by
   ``stable_timeout`` + that), writes ``settling_end``, stops the producer, drains (every produced
   record processed, bounded by ``drain``) and writes ``drained``;
5. closes the group (quiesce, clean stops) and runs the loop until the members stopped (bounded).

The events go to ``<unit>/events/sim.jsonl`` (one :class:`~harness.sim.history.EventSink`), stamped
``epoch_ns`` + virtual time. ZooKeeper ``mntr`` samples are not written (there is no server to ask).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.faults.nemesis import ActionPair
from harness.kernel import actions
from harness.kernel.errors import ConfigError
from harness.kernel.events import DOWN_ACTIONS, JOIN_ACTIONS, Kind, Role
from harness.kernel.history import History
from harness.run.interpreter import Stage, Timing, interpret
from harness.run.plan import Plan, Step, make_plan
from harness.run.runner import Unit, UnitFailed
from harness.run.tail import GroupWatch
from harness.scenario.model import Scenario
from harness.sim.clock import NS_PER_S, Task, VirtualScheduler
from harness.sim.consumer import make_group as make_consumer_group
from harness.sim.coordinator import make_group as make_coordinator_group
from harness.sim.cpu import gamma_draw
from harness.sim.group import SimContext, SimGroup
from harness.sim.history import EventSink, SimHistory
from harness.sim.legacy import make_group
from harness.sim.legacy import round_s as legacy_round_s
from harness.sim.model import DelayModel
from harness.sim.workload import SimProducer, SimTopic

__all__ = [
    "DESIGNS",
    "NOT_SIMULATED",
    "SIMULATED_ACTIONS",
    "WAIT_SETTLED_FROM",
    "GroupFactory",
    "SimClock",
    "SimUnitRunner",
    "group_factory",
    "round_s",
    "unit_timing",
]

#: The reason of a ``skipped`` pair for an action the simulator does not model.
NOT_SIMULATED = "not simulated"
#: The actions the simulator performs (every other one is skipped, NOT_SIMULATED): the registry's.
SIMULATED_ACTIONS = actions.SIMULATED_ACTIONS
#: How long (virtual seconds) a clean stop may take before the step fails, as the real Leave waits.
STOP_TIMEOUT_S = 30.0
#: After the run: how long (virtual seconds) the members may take to stop.
CLOSE_TIMEOUT_S = 60.0
#: From this many initial members on, a timeline step waits until the previous trigger settled
#: (``wait_settled``, unless the ``wait_settled`` option says otherwise): a legacy change at 10^3 members is
#: 10^6 registration reads through one ZooKeeper server, longer than a built-in scenario's spacing.
WAIT_SETTLED_FROM = 1000
#: When the scenario does not set ``stable_timeout``, the unit's waits are bounded by at least this many
#: of the group's rebalance rounds (:func:`round_s`): the scenario's default bound is a real run's.
STABLE_TIMEOUT_ROUNDS = 10

GroupFactory = Callable[[SimContext], SimGroup]


#: The designs the simulator has, in the order reports list them.
DESIGNS = ("legacy_zk", "coordinator", "consumer")


def group_factory(impl: str) -> GroupFactory:
    """The simulated group of ``impl`` (legacy_zk, coordinator, consumer); a one-line error when it has
    none."""

    if impl == "legacy_zk":
        return make_group
    if impl == "coordinator":
        return make_coordinator_group
    if impl == "consumer":
        return make_consumer_group
    raise ConfigError(f"{impl} is not simulated (the simulator has {', '.join(DESIGNS)})")


def round_s(impl: str, members: int, delays: DelayModel) -> float:
    """At least how long one rebalance round of ``members`` takes for ``impl`` (virtual seconds): the
    legacy herd's quadratic reads (:func:`harness.sim.legacy.round_s`); 0 for the coordinator and the
    consumer protocol, whose round is a request or two per member at a broker serving 10^4 a second."""
    if impl == "legacy_zk":
        return legacy_round_s(members, delays)
    return 0.0


def unit_timing(
    scenario: Scenario, impl: str, plan: Plan, delays: DelayModel, options: dict[str, Any]
) -> Timing:
    """The unit's timing as the real runner's (:meth:`Timing.of`), scaled to the group: ``stable_timeout``,
    unless the scenario sets it, at least :data:`STABLE_TIMEOUT_ROUNDS` rounds (:func:`round_s`) of the
    initial members; ``wait_settled`` the option's when given, else on from ``wait_settled_from`` initial
    members (default :data:`WAIT_SETTLED_FROM`)."""
    members = len(plan.initial)
    given = options.get("wait_settled")
    wait = (
        bool(given)
        if given is not None
        else members >= int(options.get("wait_settled_from", WAIT_SETTLED_FROM))
    )
    timing = Timing.of(scenario, impl, plan, wait_settled=wait)
    if "stable_timeout" in scenario.model_fields_set:
        return timing
    bound = max(timing.stable_timeout, STABLE_TIMEOUT_ROUNDS * round_s(impl, members, delays))
    return dataclasses.replace(timing, stable_timeout=bound)


class SimClock:
    """A :class:`harness.run.clock.Clock` over virtual time (sleep: the calling task's)."""

    def __init__(self, sched: VirtualScheduler, epoch_ns: int) -> None:
        self.sched = sched
        self.epoch_ns = epoch_ns

    def monotonic(self) -> float:
        return self.sched.now_s()

    def time_ns(self) -> int:
        return self.epoch_ns + self.sched.now_ns

    def sleep(self, seconds: float) -> None:
        self.sched.sleep(seconds)


class _TeeSink(EventSink):
    """The unit's sink, also keeping what was written since the watch last read it."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.fresh: list[dict[str, Any]] = []

    def write(self, event: dict[str, Any]) -> None:
        super().write(event)
        self.fresh.append(event)


class _FeedTail:
    """What :class:`GroupWatch` reads: the events written since its last poll (already in time order)."""

    def __init__(self, sink: _TeeSink) -> None:
        self.sink = sink

    def poll(self) -> list[dict[str, Any]]:
        events, self.sink.fresh = self.sink.fresh, []
        return events


@dataclass
class UnitProgress:
    """What the driver reports while a unit runs."""

    unit: str
    phase: str = "starting"
    virtual_s: float = 0.0
    events: int = 0
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


class SimUnitRunner(Stage):
    """Runs one unit in virtual time (see the module contract)."""

    def __init__(
        self,
        scenario: Scenario,
        unit: Unit,
        delays: DelayModel,
        epoch_ns: int,
        factory: GroupFactory | None = None,
        options: dict[str, Any] | None = None,
        progress: Callable[[UnitProgress], None] | None = None,
    ) -> None:
        self.s = unit.case.scenario
        self.top = scenario
        self.unit = unit
        self.delays = delays
        self.epoch_ns = epoch_ns
        self.plan: Plan = make_plan(unit.case.scenario, unit.case.members, repetition=unit.repetition)
        self.partitions = unit.case.partitions
        self.sched = VirtualScheduler()
        self.clock = SimClock(self.sched, epoch_ns)
        self.events_dir = unit.dir / "events"
        self.sink = _TeeSink(self.events_dir / "sim.jsonl")
        self.watch = GroupWatch(self.events_dir, self.partitions, clock=self.clock)
        self.watch.tail = _FeedTail(self.sink)  # type: ignore[assignment]
        self.history = self._writer("nemesis", Role.NEMESIS)
        self.topic = SimTopic(self.sched, self.s.topic.name, self.partitions)
        rng = delays.rng()
        rng.seed(delays.seed * 1_000_003 + unit.repetition)
        self.ctx = SimContext(
            sched=self.sched,
            delays=delays,
            scenario=self.s,
            members=unit.case.members,
            history=self._writer,
            rng=rng,
            unit=unit.context,
            options=dict(options or {}),
            topic=self.topic,
        )
        self.group: SimGroup = (factory or group_factory(unit.impl))(self.ctx)
        self.producer = SimProducer(
            self.sched, self.topic, delays, self._writer("producer", Role.PRODUCER), self.s.workload.rate
        )
        self.action_ids = 0
        self.outcome: dict[str, Any] = {"unit": unit.key, **unit.context}
        self.progress = UnitProgress(unit.key)
        self._report = progress
        self._wall0 = time.monotonic()
        self.stable_at: float | None = None

    def _writer(self, source: str, role: str) -> History:
        return SimHistory(self.sched, self.sink, source, role, self.epoch_ns)

    # -- helpers --------------------------------------------------------------------------------
    def _mark(self, kind: str, **fields: Any) -> None:
        """A harness marker, as the runner writes it (source nemesis, role harness)."""
        self.history.emit(kind, ts_ns=self.clock.time_ns(), role=Role.HARNESS, **fields, **self.unit.context)

    def _phase(self, phase: str) -> None:
        self.progress.phase = phase
        self._tick()

    def _tick(self) -> None:
        p = self.progress
        p.virtual_s = self.sched.now_s()
        p.events = self.sink.events
        p.wall_s = time.monotonic() - self._wall0
        if self._report is not None:
            self._report(p)

    def _until(self, condition: Callable[[], bool] | None, timeout_s: float) -> bool:
        return self.watch.until(condition, timeout_s, each=self._tick)

    # -- the unit -------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run the unit to its end (see the module contract); the outcome as the runner returns it.
        A unit that cannot become stable, or a step that never takes effect, is ``failed``."""
        task = self.sched.spawn(self._drive, name=f"{self.unit.key}:driver")
        try:
            self._loop(task)
            self._phase("stopping")
            closer = self.sched.spawn(self._close, name=f"{self.unit.key}:close")
            self._loop(closer)
        finally:
            self.sched.close()
            self.sink.close()
        self.outcome["virtual_s"] = round(self.sched.now_s(), 3)
        self.outcome["events"] = self.sink.events
        return self.outcome

    def _loop(self, task: Task) -> None:
        while not task.done:
            self.sched.run(until_ns=self.sched.now_ns + NS_PER_S)
            self._tick()
        if isinstance(task.result, UnitFailed):
            self.outcome["failed"] = str(task.result)

    def _drive(self) -> UnitFailed | None:
        try:
            self._drive_unit()
        except UnitFailed as e:
            return e
        return None

    def _drive_unit(self) -> None:
        timing = unit_timing(self.s, self.unit.impl, self.plan, self.delays, dict(self.ctx.options))
        ending = interpret(self, timing)
        self.outcome.update(settled_at_end=ending.settled, drained=ending.drained)

    # -- the interpreter's stage ------------------------------------------------------------------
    @property
    def unit_key(self) -> str:
        return self.unit.key

    def start(self) -> None:
        self._mark(
            Kind.UNIT_START,
            topic=self.s.topic.name,
            group=self.s.group.id,
            partitions=self.partitions,
            members=self.plan.initial,
            simulated=True,
        )
        self.producer.start(self._uniform_s(self.delays.producer_start_spread_s))
        spread = self.delays.member_start_spread_s
        for name in self.plan.initial:  # a real run starts them at once; each process boots for its own time
            if spread > 0:
                self.sched.call_later(self._uniform_s(spread), self.group.start_member, name)
            else:
                self.group.start_member(name)

    def wait(self, timeout_s: float, condition: Callable[[], bool] | None) -> bool:
        return self._until(condition, timeout_s)

    def mark(self, kind: str, **fields: Any) -> None:
        self._mark(kind, **fields)

    def not_stable(self, timeout_s: float) -> str:
        """The runner's failure, with what to raise: the bound in virtual seconds, ten times over."""
        how = "the scenario's" if "stable_timeout" in self.s.model_fields_set else "scaled to the group"
        return (
            f"{super().not_stable(timeout_s)}; {timeout_s:g}s of virtual time is stable_timeout ({how}): "
            f"raise it, e.g. --set stable_timeout={10 * timeout_s:g}s"
        )

    def phase(self, name: str) -> None:
        self._phase(name)

    def stable(self, at: float) -> None:
        self.stable_at = at
        self.outcome["stable_virtual_s"] = round(at, 3)

    def step_late_s(self) -> float:
        """How late the runner performs a step (virtual seconds): ``runner_step_late_*`` of the model."""
        d = self.delays
        return self._drawn(d.runner_step_late_s, d.runner_step_late_per_member_s, d.runner_step_late_cv)

    def stop_producer(self) -> None:
        self.producer.stop()

    def _uniform_s(self, upper_s: float) -> float:
        """A time uniform over ``[0, upper_s]`` from the unit's random source; 0 and no draw when
        ``upper_s`` is 0 (as :func:`~harness.sim.cpu.gamma_draw` for a mean of 0)."""
        return self.ctx.rng.uniform(0.0, upper_s) if upper_s > 0 else 0.0

    def _boot_s(self) -> float:
        """A started member's boot time (virtual seconds): ``member_boot_*`` of the model."""
        d = self.delays
        return self._drawn(d.member_boot_s, d.member_boot_per_member_s, d.member_boot_cv)

    def _drawn(self, base_s: float, per_member_s: float, cv: float) -> float:
        """A time drawn from the unit's random source: gamma of mean ``base_s`` + ``per_member_s`` times the
        live members per client core (1 with ``client_cores`` 0) and coefficient of variation ``cv``
        (0: exactly the mean; a mean of 0: no draw)."""
        per_core = self.delays.per_core(len(self.group.members()))
        return gamma_draw(self.ctx.rng, base_s + per_member_s * per_core, cv)

    def perform(self, step: Step) -> None:
        """One step: the nemesis pair around the simulated action (module contract)."""
        self.action_ids += 1
        pair = ActionPair(step, self.action_ids, self.history, self.clock.time_ns, self.unit.context)
        pair.invoke()
        kind, group = step.kind, self.group
        if kind not in SIMULATED_ACTIONS:
            pair.skipped(NOT_SIMULATED)
            return
        if kind in JOIN_ACTIONS:
            since = self.clock.time_ns()
            if step.member_kind not in (None, self.unit.impl) or step.props:
                pair.skipped(f"{NOT_SIMULATED}: a member of another kind or with properties (migration)")
                return
            for n in step.targets:  # a join's: released (held); a start_member's: booted (module contract)
                after = (
                    self._uniform_s(self.delays.member_release_poll_s) if kind == "join" else self._boot_s()
                )
                if after > 0:
                    self.sched.call_later(after, group.start_member, n)
                else:
                    group.start_member(n)
            ready = self.watch.ready  # as the real context reads it: the member's latest `ready` event
            ok = self._until(
                lambda: all(ready.get(n, 0) >= since for n in step.targets), self.s.stable_timeout
            )
            if not ok:
                raise UnitFailed(f"{self.unit.key}: {','.join(step.targets)} not ready to join")
            pair.complete(ready_ns={n: ready[n] for n in step.targets})
            return
        if kind in DOWN_ACTIONS and kind != "crash":
            for n in step.targets:
                group.stop_member(n)
            targets = set(step.targets)
            self._until(lambda: not (targets & set(group.members())), STOP_TIMEOUT_S)
            pair.complete()
            return
        for n in step.targets:  # crash
            group.crash_member(n)
        pair.complete()

    def _close(self) -> None:
        self.group.close()
        self._until(lambda: not self.group.members(), CLOSE_TIMEOUT_S)
