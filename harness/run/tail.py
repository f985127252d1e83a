"""Following a run's JSON-lines files while processes append to them.

:class:`HistoryTail` remembers how far it read each ``*.jsonl`` file under a directory and returns
the complete new lines on each :meth:`poll` (a torn last line is kept for the next poll). Files that
appear later (a member that joined) are picked up on the next poll.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class HistoryTail:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}

    def poll(self) -> list[dict[str, Any]]:
        """New complete events from every file, sorted by ``ts_ns``."""
        events: list[dict[str, Any]] = []
        for path in sorted(self.directory.rglob("*.jsonl")):
            offset = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except FileNotFoundError:
                continue
            if not data:
                continue
            self._offsets[path] = offset + len(data)
            data = self._partial.pop(path, b"") + data
            lines = data.split(b"\n")
            if lines[-1]:
                self._partial[path] = lines[-1]
            for line in lines[:-1]:
                if line.strip():
                    try:
                        events.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue
        events.sort(key=lambda e: e.get("ts_ns", 0))
        return events
