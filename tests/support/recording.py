"""One in-memory :class:`harness.kernel.history.History` for tests: it keeps every event as a dict with its
``kind`` (and, with ``stamp=True``, a monotonic ``t``), thread-safe, and finds them with :meth:`of`."""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["RecordingHistory"]


class RecordingHistory:
    """A History that keeps every event (see the module docstring)."""

    def __init__(self, stamp: bool = False) -> None:
        self._stamp = stamp
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []

    def emit(self, kind: str, **fields: Any) -> None:
        stamp = {"t": time.monotonic()} if self._stamp else {}
        with self._lock:
            self.events.append({"kind": kind, **stamp, **fields})

    def close(self) -> None:
        return None

    def of(self, kind: str, **match: Any) -> list[dict[str, Any]]:
        """The events of ``kind`` whose fields equal ``match``, in emission order."""
        with self._lock:
            return [
                e for e in self.events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())
            ]
