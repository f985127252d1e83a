"""Event history writers: one JSON object per line while a run goes on.

Contract
--------
* Every event is a flat JSON object with at least ``ts_ns`` (wall clock, ``time.time_ns()``),
  ``source`` (who wrote it: ``broker-1``, a member's name, ``nemesis``, ``harness``), ``role`` and
  ``kind``: the contract is :mod:`harness.kernel.events`. Further fields are free-form JSON values
  chosen by the writer of the event.
* :meth:`HistoryWriter.emit` is thread-safe and writes the line through to the OS before it returns,
  so a member killed with SIGKILL loses no event it had emitted.
* Several processes may append to *different* files of one run; the harness merges them when the run
  ends. Never point two processes at one file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from harness.kernel.history import History, NullHistory

__all__ = ["History", "HistoryWriter", "NullHistory", "open_history", "read_events"]


class HistoryWriter:
    """Append events as JSON lines to ``path`` (created with its parents).

    ``source`` and ``role`` (see :mod:`harness.kernel.events`) are written into every event unless
    the event names its own.
    """

    def __init__(self, path: str | os.PathLike[str], source: str, role: str | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.source = source
        self.role = role
        # O_APPEND + one os.write per event: each line lands whole even if the process dies next.
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()

    def emit(self, kind: str, **fields: Any) -> None:
        """Write one event now. Silently ignored after :meth:`close`."""
        event: dict[str, Any] = {"ts_ns": time.time_ns(), "source": self.source, "kind": kind}
        if self.role is not None:
            event["role"] = self.role
        event.update(fields)
        line = (json.dumps(event, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            if self._fd is not None:
                os.write(self._fd, line)

    def close(self) -> None:
        """Close the file; later ``emit`` calls are dropped."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_history(path: str | os.PathLike[str] | None, source: str, role: str | None = None) -> History:
    """A :class:`HistoryWriter` for ``path``, or a :class:`NullHistory` when ``path`` is None."""
    return HistoryWriter(path, source, role) if path else NullHistory()


def read_events(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read every complete event of a JSON-lines history (a torn last line is skipped)."""
    events = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return events
