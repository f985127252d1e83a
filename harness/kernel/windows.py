"""Trigger windows and their outcomes, and the intervals the split-brain checks need: one unit's
history in, facts out. The one implementation of docs/concepts.md's trigger definitions (the PySpark checker
runs it per unit; benches and tests call it directly).

Definitions (times are ``ts_ns``):

* A **trigger** is a nemesis ``invoke`` with ``trigger`` set. **t0** is that invoke, except for a
  ``join`` / ``start_member``: t0 is when the last new process was ready to join (its ``ready``
  event); ``startup`` = t0 - invoke is reported apart. A trigger whose action was ``skipped`` has
  outcome ``skipped``.
* Its **window** is [t0, end) with end = min(next trigger's t0, the unit's ``settling_end`` marker,
  else its last event). Nothing after ``settling_end`` (drain, teardown) belongs to a trigger.
* A **reaction** is, inside the window, a broker ``group_state`` / ``rebalance_begin`` or a member's
  ``watch`` / ``rebalance_begin`` / ``revoked`` / ``assigned`` / ``rebalance_end``, by a member that
  is not a target of the trigger, or by a target after its own new process became ready (the restart
  half of a compound stop / start). No reaction: outcome ``no_effect``.
* **settled** t1: the first instant c >= the first reaction (that reaction, or a later change point)
  at which the group is owned once (:mod:`harness.kernel.ownership`), every member the trigger
  starts or restarts is live, no change point follows within the settle window W, and c + W <= end.
  None: outcome ``never``. Latency = t1 - t0 = detection (reaction - t0) + convergence (t1 - reaction).
* A **compound** action (a rolling restart) is a ``stop_member`` trigger whose restart
  (``start_member``, not a trigger) falls in its window: it settles only once the restarted member
  is live again. A migration's replacement (a ``stop_member`` whose invoke has ``migration`` switch or
  rollback) settles once its replacements are live instead: the members of the next ``start_member``
  of the same ``migration_step`` (the stopped members never come back).

Intervals for the split-brain checks, from the same fold: ``claims`` (a member's claim of a partition,
from ``assigned`` to ``revoked`` or its stop), ``owned`` (the part of a claim while the member is live, with when the claim began),
``away`` (a member not live after it had been: stopped, killed, paused, stalled, cut), ``live`` (a member's
live intervals, by the live member definition) and ``closes`` (where
a member's processing interval of a partition ends: its ``revoked``, its ``stopped``, the ``complete`` of a
crash, leave, stop, pause, stall or cut of it; partition -1 means all of them).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel.events import (
    DOWN_ACTIONS,
    JOIN_ACTIONS,
    NEVER,
    NO_EFFECT,
    SETTLED,
    SKIPPED,
    SUSPEND_ACTIONS,
    Kind,
    Role,
)
from harness.kernel.ownership import GroupView

MEMBER_REACTIONS = (Kind.WATCH, Kind.REBALANCE_BEGIN, Kind.REVOKED, Kind.ASSIGNED, Kind.REBALANCE_END)
BROKER_REACTIONS = (Kind.GROUP_STATE, Kind.REBALANCE_BEGIN)
#: member-side events that start a processing interval's close (besides nemesis completes)
RESTART_ACTIONS = ("stop_member",)
#: migration actions whose stops are followed by other members' starts (harness.run.plan)
REPLACING_MIGRATIONS = ("switch", "rollback")


@dataclass
class TriggerFacts:
    """One trigger of a unit (see the module docstring); times in ns, None when absent."""

    tid: int
    action: str
    targets: list[str]
    action_id: int | None
    invoke_ns: int
    t0_ns: int
    end_ns: int
    outcome: str
    react_ns: int | None = None
    t1_ns: int | None = None
    partitions_at_t1: int | None = None
    startup_ns: int | None = None
    reason: str | None = None  # why it was skipped
    #: compound restarts: target -> when its new process was ready (its later events are reactions)
    restarted: dict[str, int | None] = field(default_factory=dict, repr=False)
    #: a migration's replacement (switch / rollback): the members started in the targets' place
    replacements: list[str] | None = field(default=None, repr=False)


@dataclass
class UnitFacts:
    """What :func:`evaluate` finds in one unit's history."""

    triggers: list[TriggerFacts] = field(default_factory=list)
    claims: list[tuple[str, int, int, int | None]] = field(default_factory=list)
    #: (member, partition, start, end, since): while a claim counts; ``since``: when the claim began
    owned: list[tuple[str, int, int, int | None, int]] = field(default_factory=list)
    away: list[tuple[str, int, int | None]] = field(default_factory=list)
    #: (member, start, end): while the member is live (end None: live to the end of the history)
    live: list[tuple[str, int, int | None]] = field(default_factory=list)
    closes: list[tuple[str, int, int]] = field(default_factory=list)
    stable_ns: int | None = None
    settling_end_ns: int | None = None
    last_ns: int | None = None


