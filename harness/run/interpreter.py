# pyright: strict
"""The one interpreter of a unit's plan, for real runs and for the simulator.

Contract
--------
:func:`interpret` runs the phases of one unit on a :class:`Stage` (what the unit runs on: a real rig
with real processes, or the simulator's group in virtual time), in this order:

1. **start**: :meth:`Stage.start` starts the cluster, writes ``unit_start``, starts the producer and
   the initial members;
2. **stable**: waits up to ``stable_timeout`` until :func:`group_stable` holds (every initial member
   live, none rebalancing, the view settled for ``settle_window``); a member whose process ended
   first (:meth:`Stage.start_failure`) or the timeout fails the unit (:class:`UnitFailed`); then
   writes ``stable`` and samples ``stable``;
3. **steps**: performs each step at ``stable + at`` (+ :meth:`Stage.step_late_s`), with
   :meth:`Stage.before_wait` before waiting for it and :meth:`Stage.after_step` after it; with
   :attr:`Timing.wait_settled` it first waits until the group settled since one detection time after
   the previous step (never acting on an unsettled group);
4. **settle**: no earlier than one detection time (:func:`detection_s`) after the last step, until
   the view settled, bounded by ``stable_timeout`` + that; samples and writes ``settling_end``;
5. **drain**: stops the producer, waits up to ``drain`` until every produced record was processed,
   writes ``drained``.

Time comes only from the stage's clock and waits only through :meth:`Stage.wait`, so the same code
runs against wall-clock time and virtual time. The stage writes the history events; this module
decides when.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.kernel.events import Kind
from harness.run.clock import Clock
from harness.run.plan import Plan, Step
from harness.run.rig import UnitFailed
from harness.run.tail import GroupWatch
from harness.scenario.model import Scenario

__all__ = ["Ending", "Stage", "Timing", "UnitFailed", "detection_s", "group_stable", "interpret"]


@dataclass(frozen=True)
class Timing:
    """The bounds of one unit's phases (seconds; the scenario's keys) and how long a fault's effect
    can lag (``detect_s``, :func:`detection_s`)."""

    stable_timeout: float
    settle_window: float
    drain: float
    detect_s: float
    wait_settled: bool = False

    @classmethod
    def of(cls, scenario: Scenario, impl: str, plan: Plan, wait_settled: bool = False) -> Timing:
        """The unit's timing from its case's scenario."""
        return cls(
            scenario.stable_timeout,
            scenario.settle_window,
            scenario.drain,
            detection_s(scenario, impl, plan),
            wait_settled,
        )


@dataclass(frozen=True)
class Ending:
    """How a unit's timeline ended: the group settled after the last step, every record processed."""

    settled: bool
    drained: bool


def detection_s(scenario: Scenario, impl: str, plan: Plan) -> float:
    """How long a fault's effect can lag: the session timeout of the members' kind (a consumer unit's: the
    broker's ``group.consumer.session_timeout_ms``). After a migration
    the group may end with either kind (or both): the larger session timeout among the kinds present
    after the last step (the unit's implementation when none is left)."""
    g = scenario.group
    timeout_ms = {
        "legacy_zk": g.legacy_zk.zookeeper_session_timeout_ms,
        "consumer": g.consumer.session_timeout_ms,
    }
    kinds = {k or impl for k in plan.final_kinds.values()} or {impl}
    return max(timeout_ms.get(k, g.coordinator.session_timeout_ms) for k in kinds) / 1000


def group_stable(watch: GroupWatch, members: set[str], now_ns: int, settle_window: float) -> bool:
    """The stable condition: every one of ``members`` live, none of them rebalancing, and the view
    settled for ``settle_window`` at ``now_ns``."""
    view = watch.view
    return members <= view.live and not (members & view.rebalancing) and view.settled(now_ns, settle_window)


