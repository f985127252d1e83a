# pyright: strict
"""Watching a unit while it runs: the clock, what the histories say, progress, and waiting on both.

* :class:`Clock` is the runner's only source of time (:class:`SystemClock` in a run; unit tests pass
  a fake one whose ``sleep`` advances it).
* :class:`Observer` folds every new event of the unit's JSON-lines files (:class:`HistoryTail`) into
  a :class:`~harness.kernel.ownership.GroupView` and keeps what the runner and the nemesis ask about:
  each member's latest ``ready`` time, produced and processed records, legacy ZooKeeper sessions.
* :class:`Progress` turns the observer's state and the runner's phase into the ``progress`` callback's
  dict (:class:`harness.run.runner.RunOptions`).
* :class:`Waiter` observes for up to a bound and returns as soon as a condition holds (polling the
  files every 0.1 s: the members write them, nothing signals the runner).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.kernel.events import Kind, Role
from harness.kernel.ownership import GroupView
from harness.run.tail import HistoryTail

#: how often the histories are read while waiting (seconds)
POLL_S = 0.1


class Clock(Protocol):
    """Monotonic seconds for deadlines, wall-clock ns for events and ``settled``, and sleeping."""

    def monotonic(self) -> float: ...

    def time_ns(self) -> int: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock (:mod:`time`)."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time_ns(self) -> int:
        return time.time_ns()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class Observer:
    """What the unit's histories (every ``*.jsonl`` under ``events_dir``) said so far."""

    def __init__(self, events_dir: Path, partitions: int) -> None:
        self.tail = HistoryTail(events_dir)
        self.view = GroupView(partitions=partitions)
        self.ready: dict[str, int] = {}  # member -> ts_ns of its latest ready event
        self.produced: set[tuple[int, int]] = set()
        self.processed: set[tuple[int, int]] = set()
        self.registrations: dict[str, tuple[int, str]] = {}  # legacy member -> ZooKeeper session

    def poll(self) -> None:
        """Read and fold every event written since the last poll."""
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


@dataclass
class Progress:
    """Reports a unit's phase and counts to ``callback`` (nothing when it is None)."""

    callback: Callable[[dict[str, Any]], None] | None
    run_dir: Path
    unit: str
    context: dict[str, Any] = field(default_factory=dict[str, Any])  # case, impl, repetition
    phase: str = "starting"

    def report(self, obs: Observer) -> None:
        if self.callback is None:
            return
        self.callback(
            {
                "run_dir": str(self.run_dir),
                "unit": self.unit,
                "case": self.context.get("case"),
                "impl": self.context.get("impl"),
                "repetition": self.context.get("repetition"),
                "phase": self.phase,
                "members_up": len(obs.view.live),
                "owned": len(obs.view.owners()),
                "partitions": obs.view.partitions,
                "produced": len(obs.produced),
                "lag": len(obs.produced - obs.processed),
            }
        )


@dataclass
class Waiter:
    """Observing while waiting: polls the histories, reports progress, checks a condition."""

    observer: Observer
    progress: Progress
    clock: Clock

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Observe for up to ``seconds``; return True as soon as ``until()`` holds, False at the end."""
        deadline = self.clock.monotonic() + seconds
        while True:
            self.observer.poll()
            self.progress.report(self.observer)
            if until is not None and until():
                return True
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            self.clock.sleep(min(POLL_S, remaining))  # polling the members' histories, not synchronisation
