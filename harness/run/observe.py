# pyright: strict
"""Watching a unit while it runs: progress, and waiting on the unit's histories.

* The unit's histories (every ``*.jsonl`` under its events directory) are folded by one
  :class:`~harness.run.tail.GroupWatch` on the runner's :class:`~harness.run.clock.Clock` (the group's
  ownership, each member's latest ``ready``, produced and processed records, legacy ZooKeeper sessions).
* :class:`Progress` turns the watch's state and the runner's phase into the ``progress`` callback's
  dict (:class:`harness.run.runner.RunOptions`).
* :class:`Waiter` watches for up to a bound, reporting progress after every read, and returns as soon
  as a condition holds (:meth:`GroupWatch.until`: the members write the files, nothing signals the runner).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.run.clock import Clock
from harness.run.tail import GroupWatch


@dataclass
class Progress:
    """Reports a unit's phase and counts to ``callback`` (nothing when it is None): the run directory,
    the unit's key and context, its ``number`` in the run (1-based) ``of`` the run's units, its phase
    and the group's view (members up, partitions owned, records produced and not yet processed)."""

    callback: Callable[[dict[str, Any]], None] | None
    run_dir: Path
    unit: str
    context: dict[str, Any] = field(default_factory=dict[str, Any])  # case, impl, repetition
    phase: str = "starting"
    number: int = 1  # the unit's place in the run (1-based) and the run's units
    of: int = 1

    def report(self, watch: GroupWatch) -> None:
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
                "number": self.number,
                "of": self.of,
                "members_up": len(watch.view.live),
                "owned": len(watch.view.owners()),
                "partitions": watch.view.partitions,
                "produced": len(watch.produced),
                "lag": len(watch.produced - watch.processed),
            }
        )


@dataclass
class Waiter:
    """Watching while waiting: reads the histories, reports progress, checks a condition."""

    watch: GroupWatch
    progress: Progress

    @property
    def clock(self) -> Clock:
        """The watch's clock (the unit's)."""
        return self.watch.clock

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> bool:
        """Watch for up to ``seconds``; return True as soon as ``until()`` holds, False at the end."""
        return self.watch.until(until, seconds, each=lambda: self.progress.report(self.watch))
