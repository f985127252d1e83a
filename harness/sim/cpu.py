"""The members' shared client CPU in a simulated unit.

Contract
--------
:class:`ClientCpu` runs client-side work (Python work of a member's client library: building and
parsing requests, callbacks) on ``DelayModel.client_cores`` cores. First come first served (the
default): a booking starts on the core that frees first, at the earliest now, and the caller sleeps
until it ends; :meth:`ClientCpu.reserve` books ahead (the end is known when the work is issued). With
``random_order`` (the legacy members': ``DelayModel.zk_client_random_order``) a core that frees serves
one of the waiting tasks drawn at random from the unit's random source, each with the probability of its
``share`` (a weight the caller gives, 1 by default: uniform) among the waiting ones' shares: the end is
known only when the task's turn comes, so such work is spent with :meth:`ClientCpu.work` (a killed task
gives back its core or its place). With ``prioritized`` (the coordinator members':
``DelayModel.kafka_sync_answer_priority``) a core that frees serves the waiting task of the highest
``priority`` the caller gives, first come first served among equals, again spent with :meth:`work`
(nothing running is preempted). With ``client_cores`` 0 every member has a core of its own (work
takes its own time, never waits). Every cost is scaled by the model's ``jitter`` from the unit's random
source (``rng``, which other parts of the unit also draw from).
"""

from __future__ import annotations

from typing import Any

from harness.sim.clock import NS_PER_S, Event, VirtualScheduler, to_ns
from harness.sim.model import DelayModel

__all__ = ["ClientCpu", "gamma_draw"]


class ClientCpu:
    """The members' client-side work on ``cores`` shared cores (0: unlimited), each cost scaled by the
    model's jitter; served first come first served, or with ``random_order`` a waiting task drawn at
    random by its share each time a core frees, or with ``prioritized`` the waiting task of the highest
    priority (first come first served among equals)."""

    def __init__(
        self,
        sched: VirtualScheduler,
        delays: DelayModel,
        rng: Any,
        random_order: bool = False,
        prioritized: bool = False,
    ) -> None:
        self.sched = sched
        self.delays = delays
        self.rng = rng
        self.random_order = random_order
        self.prioritized = prioritized and not random_order
        self._cores = max(0, delays.client_cores)
        self._free = [0] * self._cores  # first come first served: when each core frees
        self._busy = 0  # queued (random order, prioritized): cores in use
        #: queued: the work waiting, in arrival order, with its share and its priority
        self._waiting: list[tuple[Event, float, int]] = []

    @property
    def books_ahead(self) -> bool:
        """True when :meth:`reserve` may book work ahead (first come first served, or unlimited cores):
        when the work ends is known when it is booked. In random order or prioritized it is not (a later
        request may be served first): callers spend it with :meth:`work`."""
        return not self._cores or not (self.random_order or self.prioritized)

    def cost(self, seconds: float) -> float:
        j = self.delays.jitter
        return seconds * self.rng.uniform(1 - j, 1 + j) if j > 0 and seconds > 0 else seconds

    def reserve(self, seconds: float) -> int:
        """Book ``seconds`` of client CPU from now on the first free core: the virtual ns it ends. Only
        when :attr:`books_ahead`."""
        if not self.books_ahead:
            raise RuntimeError("client work served out of order cannot be booked ahead: use work()")
        seconds = self.cost(seconds)
        now = self.sched.now_ns
        free = self._free
        if not free:
            return now + to_ns(seconds)
        i = min(range(len(free)), key=free.__getitem__)
        free[i] = max(now, free[i]) + to_ns(seconds)
        return free[i]

    def work(self, seconds: float, share: float = 1.0, priority: int = 0) -> None:
        """Spend ``seconds`` of client CPU in the calling task (waiting for a core first when all are
        busy: in random order, a core that frees serves one of the waiting tasks drawn at random, with
        the probability of its ``share`` (> 0) among the waiting tasks' shares; prioritized, the first
        waiting task of the highest ``priority``)."""
        if self.books_ahead:
            end = self.reserve(seconds)
            self.sched.sleep((end - self.sched.now_ns) / NS_PER_S)
            return
        cost = self.cost(seconds)
        place: tuple[Event, float, int] | None = None
        if self._busy < self._cores:
            self._busy += 1
        else:
            place = (Event(self.sched), share, priority)
            self._waiting.append(place)
        try:
            if place is not None:
                place[0].wait()
            self.sched.sleep(cost)
        finally:  # also when the task is killed (a crashed member): the core is not lost
            if place is None or place[0].is_set():
                self._hand_over()
            else:
                self._waiting.remove(place)

    def _hand_over(self) -> None:
        """The core the caller held goes to a waiting task (drawn at random by share, or the first of the
        highest priority), else it is free."""
        waiting = self._waiting
        if not waiting:
            self._busy -= 1
            return
        if self.prioritized:
            top = max(p for _, _, p in waiting)
            waiting.pop(next(i for i, (_, _, p) in enumerate(waiting) if p == top))[0].set()
            return
        i = self._draw(waiting)
        waiting[i], waiting[-1] = waiting[-1], waiting[i]
        waiting.pop()[0].set()

    def _draw(self, waiting: list[tuple[Event, float, int]]) -> int:
        """The index of the waiting task served next: uniform when every share is 1 (one draw of
        ``randrange``), else with the probability of its share."""
        if all(w == 1.0 for _, w, _ in waiting):
            return self.rng.randrange(len(waiting))
        x = self.rng.random() * sum(w for _, w, _ in waiting)
        for i, (_, w, _) in enumerate(waiting):
            x -= w
            if x < 0:
                return i
        return len(waiting) - 1


def gamma_draw(rng: Any, mean: float, cv: float) -> float:
    """A time (seconds) from a gamma distribution of ``mean`` and coefficient of variation ``cv`` (shape
    1 / cv²) drawn from ``rng``, the unit's random source: the model's drawn waits and delays. ``cv`` 0 is
    exactly the mean, and a mean of 0 or less is 0 (no draw either way)."""
    if mean <= 0 or cv <= 0:
        return max(0.0, mean)
    shape = 1 / (cv * cv)
    return rng.gammavariate(shape, mean / shape)