class Stage(ABC):
    """What a unit runs on; :func:`interpret` calls these in the order of the module contract. The
    hooks with a body do nothing by default."""

    clock: Clock
    watch: GroupWatch
    plan: Plan

    @property
    @abstractmethod
    def unit_key(self) -> str:
        """The unit's key (in failure messages)."""

    @abstractmethod
    def start(self) -> None:
        """Start the cluster, write ``unit_start``, start the producer and the initial members (the
        interpreter enters phase ``joining`` after it)."""

    @abstractmethod
    def wait(self, timeout_s: float, condition: Callable[[], bool] | None) -> bool:
        """Observe the histories until ``condition()`` holds (True) or ``timeout_s`` passed (False;
        always so with ``condition`` None)."""

    @abstractmethod
    def mark(self, kind: str, **fields: Any) -> None:
        """Write a harness marker (``stable``, ``settling_end``, ``drained``)."""

    @abstractmethod
    def perform(self, step: Step) -> None:
        """Carry out one step (its ``invoke`` / ``complete`` | ``skipped`` pair)."""

    @abstractmethod
    def stop_producer(self) -> None:
        """Stop producing (the drain starts)."""

    def phase(self, name: str) -> None:
        """The unit entered phase ``name`` (progress only)."""
        return None

    def sample(self, label: str) -> None:
        """Sample the coordination service at the window edge ``label`` (ZooKeeper's mntr)."""
        return None

    def start_failure(self) -> str | None:
        """Why the unit cannot become stable already (an initial member's process ended), or None."""
        return None

    def not_stable(self, timeout_s: float) -> str:
        """The failure when the group did not become stable within ``timeout_s``."""
        return f"{self.unit_key}: group not stable after {timeout_s:g}s ({self.watch.view.summary()})"

    def stable(self, at: float) -> None:
        """The group first became stable at monotonic ``at`` (before ``stable`` is written)."""
        return None

    def step_late_s(self) -> float:
        """How late a step is performed after its time."""
        return 0.0

    def before_wait(self, step: Step, due: float) -> None:
        """Before waiting until ``due`` (monotonic) to perform ``step``."""
        return None

    def after_step(self, step: Step) -> None:
        """After ``step`` was performed."""
        return None

    def settled(self) -> None:
        """After ``settling_end`` was written."""
        return None

    def drained(self) -> None:
        """After ``drained`` was written."""
        return None


def interpret(stage: Stage, timing: Timing) -> Ending:
    """Run one unit's plan on ``stage`` (the module contract); :class:`UnitFailed` when it cannot."""
    clock, watch, plan = stage.clock, stage.watch, stage.plan
    view = watch.view
    stage.start()
    stage.phase("joining")
    initial = set(plan.initial)
    became_stable = stage.wait(
        timing.stable_timeout,
        lambda: (
            stage.start_failure() is not None
            or group_stable(watch, initial, clock.time_ns(), timing.settle_window)
        ),
    )
    failure = stage.start_failure()
    if failure is not None:
        raise UnitFailed(failure)
    if not became_stable:
        raise UnitFailed(stage.not_stable(timing.stable_timeout))
    stable_at = clock.monotonic()
    stage.stable(stable_at)
    stage.mark(Kind.STABLE)
    stage.sample("stable")
    stage.phase("timeline")
    last: float | None = None
    for step in plan.steps:
        due = stable_at + step.at + stage.step_late_s()
        stage.before_wait(step, due)
        stage.wait(max(0.0, due - clock.monotonic()), None)
        if timing.wait_settled and last is not None:
            since = last + timing.detect_s
            if not stage.wait(
                timing.stable_timeout + timing.detect_s,
                lambda since=since: (
                    clock.monotonic() >= since
                    and not view.rebalancing
                    and view.settled(clock.time_ns(), timing.settle_window)
                ),
            ):
                raise UnitFailed(
                    f"{stage.unit_key}: not settled {timing.stable_timeout:g}s after the step at {last:g}s"
                )
        last = clock.monotonic()
        stage.perform(step)
        stage.after_step(step)
    stage.phase("settling")
    # A fault's effect can lag by up to one session timeout (an expiry noticed on the next request, a
    # crash noticed when the session ends): look no earlier than that after the last step.
    earliest = clock.monotonic() + (timing.detect_s if plan.steps else 0.0)
    settled = stage.wait(
        timing.stable_timeout + timing.detect_s,
        lambda: clock.monotonic() >= earliest and view.settled(clock.time_ns(), timing.settle_window),
    )
    stage.sample("settling_end")
    stage.mark(Kind.SETTLING_END, settled=settled)
    stage.settled()
    stage.phase("draining")
    stage.stop_producer()
    drained = stage.wait(timing.drain, lambda: watch.produced <= watch.processed)
    watch.observe()
    stage.mark(Kind.DRAINED, all_processed=drained)
    stage.drained()
    return Ending(settled, drained)
