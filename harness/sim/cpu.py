"""The members' shared client CPU in a simulated unit.

Contract
--------
:class:`ClientCpu` books client-side work (Python work of a member's client library: building and
parsing requests, callbacks) on ``DelayModel.client_cores`` cores, first come first served: a booking
starts on the core that frees first, at the earliest now, and the caller sleeps until it ends. With
``client_cores`` 0 every member has a core of its own (work takes its own time, never waits). Every cost
is scaled by the model's ``jitter`` from the unit's random source (``rng``, which other parts of the
unit also draw from).
"""

from __future__ import annotations

from typing import Any

from harness.sim.clock import NS_PER_S, VirtualScheduler, to_ns
from harness.sim.model import DelayModel

__all__ = ["ClientCpu", "gamma_draw"]


class ClientCpu:
    """The members' client-side work: ``cores`` cores shared first come first served (0: unlimited),
    each cost scaled by the model's jitter."""

    def __init__(self, sched: VirtualScheduler, delays: DelayModel, rng: Any) -> None:
        self.sched = sched
        self.delays = delays
        self.rng = rng
        self._free = [0] * max(0, delays.client_cores)

    def cost(self, seconds: float) -> float:
        j = self.delays.jitter
        return seconds * self.rng.uniform(1 - j, 1 + j) if j > 0 and seconds > 0 else seconds

    def reserve(self, seconds: float) -> int:
        """Book ``seconds`` of client CPU from now on the first free core: the virtual ns it ends."""
        seconds = self.cost(seconds)
        now = self.sched.now_ns
        free = self._free
        if not free:
            return now + to_ns(seconds)
        i = min(range(len(free)), key=free.__getitem__)
        free[i] = max(now, free[i]) + to_ns(seconds)
        return free[i]

    def work(self, seconds: float) -> None:
        """Spend ``seconds`` of client CPU in the calling task."""
        end = self.reserve(seconds)
        self.sched.sleep((end - self.sched.now_ns) / NS_PER_S)


def gamma_draw(rng: Any, mean: float, cv: float) -> float:
    """A time (seconds) from a gamma distribution of ``mean`` and coefficient of variation ``cv`` (shape
    1 / cv²) drawn from ``rng``, the unit's random source: the model's drawn waits and delays. ``cv`` 0 is
    exactly the mean, and a mean of 0 or less is 0 (no draw either way)."""
    if mean <= 0 or cv <= 0:
        return max(0.0, mean)
    shape = 1 / (cv * cv)
    return rng.gammavariate(shape, mean / shape)
