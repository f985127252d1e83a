"""Trigger windows, outcomes and ownership: the per-unit fold every metric family builds on.

Contract
--------
:class:`Facts` applies :func:`harness.kernel.windows.evaluate` (the one definition the runner's live
waits and the benches use too) to each unit's ownership events, collected once from the control
events into the driver as Arrow, and pins its output, one row per fact (``rtype``):

* ``trigger``: per trigger window, tid, action, targets, outcome (settled / never / no_effect /
  skipped), reason, invoke, t0, the window's end, the first reaction, t1, start-up, the
  partition count at t1, and the live members and partition count just before the invoke (the
  ownership fold of :class:`~harness.kernel.ownership.GroupView` over the unit's earlier events);
* ``claim`` / ``owned``: a member's claim of a partition (``owned``: while it was the owner, with
  the claim's start ``since``); ``away``: a member's suspension (paused, stalled, cut); ``live``: a
  member's live interval (start, end; end null: live to the end);
* ``close``: a processing interval's close (a revocation, stop, kill, pause, stall or cut; ``p`` < 0 for
  every partition of the member);
* ``marks``: the unit's ``stable`` (start), ``settling_end`` (end) and last event (wend).

:meth:`Facts.windows`, :meth:`Facts.at_invoke`, :meth:`Facts.phases` and :meth:`Facts.intervals`
are views of it;
:func:`to_phase` attributes a timestamped row to its phase: the startup (:data:`STARTUP`, before the
first trigger), a trigger window (its tid) or the drain (:data:`DRAIN`, after settling_end), and
:func:`per_phase` aggregates such rows per phase in the long format (unit, tid, key, value) the
families' per-phase values share.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from harness.analysis.control import Control
from harness.analysis.frames import INF, UNIT, Frames, UnitKey, join, local_frame, pin, unit_key
from harness.kernel.events import Kind
from harness.kernel.ownership import GroupView
from harness.kernel.windows import evaluate

STARTUP, DRAIN = -1, -2  # phase ids: before the first trigger; after the settling phase

#: The kinds the per-unit fold reads (see :func:`harness.kernel.windows.evaluate`).
FOLD_KINDS = (
    Kind.READY,
    Kind.STARTED,
    Kind.STOPPED,
    Kind.ASSIGNED,
    Kind.REVOKED,
    Kind.REBALANCE_BEGIN,
    Kind.REBALANCE_END,
    Kind.WATCH,
    Kind.GROUP_STATE,
    Kind.INVOKE,
    Kind.COMPLETE,
    Kind.SKIPPED,
    Kind.UNIT_START,
    Kind.STABLE,
    Kind.SETTLING_END,
)
#: The columns of a trigger window (:meth:`Facts.windows`, ``P1`` aside).
WINDOW_COLUMNS = (
    *UNIT,
    "tid",
    "action",
    "targets",
    "outcome",
    "reason",
    "invoke",
    "t0",
    "wend",
    "t_react",
    "t1",
    "startup",
)
#: The columns of the fold's events.
FOLD_COLUMNS = (
    *UNIT,
    "ts_ns",
    "role",
    "kind",
    "source",
    "partition",
    "outcome",
    "action",
    "action_id",
    "targets",
    "trigger",
    "partitions",
    "reason",
    "migration",  # a switch's stop settles on its replacements (harness.kernel.windows)
    "migration_step",
)
FACTS_SCHEMA = (
    "case string, impl string, repetition int, rtype string, tid int, action string, "
    "targets array<string>, outcome string, reason string, ident string, p int, start long, `end` long, "
    "since long, invoke long, t0 long, wend long, t_react long, t1 long, startup long, nparts int, "
    "live_invoke int, nparts_invoke int"
)


def _fold_unit(unit: UnitKey, rows: list[dict[str, Any]], window_ns: int) -> list[dict[str, Any]]:
    """The per-unit fold: a unit's fold events in (in their order in the history), its facts out."""
    f = evaluate(rows, window_ns)
    before = _at_invoke(rows, f.triggers)
    out: list[dict[str, Any]] = []

    def row(rtype: str, **kw: Any) -> None:
        out.append({"case": unit[0], "impl": unit[1], "repetition": unit[2], "rtype": rtype, **kw})

    for t in f.triggers:
        row(
            "trigger",
            tid=t.tid,
            action=t.action,
            targets=t.targets,
            outcome=t.outcome,
            reason=t.reason,
            invoke=t.invoke_ns,
            t0=t.t0_ns,
            wend=t.end_ns,
            t_react=t.react_ns,
            t1=t.t1_ns,
            startup=t.startup_ns,
            nparts=t.partitions_at_t1,
            live_invoke=before[t.tid][0],
            nparts_invoke=before[t.tid][1],
        )
    for m, p, s, e in f.claims:
        row("claim", ident=m, p=p, start=s, end=e)
    for m, p, s, e, since in f.owned:
        row("owned", ident=m, p=p, start=s, end=e, since=since)
    for m, s, e in f.away:
        row("away", ident=m, start=s, end=e)
    for m, s, e in f.live:
        row("live", ident=m, start=s, end=e)
    for m, p, ts in f.closes:
        row("close", ident=m, p=p, start=ts)
    row("marks", start=f.stable_ns, end=f.settling_end_ns, wend=f.last_ns)
    return out


