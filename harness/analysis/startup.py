"""Start-up: how long a unit took from starting its initial members to a stable group.

Contract
--------
The runner writes ``unit_start``, then starts the producer and every initial member at once (a spawn
each, milliseconds apart), waits until the group is stable and writes ``stable``
(:mod:`harness.run.runner`). Every member writes ``ready`` when its process booted and is about to
connect (:mod:`harness.kernel.events`). From those events, per unit:

* ``startup_members_ready``: members (distinct ``source``) that wrote ``ready`` before ``stable``
  (every ``ready`` when the unit has no ``stable``): the initial members, each counted once;
* ``startup_first_ready_s`` / ``startup_ready_s``: seconds from ``unit_start`` to the first / the
  last of those ``ready`` events (the last: every initial member ready);
* ``startup_stable_s``: seconds from ``unit_start`` to ``stable`` (absent without ``stable``).

:func:`unit_values` computes them from a unit's collected control events (:mod:`.control`);
:func:`start_up_field` turns a unit's values into its ``start_up`` entry (None when the unit has
no ``unit_start`` or no member was ready); :func:`start_up_line` is the one line the reports print:
``start-up: N members ready in X s, first stable after Y s``; :data:`DEFINITION` states the terms
(the document adds it when some unit has a ``start_up`` entry). Nothing here uses Spark (the reports
import this module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.kernel.events import Kind, Role

NS = 1_000_000_000

#: The report's definition of the start-up line ([term, text], as harness.analysis.definitions).
DEFINITION = (
    "start-up",
    "Per unit: the initial members that wrote `ready` (booted, about to connect) before the group "
    "first became stable, how long after `unit_start` (the harness starts every initial member at "
    "once right after it) the last of them was ready, and when the group first became stable "
    "(`stable`: every initial member live and the settle window without an ownership change). The "
    "timeline's triggers are measured from `stable`: start-up does not enter them.",
)

NAMES = ("startup_members_ready", "startup_first_ready_s", "startup_ready_s", "startup_stable_s")


def unit_values(events: list[dict[str, Any]]) -> dict[str, float]:
    """One unit's start-up figures from its control events (see the module contract): the values by
    name, those that cannot be had absent (all of them without ``unit_start`` or a ``ready`` before
    ``stable``)."""
    harness = [e for e in events if e["role"] == Role.HARNESS and e["ts_ns"] is not None]
    starts = [e["ts_ns"] for e in harness if e["kind"] == Kind.UNIT_START]
    stables = [e["ts_ns"] for e in harness if e["kind"] == Kind.STABLE]
    if not starts:
        return {}
    t0, stable = min(starts), min(stables, default=None)
    ready = [
        e
        for e in events
        if e["role"] == Role.MEMBER
        and e["kind"] == Kind.READY
        and e["ts_ns"] is not None
        and (stable is None or e["ts_ns"] < stable)
    ]
    if not ready:
        return {}
    first, last = min(e["ts_ns"] for e in ready), max(e["ts_ns"] for e in ready)
    values = {
        "startup_members_ready": float(len({e["source"] for e in ready if e["source"] is not None})),
        "startup_first_ready_s": float(first - t0) / NS,
        "startup_ready_s": float(last - t0) / NS,
    }
    if stable is not None:
        values["startup_stable_s"] = float(stable - t0) / NS
    return values


def start_up_field(pu: dict[str, float]) -> dict[str, Any] | None:
    """A unit's ``start_up`` entry from its values ``pu``: ``members_ready`` (int), ``first_ready_s``,
    ``all_ready_s`` and ``stable_s`` (seconds, 3 decimals; ``stable_s`` None without ``stable``); None
    when no member was ready."""
    n = pu.get("startup_members_ready")
    if not n:
        return None
    stable = pu.get("startup_stable_s")
    return {
        "members_ready": int(n),
        "first_ready_s": round(float(pu["startup_first_ready_s"]), 3),
        "all_ready_s": round(float(pu["startup_ready_s"]), 3),
        "stable_s": None if stable is None else round(float(stable), 3),
    }


def start_up_line(entry: Mapping[str, Any] | None) -> str | None:
    """``start-up: N members ready in X s, first stable after Y s`` (``never stable`` without a
    ``stable``) for a unit's ``start_up`` entry; None when there is none."""
    if not entry:
        return None
    stable = entry.get("stable_s")
    tail = "never stable" if stable is None else f"first stable after {stable:.1f} s"
    return f"start-up: {entry['members_ready']} members ready in {entry['all_ready_s']:.1f} s, {tail}"
