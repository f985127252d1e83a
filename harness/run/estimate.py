"""How long a run of a scenario will take, estimated from its plan before anything starts.

Contract
--------
* A unit's estimate is the sum of its phases as :func:`harness.run.interpreter.interpret` runs them:
  ``startup`` (an allowance for starting and stopping the unit's cluster and members,
  :data:`STARTUP_ALLOWANCE_S`: an assumption, not a measurement), ``stable`` (the group must be settled
  for ``settle_window`` before the timeline starts: its least), ``timeline`` (the time of the plan's last step,
  the repetition's ``timeline_jitter`` included), ``settle`` (after a last step: the members' session timeout, which a
  fault's effect can lag by, then ``settle_window``) and ``drain`` (its bound, ``drain``).
* :func:`run_estimate` is one :class:`UnitEstimate` per unit of the run (every case, implementation and
  repetition, as ``run`` orders them); the run's estimate is their total. The analysis after the units
  is not counted.
* Pure: no processes, no clocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.run.interpreter import detection_s
from harness.run.plan import make_plan
from harness.scenario.loading import Case
from harness.scenario.model import Scenario

#: Seconds allowed per unit for starting and stopping its cluster and member processes (an assumption
#: stated in the estimate's output, not a measurement).
STARTUP_ALLOWANCE_S = 10.0


@dataclass(frozen=True)
class UnitEstimate:
    """One unit's phases in seconds (see the module contract)."""

    case: str
    implementation: str
    repetition: int
    startup: float
    stable: float
    timeline: float
    settle: float
    drain: float

    @property
    def total(self) -> float:
        return self.startup + self.stable + self.timeline + self.settle + self.drain


def unit_estimate(case: Case, implementation: str, repetition: int) -> UnitEstimate:
    """The estimate of ``implementation``'s unit of ``case`` in repetition ``repetition``."""
    s = case.scenario
    plan = make_plan(s, s.group.members_for(implementation), repetition=repetition)
    detect = detection_s(s, implementation, plan) if plan.steps else 0.0
    return UnitEstimate(
        case=case.label,
        implementation=implementation,
        repetition=repetition,
        startup=STARTUP_ALLOWANCE_S,
        stable=s.settle_window,
        timeline=plan.end,
        settle=detect + s.settle_window,
        drain=s.drain,
    )


def run_estimate(scenario: Scenario, cases: list[Case]) -> list[UnitEstimate]:
    """Every unit's estimate, in ``run``'s order: case, then repetition, then implementation."""
    return [
        unit_estimate(case, impl, rep)
        for case in cases
        for rep in range(scenario.repetitions)
        for impl in scenario.implementations
    ]