def _at_invoke(rows: list[dict[str, Any]], triggers: list[Any]) -> dict[int, tuple[int, int]]:
    """Per trigger id: (live members, partitions) of the group just before its invoke: every event
    with ``ts_ns`` < the invoke applied to one :class:`~harness.kernel.ownership.GroupView`."""
    evs = sorted(rows, key=lambda e: int(e.get("ts_ns") or 0))
    view, i = GroupView(), 0
    out: dict[int, tuple[int, int]] = {}
    for t in sorted(triggers, key=lambda t: t.invoke_ns):
        while i < len(evs) and int(evs[i].get("ts_ns") or 0) < t.invoke_ns:
            view.apply(evs[i])
            i += 1
        out[t.tid] = (len(view.live), view.partitions)
    return out


def _arrow_schema() -> pa.Schema:
    i64, i32, s = pa.int64(), pa.int32(), pa.string()
    return pa.schema(
        [
            ("case", s),
            ("impl", s),
            ("repetition", i32),
            ("rtype", s),
            ("tid", i32),
            ("action", s),
            ("targets", pa.list_(s)),
            ("outcome", s),
            ("reason", s),
            ("ident", s),
            ("p", i32),
            ("start", i64),
            ("end", i64),
            ("since", i64),
            ("invoke", i64),
            ("t0", i64),
            ("wend", i64),
            ("t_react", i64),
            ("t1", i64),
            ("startup", i64),
            ("nparts", i32),
            ("live_invoke", i32),
            ("nparts_invoke", i32),
        ]
    )


FACTS_ARROW = _arrow_schema()


