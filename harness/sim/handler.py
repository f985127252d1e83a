"""kazoo-handler primitives in virtual time, so legacy_zk's own classes run unchanged in the simulator.

Contract
--------
:class:`SimHandler` offers what :mod:`legacy_zk.listeners` (``EventThread``), :mod:`legacy_zk.watches`
(``RebalanceSignal``) and the member wiring ask of a kazoo handler: ``event_object``, ``queue_impl``,
``lock_object``, ``rlock_object``, ``spawn`` and ``sleep_func``, all on one
:class:`~harness.sim.clock.VirtualScheduler`. Blocking calls (``Event.wait``, ``Queue.get``,
``Lock.acquire``) must come from a simulation task; they block it in virtual time. Locks are
greenlet-reentrant (an RLock) or not (a Lock); waiters are served first come, first served.
A task spawned with :meth:`SimHandler.spawn` is remembered in :attr:`SimHandler.tasks` until it ends,
so an owner can kill them all (a crashed process).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from greenlet import getcurrent

from harness.sim.clock import Event, Task, VirtualScheduler

__all__ = ["SimEvent", "SimHandler", "SimLock", "SimQueue"]


class SimEvent:
    """``threading.Event`` in virtual time (set, clear, is_set, wait with a timeout)."""

    def __init__(self, sched: VirtualScheduler) -> None:
        self._sched = sched
        self._ev = Event(sched)

    def is_set(self) -> bool:
        return self._ev.is_set()

    def set(self) -> None:
        self._ev.set()

    def clear(self) -> None:
        if self._ev.is_set():
            self._ev = Event(self._sched)

    def wait(self, timeout: float | None = None) -> bool:
        return self._ev.wait(timeout)


class SimQueue:
    """An unbounded FIFO queue; ``get`` blocks the calling task until an item is there."""

    def __init__(self, sched: VirtualScheduler) -> None:
        self._sched = sched
        self._items: deque[Any] = deque()
        self._ready = Event(sched)

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._ready.set()

    def get(self) -> Any:
        while not self._items:
            self._ready = Event(self._sched) if self._ready.is_set() else self._ready
            self._ready.wait()
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)


class SimLock:
    """A lock of simulation tasks; ``reentrant`` makes it an RLock."""

    def __init__(self, sched: VirtualScheduler, reentrant: bool) -> None:
        self._sched = sched
        self._reentrant = reentrant
        self._owner: Any = None
        self._depth = 0
        self._waiters: deque[Event] = deque()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        me = getcurrent()
        if self._owner is me and self._reentrant:
            self._depth += 1
            return True
        if self._owner is None and not self._waiters:
            self._owner, self._depth = me, 1
            return True
        if not blocking:
            return False
        ev = Event(self._sched)
        self._waiters.append(ev)
        if not ev.wait(timeout if timeout is not None and timeout >= 0 else None):
            self._waiters.remove(ev)
            return False
        self._owner, self._depth = me, 1  # handed over by release()
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        self._owner = None
        if self._waiters:
            self._owner = "handover"  # nobody else may take it before the first waiter runs
            self._waiters.popleft().set()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class SimHandler:
    """The handler primitives (see the module contract); ``name`` prefixes task names."""

    def __init__(self, sched: VirtualScheduler, name: str) -> None:
        self.sched = sched
        self.name = name
        self.tasks: list[Task] = []

    def event_object(self) -> SimEvent:
        return SimEvent(self.sched)

    def queue_impl(self) -> SimQueue:
        return SimQueue(self.sched)

    def lock_object(self) -> SimLock:
        return SimLock(self.sched, reentrant=False)

    def rlock_object(self) -> SimLock:
        return SimLock(self.sched, reentrant=True)

    def spawn(self, fn: Callable[..., Any], *args: Any) -> Task:
        task = self.sched.spawn(fn, *args, name=f"{self.name}:{getattr(fn, '__name__', 'task')}")
        self.tasks = [t for t in self.tasks if not t.done]
        self.tasks.append(task)
        return task

    def sleep_func(self, seconds: float) -> None:
        self.sched.sleep(seconds)
