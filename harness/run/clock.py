# pyright: strict
"""The harness's source of time while watching a run.

:class:`Clock` is what :class:`harness.run.tail.GroupWatch` and the runner read time from and sleep
on: :class:`SystemClock` in a run; unit tests pass a fake one whose ``sleep`` advances it.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


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
