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

:func:`unit_values` computes them (long format, one Spark job with the health figures);
:func:`start_up_field` turns a unit's values into its ``start_up`` entry (None when the unit has
no ``unit_start`` or no member was ready); :func:`start_up_line` is the one line the reports print:
``start-up: N members ready in X s, first stable after Y s``; :data:`DEFINITION` states the terms
(the document adds it when some unit has a ``start_up`` entry). Only :func:`unit_values` uses Spark
(imported there: the reports import this module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.kernel.events import Kind, Role

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from harness.analysis.frames import Frames

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


def unit_values(frames: Frames) -> DataFrame:
    """The start-up figures per unit, long format (unit, key, value) (see the module contract)."""
    from pyspark.sql import functions as F

    from harness.analysis.frames import INF, NS, UNIT, long_values, role_col

    c = frames.control
    kind = F.col("kind")
    marks = (
        c.where(role_col(Role.HARNESS) & kind.isin(Kind.UNIT_START, Kind.STABLE))
        .groupBy(*UNIT)
        .agg(
            F.min(F.when(kind == Kind.UNIT_START, F.col("ts_ns"))).alias("t0"),
            F.min(F.when(kind == Kind.STABLE, F.col("ts_ns"))).alias("stable"),
        )
        .where(F.col("t0").isNotNull())
    )
    ready = (
        c.where(role_col(Role.MEMBER) & (kind == Kind.READY))
        .select(*UNIT, "source", "ts_ns")
        .join(F.broadcast(marks), UNIT)
        .where(F.col("ts_ns") < F.coalesce(F.col("stable"), F.lit(INF)))
        .groupBy(*UNIT, "t0", "stable")
        .agg(
            F.count_distinct("source").alias("startup_members_ready"),
            F.min("ts_ns").alias("first"),
            F.max("ts_ns").alias("last"),
        )
    )
    figures = ready.select(
        *UNIT,
        "startup_members_ready",
        ((F.col("first") - F.col("t0")) / NS).alias("startup_first_ready_s"),
        ((F.col("last") - F.col("t0")) / NS).alias("startup_ready_s"),
        ((F.col("stable") - F.col("t0")) / NS).alias("startup_stable_s"),
    )
    return long_values(figures, UNIT, list(NAMES)).where(F.col("value").isNotNull())


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


def start_up_line(entry: dict[str, Any] | None) -> str | None:
    """``start-up: N members ready in X s, first stable after Y s`` (``never stable`` without a
    ``stable``) for a unit's ``start_up`` entry; None when there is none."""
    if not entry:
        return None
    stable = entry.get("stable_s")
    tail = "never stable" if stable is None else f"first stable after {stable:.1f} s"
    return f"start-up: {entry['members_ready']} members ready in {entry['all_ready_s']:.1f} s, {tail}"