def evaluate(events: Iterable[Mapping[str, Any]], window_ns: int) -> UnitFacts:
    """Triggers with outcomes, and intervals, of one unit (events of that unit only, any order)."""
    evs = sorted(events, key=lambda e: int(e.get("ts_ns") or 0))
    facts = UnitFacts()
    if not evs:
        return facts
    facts.last_ns = int(evs[-1]["ts_ns"])
    for e in evs:
        if e.get("kind") == Kind.STABLE and facts.stable_ns is None:
            facts.stable_ns = int(e["ts_ns"])
        elif e.get("kind") == Kind.SETTLING_END and facts.settling_end_ns is None:
            facts.settling_end_ns = int(e["ts_ns"])
    cps, owned_after, live_ivs = _fold(evs, facts)
    facts.live = [(m, s, e) for m, ivs in live_ivs.items() for s, e in ivs]
    facts.triggers = _triggers(evs, facts)
    for t in facts.triggers:
        if t.outcome == SKIPPED:
            continue
        t.react_ns = _first_reaction(evs, t)
        if t.react_ns is None:
            t.outcome = NO_EFFECT
            continue
        must_live = t.targets if t.action in (*JOIN_ACTIONS, *RESTART_ACTIONS) else []
        if t.replacements is not None:
            must_live = t.replacements
        t1 = _settle(t, cps, owned_after, live_ivs, must_live, window_ns)
        if t1 is None:
            t.outcome = NEVER
        else:
            t.outcome = SETTLED
            t.t1_ns, t.partitions_at_t1 = t1
    return facts


# -- the fold: change points and intervals ------------------------------------------------------------
def _fold(
    evs: list[Mapping[str, Any]], facts: UnitFacts
) -> tuple[list[int], list[tuple[bool, int]], dict[str, list[tuple[int, int | None]]]]:
    """Apply every event to a :class:`GroupView`; return the change points, the (owned once, P) state
    after each, and every member's live intervals; fill the interval lists of ``facts``."""
    view = GroupView()
    cps: list[int] = []
    after: list[tuple[bool, int]] = []
    claim_open: dict[str, dict[int, int]] = {}
    own_open: dict[str, dict[int, tuple[int, int]]] = {}
    live_open: dict[str, int] = {}
    away_open: dict[str, int] = {}
    live_ivs: dict[str, list[tuple[int, int | None]]] = {}
    for e in evs:
        ts = int(e.get("ts_ns") or 0)
        touched = _members_of(e)
        if not touched and e.get("kind") not in (Kind.UNIT_START, Kind.COMPLETE):
            continue
        if view.apply(e):
            if cps and cps[-1] == ts:
                after[-1] = (view.owned_once(), view.partitions)
            else:
                cps.append(ts)
                after.append((view.owned_once(), view.partitions))
        for m in touched:
            live = m in view.live
            claims = view.claims.get(m, set())
            mine = claim_open.setdefault(m, {})
            _track(mine, claims, m, ts, facts.claims)
            opened = own_open.setdefault(m, {})
            counting = claims if live else set()
            for p in [p for p in opened if p not in counting]:
                start, since = opened.pop(p)
                facts.owned.append((m, p, start, ts, since))
            for p in counting:
                opened.setdefault(p, (ts, mine[p]))
            if live and m not in live_open:
                live_open[m] = ts
                if m in away_open:
                    facts.away.append((m, away_open.pop(m), ts))
            elif not live and m in live_open:
                live_ivs.setdefault(m, []).append((live_open.pop(m), ts))
                away_open[m] = ts
        _closes(e, ts, facts)
    facts.claims += [(m, p, s, None) for m, ps in claim_open.items() for p, s in ps.items()]
    facts.owned += [(m, p, s, None, since) for m, ps in own_open.items() for p, (s, since) in ps.items()]
    facts.away += [(m, s, None) for m, s in away_open.items()]
    for m, s in live_open.items():
        live_ivs.setdefault(m, []).append((s, None))
    return cps, after, live_ivs


def _track(
    opened: dict[int, int], now: set[int], m: str, ts: int, out: list[tuple[str, int, int, int | None]]
) -> None:
    """Close the intervals of ``opened`` whose partition left ``now``; open those that joined it."""
    for p in [p for p in opened if p not in now]:
        out.append((m, p, opened.pop(p), ts))
    for p in now:
        opened.setdefault(p, ts)


def _members_of(e: Mapping[str, Any]) -> list[str]:
    """The members whose state an event may change."""
    role = e.get("role")
    if role == Role.MEMBER and e.get("source"):
        return [str(e["source"])]
    if role in (Role.NEMESIS, Role.HARNESS) and e.get("kind") == Kind.COMPLETE:
        return [str(t) for t in e.get("targets") or []]
    return []


