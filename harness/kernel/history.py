"""What a producer of history events needs, and a history that drops them.

The systems under test (``coordinator``, ``legacy_zk``) take a :class:`History` as an argument and
never open one themselves: the harness passes in its writer (``harness.history.writer``), unit tests
and the simulator pass their own or :class:`NullHistory`. Event kinds and fields follow
:mod:`harness.kernel.events`.
"""

from __future__ import annotations

from typing import Any, Protocol


class History(Protocol):
    """What producers of events need: ``emit`` and ``close``."""

    def emit(self, kind: str, **fields: Any) -> None: ...

    def close(self) -> None: ...


class NullHistory:
    """A history that drops every event (for components run without a history file)."""

    def emit(self, kind: str, **fields: Any) -> None:  # noqa: D102 - see History
        return None

    def close(self) -> None:  # noqa: D102
        return None
