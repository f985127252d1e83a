"""The simulation's history: events stamped with virtual time, written as a real run writes them.

Contract
--------
:class:`SimHistory` is a :class:`harness.kernel.history.History` for one writer (``source``, ``role``):
``emit`` stamps ``ts_ns = epoch_ns + scheduler.now_ns`` and hands the event to the shared
:class:`EventSink`, which writes JSON lines to one file (the unit's history, the same format as
:mod:`harness.history.writer`), buffered, flushed on :meth:`EventSink.close`. The simulator is one
process, so one sink per unit serves every writer. ``epoch_ns`` anchors virtual time to a wall-clock
instant (the simulated run's start), so a simulated history has plausible absolute timestamps and
the analysis needs nothing special.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.sim.clock import VirtualScheduler

__all__ = ["EventSink", "SimHistory"]


class EventSink:
    """Buffered JSON-lines output of one simulated unit's history."""

    def __init__(self, path: str | os.PathLike[str], buffer_events: int = 20_000) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._buf: list[str] = []
        self._limit = buffer_events
        self.events = 0

    def write(self, event: dict[str, Any]) -> None:
        self._buf.append(json.dumps(event, separators=(",", ":"), default=str))
        self.events += 1
        if len(self._buf) >= self._limit:
            self.flush()

    def flush(self) -> None:
        if self._buf and not self._f.closed:
            self._f.write("\n".join(self._buf) + "\n")
            self._buf.clear()

    def close(self) -> None:
        if not self._f.closed:
            self.flush()
            self._f.close()


class SimHistory:
    """One writer's view of a unit's sink: ``source`` and ``role`` on every event, virtual ``ts_ns``."""

    def __init__(
        self, sched: VirtualScheduler, sink: EventSink, source: str, role: str, epoch_ns: int, **common: Any
    ) -> None:
        self._sched = sched
        self._sink = sink
        self._epoch = epoch_ns
        self._base: dict[str, Any] = {"source": source, "role": role, **common}

    def emit(self, kind: str, **fields: Any) -> None:
        event: dict[str, Any] = {"ts_ns": self._epoch + self._sched.now_ns, "kind": kind, **self._base}
        event.update(fields)
        self._sink.write(event)

    def close(self) -> None:
        return None