def _closes(e: Mapping[str, Any], ts: int, facts: UnitFacts) -> None:
    kind, role = e.get("kind"), e.get("role")
    if role == Role.MEMBER:
        if kind == Kind.REVOKED and e.get("partition") is not None:
            facts.closes.append((str(e["source"]), int(e["partition"]), ts))
        elif kind == Kind.STOPPED:
            facts.closes.append((str(e["source"]), -1, ts))
    elif kind == Kind.COMPLETE and e.get("action") in (*DOWN_ACTIONS, *SUSPEND_ACTIONS):
        facts.closes += [(str(t), -1, ts) for t in e.get("targets") or []]


# -- triggers -----------------------------------------------------------------------------------------
def _triggers(evs: list[Mapping[str, Any]], facts: UnitFacts) -> list[TriggerFacts]:
    invokes: list[Mapping[str, Any]] = []
    skipped: dict[Any, str] = {}
    ready: dict[str, list[int]] = {}
    starts: list[Mapping[str, Any]] = []  # migration start_member invokes, in time order
    for e in evs:
        kind = e.get("kind")
        if kind == Kind.INVOKE and e.get("trigger"):
            invokes.append(e)
        elif kind == Kind.INVOKE and e.get("action") == "start_member" and e.get("migration"):
            starts.append(e)
        elif kind == Kind.SKIPPED:
            skipped[e.get("action_id")] = str(e.get("reason") or "")
        elif kind == Kind.READY and e.get("role") == Role.MEMBER:
            ready.setdefault(str(e.get("source")), []).append(int(e["ts_ns"]))
    out = []
    for e in invokes:
        inv = int(e["ts_ns"])
        targets = [str(t) for t in e.get("targets") or []]
        t0, startup = inv, None
        if e.get("action") in JOIN_ACTIONS and targets:
            firsts = [next((r for r in ready.get(t, []) if r >= inv), None) for t in targets]
            if all(r is not None for r in firsts):
                t0 = max(r for r in firsts if r is not None)
                startup = t0 - inv
        aid = e.get("action_id")
        replacements = None
        if e.get("action") in RESTART_ACTIONS and e.get("migration") in REPLACING_MIGRATIONS:
            start = next(
                (
                    s
                    for s in starts
                    if int(s["ts_ns"]) >= inv and s.get("migration_step") == e.get("migration_step")
                ),
                None,
            )
            replacements = [str(m) for m in (start.get("targets") or [])] if start is not None else []
        out.append(
            TriggerFacts(
                tid=0,
                action=str(e.get("action")),
                targets=targets,
                action_id=None if aid is None else int(aid),
                invoke_ns=inv,
                t0_ns=t0,
                end_ns=0,
                outcome=SKIPPED if aid in skipped else "",
                startup_ns=startup,
                reason=skipped.get(aid),
                replacements=replacements,
            )
        )
    out.sort(key=lambda t: (t.t0_ns, t.invoke_ns))
    limit = facts.settling_end_ns if facts.settling_end_ns is not None else (facts.last_ns or 0) + 1
    for i, t in enumerate(out):
        t.tid = i
        nxt = out[i + 1].t0_ns if i + 1 < len(out) else limit
        t.end_ns = min(nxt, limit)
    for t in out:
        if t.action in RESTART_ACTIONS:
            t.restarted = {m: next((r for r in ready.get(m, []) if r > t.invoke_ns), None) for m in t.targets}
    return out


def _first_reaction(evs: list[Mapping[str, Any]], t: TriggerFacts) -> int | None:
    restarted = t.restarted
    keys = [int(e.get("ts_ns") or 0) for e in evs]
    for e in evs[bisect.bisect_left(keys, t.t0_ns) :]:
        ts = int(e.get("ts_ns") or 0)
        if ts >= t.end_ns:
            return None
        role, kind = e.get("role"), e.get("kind")
        if role == Role.BROKER and kind in BROKER_REACTIONS:
            return ts
        if role == Role.MEMBER and kind in MEMBER_REACTIONS:
            src = str(e.get("source"))
            if src not in t.targets:
                return ts
            back = restarted.get(src)
            if back is not None and ts >= back:
                return ts
    return None


def _settle(
    t: TriggerFacts,
    cps: list[int],
    after: list[tuple[bool, int]],
    live_ivs: dict[str, list[tuple[int, int | None]]],
    must_live: list[str],
    window_ns: int,
) -> tuple[int, int] | None:
    assert t.react_ns is not None
    first = bisect.bisect_right(cps, t.react_ns)
    candidates = [t.react_ns] + [c for c in cps[first:] if c < t.end_ns]
    for c in candidates:
        if c + window_ns > t.end_ns:
            return None
        i = bisect.bisect_right(cps, c) - 1
        if i < 0:
            continue
        owned, parts = after[i]
        nxt = cps[i + 1] if i + 1 < len(cps) else None
        if not owned or (nxt is not None and nxt - c < window_ns):
            continue
        if all(_live_at(live_ivs.get(m, []), c) for m in must_live):
            return c, parts
    return None


def _live_at(ivs: list[tuple[int, int | None]], ts: int) -> bool:
    return any(s <= ts and (e is None or ts < e) for s, e in ivs)
