# pyright: strict
"""Virtual time: a discrete-event loop whose tasks are greenlets.

Contract
--------
* :class:`VirtualScheduler` owns the virtual clock (:attr:`~VirtualScheduler.now_ns`, integer
  nanoseconds from ``start_ns``). Nothing in it reads the wall clock or sleeps for real.
* Callbacks (:meth:`~VirtualScheduler.call_at`, :meth:`~VirtualScheduler.call_later`) run on the loop
  in time order; two at the same instant run in the order they were scheduled (a sequence number
  breaks ties), so a simulation is deterministic given its inputs and its seed.
* Tasks (:meth:`~VirtualScheduler.spawn`) are greenlets: straight-line blocking code (the legacy
  rebalance attempt, a simulated client) runs unchanged, and where it would block it calls
  :meth:`~VirtualScheduler.sleep` or waits on an :class:`Event`, which hands control back to the loop
  until its virtual time comes. ``sleep`` and ``Event.wait`` may only be called from a task.
* An exception escaping a task or a callback stops :meth:`~VirtualScheduler.run` and is raised from it
  as :class:`SimulationError` naming the task: a simulation never goes on after a defect.
* A cancelled timer (:meth:`Timer.cancel`) never runs. A task blocked when the run ends stays blocked;
  :meth:`~VirtualScheduler.close` kills every live task (their ``finally`` blocks run).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from greenlet import GreenletExit, getcurrent, greenlet

__all__ = ["Event", "SimulationError", "Task", "Timer", "VirtualScheduler", "next_tick", "to_ns"]

NS_PER_S = 1_000_000_000


def to_ns(seconds: float) -> int:
    """``seconds`` as whole virtual nanoseconds (rounded)."""
    return round(seconds * NS_PER_S)


def next_tick(anchor_ns: int, now_ns: int, period_ns: int) -> int:
    """The first instant after ``now_ns`` on the grid ``anchor_ns + k * period_ns`` (any integer k): where
    a chain of fixed periods begun at ``anchor_ns`` (polls, fetch waits, a server's ticks) next ends."""
    return anchor_ns + ((now_ns - anchor_ns) // period_ns + 1) * period_ns


class SimulationError(RuntimeError):
    """A task or callback of the simulation raised; the simulation stopped."""


class Timer:
    """A scheduled callback; :meth:`cancel` before it runs and it never does."""

    __slots__ = ("cancelled", "fn", "args", "when_ns")

    def __init__(self, when_ns: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.when_ns = when_ns
        self.fn = fn
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Task:
    """A greenlet run by the scheduler; ``name`` appears in errors."""

    __slots__ = ("name", "glet", "done", "result")

    def __init__(self, name: str, glet: greenlet) -> None:
        self.name = name
        self.glet = glet
        self.done = False
        self.result: Any = None


class VirtualScheduler:
    """The event loop (see the module contract)."""

    def __init__(self, start_ns: int = 0) -> None:
        self._now = start_ns
        self._heap: list[tuple[int, int, Timer]] = []
        self._seq = itertools.count()
        self._hub: greenlet | None = None
        self._tasks: dict[greenlet, Task] = {}
        self._failure: BaseException | None = None
        self._failed_in = ""

    # -- time -------------------------------------------------------------------------------------------------
    @property
    def now_ns(self) -> int:
        """Virtual nanoseconds."""
        return self._now

    @property
    def now_ms(self) -> int:
        """Virtual milliseconds (what the GroupCoordinator machine takes)."""
        return self._now // 1_000_000

    def now_s(self) -> float:
        """Virtual seconds as a float (what legacy_zk's ``clock`` returns)."""
        return self._now / NS_PER_S

    # -- callbacks --------------------------------------------------------------------------------------------
    def call_at(self, when_ns: int, fn: Callable[..., Any], *args: Any) -> Timer:
        """Run ``fn(*args)`` on the loop at ``when_ns`` (not before now)."""
        t = Timer(max(when_ns, self._now), fn, args)
        heapq.heappush(self._heap, (t.when_ns, next(self._seq), t))
        return t

    def call_later(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Run ``fn(*args)`` ``seconds`` of virtual time from now."""
        return self.call_at(self._now + round(seconds * NS_PER_S), fn, *args)

    # -- tasks ------------------------------------------------------------------------------------------------
    def spawn(self, fn: Callable[..., Any], *args: Any, name: str = "task", delay_s: float = 0.0) -> Task:
        """Start ``fn(*args)`` as a task ``delay_s`` from now."""

        def body(_start: Any = None) -> None:
            try:
                task.result = fn(*args)
            except GreenletExit:
                pass
            except BaseException as e:  # noqa: BLE001 - reported by run()
                if self._failure is None:
                    self._failure, self._failed_in = e, task.name
            finally:
                task.done = True
                self._tasks.pop(glet, None)

        glet = greenlet(body)
        task = Task(name, glet)
        self._tasks[glet] = task
        self.call_later(delay_s, self.resume, glet)
        return task

    def kill(self, task: Task) -> None:
        """End ``task`` now (a killed process): its ``finally`` blocks run, it never resumes. Not the
        calling task itself."""
        glet = task.glet
        if glet is getcurrent():
            raise RuntimeError("a task cannot kill itself")
        if not glet:  # not started yet (or dead): it never runs
            task.done = True
            self._tasks.pop(glet, None)
            return
        glet.parent = getcurrent()
        glet.throw(GreenletExit)

    def current(self) -> Task:
        """The running task (an error on the loop itself)."""
        task = self._tasks.get(getcurrent())
        if task is None:
            raise RuntimeError("not inside a simulation task")
        return task

    def in_task(self) -> bool:
        return getcurrent() in self._tasks

    def resume(self, glet: greenlet, value: Any = None) -> None:
        """Switch to a blocked task now (used by the loop and by :class:`Event`; not for simulation code).
        A task killed before it started never starts."""
        if not glet and glet not in self._tasks:
            return
        if not glet.dead:
            glet.parent = getcurrent()  # the loop: a task switches back to it when it blocks or ends
            glet.switch(value)

    def block(self) -> Any:
        """Hand control back to the loop until something resumes this task; returns the resume value."""
        glet = getcurrent()
        if glet not in self._tasks or glet.parent is None:
            raise RuntimeError("sleep/wait called outside a simulation task")
        return glet.parent.switch()

    def sleep(self, seconds: float) -> None:
        """Block the calling task for ``seconds`` of virtual time; a positive sleep lasts at least 1 ns (the
        clock's resolution: rounded to 0, a loop that sleeps what is left of a deadline in float seconds
        would never reach it)."""
        if not self.in_task():
            raise RuntimeError("sleep/wait called outside a simulation task")
        ns = max(1, round(seconds * NS_PER_S)) if seconds > 0 else 0
        self.call_at(self._now + ns, self.resume, getcurrent())
        self.block()

    # -- the loop ---------------------------------------------------------------------------------------------
    def run(self, until_ns: int | None = None) -> None:
        """Run callbacks and tasks in time order until nothing is scheduled or the next is after
        ``until_ns`` (then the clock stands at ``until_ns``)."""
        heap = self._heap
        while heap:
            when, _, t = heap[0]
            if until_ns is not None and when > until_ns:
                break
            heapq.heappop(heap)
            if t.cancelled:
                continue
            self._now = when
            try:
                t.fn(*t.args)
            except BaseException as e:  # noqa: BLE001
                if self._failure is None:
                    self._failure, self._failed_in = e, getattr(t.fn, "__name__", "callback")
            if self._failure is not None:
                e, where = self._failure, self._failed_in
                self._failure = None
                raise SimulationError(f"{where}: {type(e).__name__}: {e}") from e
        if until_ns is not None and until_ns > self._now:
            self._now = until_ns

    def pending(self) -> int:
        """Scheduled callbacks not yet run (cancelled ones included until popped)."""
        return len(self._heap)

    def close(self) -> None:
        """Kill every live task (their ``finally`` blocks run) and drop what is scheduled."""
        for glet in list(self._tasks):
            if not glet.dead:
                glet.parent = getcurrent()
                glet.throw(GreenletExit)
        self._tasks.clear()
        self._heap.clear()


class Event:
    """A flag tasks can wait on in virtual time (``threading.Event`` for the simulation)."""

    def __init__(self, sched: VirtualScheduler) -> None:
        self._sched = sched
        self._set = False
        self._waiters: list[tuple[greenlet, Timer | None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Set the flag and wake every waiter (on the loop, now, in the order they waited)."""
        if self._set:
            return
        self._set = True
        waiters, self._waiters = self._waiters, []
        for glet, timer in waiters:
            if timer is not None:
                timer.cancel()
            self._sched.call_at(self._sched.now_ns, self._sched.resume, glet, True)

    def clear(self) -> None:
        self._set = False

    def wait(self, timeout: float | None = None) -> bool:
        """Block the calling task until set or ``timeout`` virtual seconds pass; True when set."""
        if self._set:
            return True
        if not self._sched.in_task():
            raise RuntimeError("sleep/wait called outside a simulation task")
        glet = getcurrent()
        timer = None
        if timeout is not None:
            timer = self._sched.call_later(max(0.0, timeout), self._timeout, glet)
        self._waiters.append((glet, timer))
        return bool(self._sched.block())

    def _timeout(self, glet: greenlet) -> None:
        for i, (g, _) in enumerate(self._waiters):
            if g is glet:
                del self._waiters[i]
                self._sched.resume(glet, False)
                return