class Facts:
    """The fold's output for one run, computed once on first use (see the module contract)."""

    def __init__(self, frames: Frames, control: Control, window_ns: int) -> None:
        self.frames = frames
        self.control = control
        self.window_ns = window_ns
        self._facts: DataFrame | None = None
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._phases: dict[UnitKey, list[tuple[int, int | None, int | None]]] | None = None
        self._phase_frame: DataFrame | None = None

    def all(self) -> DataFrame:
        """Every fact of every unit (rtype: trigger, claim, owned, away, live, close, marks)."""
        if self._facts is None:
            # the fold in the driver, over the collected control events (a few thousand a unit): in
            # Spark it cost a shuffle and a Python worker process
            by_unit: dict[UnitKey, list[dict[str, Any]]] = {}
            for e in self.control.events():
                if e["kind"] in FOLD_KINDS:
                    by_unit.setdefault(unit_key(e), []).append({c: e[c] for c in FOLD_COLUMNS})
            out = [f for k, rows in by_unit.items() for f in _fold_unit(k, rows, self.window_ns)]
            for f in out:
                self._rows.setdefault(f["rtype"], []).append(f)
            facts = pa.Table.from_pylist(out, schema=FACTS_ARROW)
            self._facts = pin(self.frames.control.sparkSession.createDataFrame(facts, FACTS_SCHEMA))
        return self._facts

    def rows(self, rtype: str) -> list[dict[str, Any]]:
        """The facts of one ``rtype`` as Python rows (the columns of :data:`FACTS_SCHEMA`)."""
        self.all()
        return self._rows.get(rtype, [])

    def of(self, rtype: str) -> DataFrame:
        """The facts of one ``rtype``."""
        return self.all().where(F.col("rtype") == rtype)

    def windows(self) -> DataFrame:
        """Per trigger: tid, action, targets, outcome, t0, wend (window end), t_react, t1, P1."""
        return self.of("trigger").select(*WINDOW_COLUMNS, F.col("nparts").alias("P1"))

    def window_rows(self) -> list[dict[str, Any]]:
        """:meth:`windows` as Python rows (the same columns)."""
        return [
            {**{c: t.get(c) for c in WINDOW_COLUMNS}, "P1": t.get("nparts")} for t in self.rows("trigger")
        ]

    def at_invoke(self) -> DataFrame:
        """Per trigger: tid, ``members`` (live just before its invoke) and ``partitions`` (P then)."""
        return self.of("trigger").select(
            *UNIT, "tid", F.col("live_invoke").alias("members"), F.col("nparts_invoke").alias("partitions")
        )

    def phase_rows(self) -> dict[UnitKey, list[tuple[int, int | None, int | None]]]:
        """Contiguous phases per unit as (tid, pstart, pend), [pstart, pend): the startup (-1: until the
        first trigger's t0, else settling_end), each trigger window (its tid: [t0, window end)) and the
        drain (-2: from settling_end; settling_end is the unit's last event + 1 ns without one)."""
        if self._phases is None:
            windows: dict[UnitKey, list[dict[str, Any]]] = {}
            for t in self.rows("trigger"):
                windows.setdefault(unit_key(t), []).append(t)
            out: dict[UnitKey, list[tuple[int, int | None, int | None]]] = {}
            for m in self.rows("marks"):
                k = unit_key(m)
                settling_end = m["end"] if m["end"] is not None else m["wend"] + 1
                first_t0 = min((t["t0"] for t in windows.get(k, []) if t["t0"] is not None), default=None)
                out[k] = [
                    (STARTUP, -INF, first_t0 if first_t0 is not None else settling_end),
                    (DRAIN, settling_end, INF),
                ]
            for k, ws in windows.items():
                out.setdefault(k, []).extend((t["tid"], t["t0"], t["wend"]) for t in ws)
            self._phases = out
        return self._phases

    def phases(self) -> DataFrame:
        """:meth:`phase_rows` as a table: unit, tid, pstart, pend (handed to Spark as Arrow)."""
        if self._phase_frame is None:
            self._phase_frame = local_frame(
                self.frames.control.sparkSession,
                [(*k, *p) for k, ps in self.phase_rows().items() for p in ps],
                "case string, impl string, repetition int, tid int, pstart long, pend long",
            )
        return self._phase_frame

    def steady_marks(self) -> DataFrame:
        """Per unit: ``stable`` and ``send`` (settling_end, else the last event): the steady phase."""
        return self.of("marks").select(
            *UNIT, F.col("start").alias("stable"), F.coalesce("end", "wend").alias("send")
        )

    def intervals(self, rtype: str) -> DataFrame:
        """claim / owned intervals (unit, ident, p, start, end) or away (unit, ident, start, end)."""
        cols = [*UNIT, "ident", "start", F.coalesce("end", F.lit(INF)).alias("end")]
        if rtype != "away":
            cols.insert(4, "p")
        if rtype == "owned":
            cols.append("since")
        return self.of(rtype).select(*cols)


def to_phase(df: DataFrame, phases: DataFrame, ts: str) -> DataFrame:
    """Attach ``tid`` of the phase (trigger window, startup -1 or drain -2) that contains ``df[ts]``."""
    j = join(
        df,
        F.broadcast(phases),
        UNIT,
        (F.col(ts) >= F.col("r_pstart")) & (F.col(ts) < F.col("r_pend")),
        "left",
    )
    return j.withColumn("tid", F.coalesce(F.col("r_tid"), F.lit(STARTUP))).drop("r_tid", "r_pstart", "r_pend")


def phase_ids(phases: list[tuple[int, int | None, int | None]], ts: int | None) -> list[int]:
    """The ids of the phases (of one unit, :meth:`Facts.phase_rows`) that contain ``ts``: :func:`to_phase`
    in Python (the startup, -1, when none does)."""
    got = [
        tid
        for tid, start, end in phases
        if ts is not None and start is not None and end is not None and start <= ts < end
    ]
    return got or [STARTUP]


def per_phase(df: DataFrame, name: str, agg: Column) -> DataFrame:
    """``agg`` over ``df``'s rows per (unit, tid), long format (unit, tid, key = ``name``, value)."""
    return (
        df.groupBy(*UNIT, "tid")
        .agg(agg.alias("v"))
        .select(*UNIT, "tid", F.lit(name).alias("key"), F.col("v").cast("double").alias("value"))
    )
