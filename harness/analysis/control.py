"""The control events collected into the driver once, as Python rows.

Contract
--------
:class:`Control`'s :meth:`~Control.rows` gives the control events (every event but ``record`` and
``produced``: a few thousand per unit, whatever the number of deliveries) that
:func:`.frames.prepare` collected in one Spark action, as Arrow (:attr:`.frames.Frames.events`), per
unit (:data:`ControlRows`): each unit's events as dicts of the columns in
:data:`.frames.CONTROL_COLUMNS` (the maps ``counters`` and ``requests`` as dicts), in their order in
the history. The families whose inputs are the control events and
the fold's facts (the fold itself, :mod:`.herd`'s counts, flags and mntr samples, :mod:`.steady`,
:mod:`.health`, :mod:`.startup`) compute from these rows in plain Python: in Spark each of them was a
query of its own to plan and run, over a table this small. Spark keeps what scales with the deliveries.
"""

from __future__ import annotations

from typing import Any

from harness.analysis.frames import Frames, UnitKey, unit_key

#: Per unit, its control events in history order.
ControlRows = dict[UnitKey, list[dict[str, Any]]]
#: Per unit, a family's values by name (the per-unit values :mod:`.units` merges across families).
UnitValues = dict[UnitKey, dict[str, float]]

#: The map columns: Arrow's rows give them as (key, value) pairs, the families read them as dicts.
MAPS = ("counters", "requests")


class Control:
    """The run's control events in the driver, collected once on first use (see the module contract)."""

    def __init__(self, frames: Frames) -> None:
        self.frames = frames
        self._events: list[dict[str, Any]] | None = None
        self._rows: ControlRows = {}

    def events(self) -> list[dict[str, Any]]:
        """Every control event of the run, in history order."""
        if self._events is None:
            events = self.frames.events
            for r in events:
                for m in MAPS:
                    if r[m] is not None:
                        r[m] = dict(r[m])
                self._rows.setdefault(unit_key(r), []).append(r)
            self._events = events
        return self._events

    def rows(self) -> ControlRows:
        """Every control event of the run, per unit, in history order."""
        self.events()
        return self._rows
