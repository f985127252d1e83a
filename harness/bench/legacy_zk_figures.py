"""The figures of ``herdlab bench legacy_zk`` from one group size's merged history, their comparison
with the PySpark checker's, and their printing (see :mod:`harness.bench.legacy_zk` for the contract).

:func:`measure` takes the trigger windows, outcomes and latencies from
:func:`harness.kernel.windows.evaluate`; :func:`count_window` counts the members' events in a window
as the checker counts them (the checker's ``herd`` job); :func:`compare` sets the two side by side.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel.events import SETTLED, Kind, Role, failed_attempt, zk_steady
from harness.kernel.ownership import GroupView
from harness.kernel.windows import evaluate
from legacy_zk.model import HerdModel, herd_model

__all__ = [
    "BROKERS",
    "ChangeFigures",
    "Check",
    "Counts",
    "compare",
    "count_window",
    "deviation",
    "format_checks",
    "format_size",
    "measure",
    "packet_window",
]

BROKERS = 1  # the bench registers one 0.8 broker: B of the model
REGISTRATION = re.compile(r"^/consumers/[^/]+/ids/[^/]+$")


# -- the figures, from a history ----------------------------------------------------------------------
@dataclass(frozen=True)
class Counts:
    """The members' events in one window [t0, end), counted as the checker counts them."""

    watches: int = 0
    zk_requests: int = 0
    by_op: dict[str, int] = field(default_factory=dict)
    owner_writes: int = 0
    registration_reads: int = 0
    conflicts: int = 0
    failed_attempts: int = 0
    gave_up: int = 0
    rebalance_attempts: int = 0
    rebalancing_members: int = 0
    first_watch_ns: int | None = None


def count_window(events: Iterable[Mapping[str, Any]], t0_ns: int, end_ns: int) -> Counts:
    """Count the role-member events with ``t0_ns <= ts_ns < end_ns``.

    ``zk_requests``: ``zk_request`` events that are not steady-state (offset writes); ``by_op``: the
    same by ``op`` (``?`` when absent); ``owner_writes``: of these, ``create`` / ``delete`` under
    ``/owners/``; ``registration_reads``: ``get`` of ``/consumers/<g>/ids/<id>``;
    ``failed_attempts``: ``rebalance_end`` events that are failed attempts; ``gave_up``: those that
    ended a synced rebalance for good; ``rebalancing_members``: members with a ``rebalance_begin``.
    """
    watches = zk = owner = reg = conflicts = failed = gave_up = attempts = 0
    ops: Counter[str] = Counter()
    rebalancing: set[str] = set()
    first_watch: int | None = None
    for e in events:
        ts = int(e.get("ts_ns") or 0)
        if not t0_ns <= ts < end_ns or e.get("role") != Role.MEMBER:
            continue
        kind = e.get("kind")
        if kind == Kind.WATCH:
            watches += 1
            first_watch = ts if first_watch is None else min(first_watch, ts)
        elif kind == Kind.ZK_REQUEST and not zk_steady(e.get("op"), e.get("path")):
            op, path = str(e.get("op") or "?"), str(e.get("path") or "")
            zk += 1
            ops[op] += 1
            owner += int(op in ("create", "delete") and "/owners/" in path)
            reg += int(op == "get" and REGISTRATION.match(path) is not None)
        elif kind == Kind.CONFLICT:
            conflicts += 1
        elif kind == Kind.REBALANCE_BEGIN:
            attempts += 1
            rebalancing.add(str(e.get("source")))
        elif kind == Kind.REBALANCE_END:
            failed += int(failed_attempt(kind, e.get("outcome")))
            gave_up += int(bool(e.get("gave_up")))
    return Counts(
        watches=watches,
        zk_requests=zk,
        by_op=dict(sorted(ops.items())),
        owner_writes=owner,
        registration_reads=reg,
        conflicts=conflicts,
        failed_attempts=failed,
        gave_up=gave_up,
        rebalance_attempts=attempts,
        rebalancing_members=len(rebalancing),
        first_watch_ns=first_watch,
    )


@dataclass(frozen=True)
class ChangeFigures:
    """One trigger of one group size: what was measured, and the model of it."""

    action: str
    targets: tuple[str, ...]
    outcome: str
    members_before: int
    partitions: int
    invoke_ns: int
    t0_ns: int
    end_ns: int
    t1_ns: int | None
    counts: Counts
    packets: int | None
    packets_minus_idle: int | None
    model: HerdModel

    @property
    def latency_s(self) -> float | None:
        """t1 - t0 in seconds, rounded to the microsecond as the checker rounds it; None unless settled."""
        return None if self.t1_ns is None else round((self.t1_ns - self.t0_ns) / 1e9, 6)

    @property
    def first_notification_s(self) -> float | None:
        """From t0 to the first watch notification in the window."""
        w = self.counts.first_watch_ns
        return None if w is None else round((w - self.t0_ns) / 1e9, 6)


Sample = tuple[int, str, float]  # ts_ns, label, zk_packets_received


def _samples(events: Iterable[Mapping[str, Any]]) -> list[Sample]:
    out = []
    for e in events:
        if e.get("kind") == Kind.ZK_MNTR:
            packets = (e.get("counters") or {}).get("zk_packets_received")
            if packets is not None:
                out.append((int(e["ts_ns"]), str(e.get("label") or ""), float(packets)))
    return sorted(out)


def packet_window(samples: list[Sample], invoke_ns: int) -> tuple[Sample, Sample] | None:
    """The mntr samples bounding a trigger's packets, as the checker picks them: the last
    ``invoke:`` sample at or before the invoke, and the first ``invoke:`` or ``settling_end``
    sample after it."""
    start = max((s for s in samples if s[1].startswith("invoke:") and s[0] <= invoke_ns), default=None)
    end = next(
        (s for s in samples if s[0] > invoke_ns and (s[1].startswith("invoke:") or s[1] == "settling_end")),
        None,
    )
    return None if start is None or end is None else (start, end)


def _packets(samples: list[Sample], invoke_ns: int, action_id: int | None) -> tuple[int | None, int | None]:
    """(packets received in the trigger's window, the same minus the idle rate before the invoke)."""
    edges = packet_window(samples, invoke_ns)
    if edges is None:
        return None, None
    (s0, _, p0), (s1, _, p1) = edges
    packets = int(p1 - p0)
    idle = next((s for s in samples if s[1] == f"idle:{action_id}"), None)
    if idle is None or s0 <= idle[0]:
        return packets, None
    rate = (p0 - idle[2]) / (s0 - idle[0])  # packets per ns while nothing changed
    return packets, round(packets - rate * (s1 - s0))


def measure(
    events: Iterable[Mapping[str, Any]], window_ns: int, brokers: int = BROKERS
) -> list[ChangeFigures]:
    """Every trigger of one group size's merged events, in the checker's order (by t0)."""
    evs = sorted(events, key=lambda e: int(e.get("ts_ns") or 0))
    facts = evaluate(evs, window_ns)
    samples = _samples(evs)
    view = GroupView()
    i = 0
    before: dict[int, tuple[int, int]] = {}  # tid -> (live members, partitions) just before its invoke
    for t in sorted(facts.triggers, key=lambda t: t.invoke_ns):
        while i < len(evs) and int(evs[i].get("ts_ns") or 0) < t.invoke_ns:
            view.apply(evs[i])
            i += 1
        before[t.tid] = (len(view.live), view.partitions)
    out = []
    for t in facts.triggers:
        members, partitions = before[t.tid]
        packets, minus_idle = _packets(samples, t.invoke_ns, t.action_id)
        out.append(
            ChangeFigures(
                action=t.action,
                targets=tuple(t.targets),
                outcome=t.outcome,
                members_before=members,
                partitions=partitions,
                invoke_ns=t.invoke_ns,
                t0_ns=t.t0_ns,
                end_ns=t.end_ns,
                t1_ns=t.t1_ns if t.outcome == SETTLED else None,
                counts=count_window(evs, t.t0_ns, t.end_ns),
                packets=packets,
                packets_minus_idle=minus_idle,
                model=herd_model(t.action, members, brokers, partitions),
            )
        )
    return out


# -- the checker's figures beside the bench's ---------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One figure of one trigger, as the checker and as the bench found it."""

    n: int
    action: str
    figure: str
    checker: Any
    bench: Any

    @property
    def equal(self) -> bool:
        return bool(self.checker == self.bench)


def compare(n: int, changes: list[ChangeFigures], triggers: list[Mapping[str, Any]]) -> list[Check]:
    """The checker's ``triggers`` of unit ``N=<n>`` (from ``metrics.json``) beside the bench's figures:
    outcome, watches, zk_requests, zk_requests_by_op, latency_s and zk_packets of each trigger, in
    order; a different number of triggers is one more (unequal) check."""
    checks = []
    if len(triggers) != len(changes):
        checks.append(Check(n, "-", "triggers", len(triggers), len(changes)))
    for t, c in zip(triggers, changes, strict=False):
        action = str(t.get("action"))
        if action != c.action:
            checks.append(Check(n, c.action, "action", action, c.action))
            continue
        checks += [
            Check(n, action, "outcome", t.get("outcome"), c.outcome),
            Check(n, action, "watches", t.get("watches"), c.counts.watches),
            Check(n, action, "zk_requests", t.get("zk_requests"), c.counts.zk_requests),
            Check(n, action, "zk_requests_by_op", dict(t.get("zk_requests_by_op") or {}), c.counts.by_op),
            Check(n, action, "latency_s", t.get("latency_s"), c.latency_s),
            Check(n, action, "zk_packets", t.get("zk_packets"), c.packets),
        ]
    return checks


# -- printing -----------------------------------------------------------------------------------------
def deviation(measured: int, model: int) -> str:
    """``measured - model`` and its share of the model: ``+2 (+0.7%)``."""
    d = measured - model
    pct = f"{100.0 * d / model:+.1f}%" if model else "n/a"
    return f"{d:+d} ({pct})"


def _cell(measured: int, model: int) -> str:
    return f"{measured} ({model}) {deviation(measured, model)}"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _s0(v: int | None) -> str:
    return "-" if v is None else str(v)


def format_size(n: int, changes: list[ChangeFigures], window_s: float) -> str:
    """One Markdown table of a group size: per change the measurement, the model and the deviation."""
    lines = [
        f"\nN = {n}: {n} members, {n} partitions, B = {BROKERS} broker (coordination-only members), "
        f"W = {window_s:g} s; cells: measured (model) measured - model (%)\n",
        "| change | outcome | latency s | 1st notification s | notifications | zk requests | owner writes "
        "| registration reads | packets recv (-idle) | conflicts | failed attempts | gave up "
        "| rebalancing members |",
        "|" + "---|" * 13,
    ]
    for c in changes:
        k, m = c.counts, c.model
        packets = "-" if c.packets is None else f"{c.packets} ({_s0(c.packets_minus_idle)})"
        lines.append(
            f"| {c.action} | {c.outcome} | {_s(c.latency_s)} | {_s(c.first_notification_s)} "
            f"| {_cell(k.watches, m.notifications)} | {_cell(k.zk_requests, m.zk_requests)} "
            f"| {_cell(k.owner_writes, m.owner_writes)} "
            f"| {_cell(k.registration_reads, m.registration_reads)} | {packets} | {k.conflicts} "
            f"| {k.failed_attempts} | {k.gave_up} | {k.rebalancing_members} |"
        )
    return "\n".join(lines)


def _shown(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {n}" for k, n in v.items()) or "{}"
    return "-" if v is None else str(v)


def format_checks(checks: list[Check]) -> str:
    """A Markdown table: per (N, change) and figure, ``equal (value)`` or both values."""
    figures = ["outcome", "watches", "zk_requests", "zk_requests_by_op", "latency_s", "zk_packets"]
    rows: dict[tuple[int, str], dict[str, Check]] = {}
    for c in checks:
        rows.setdefault((c.n, c.action), {})[c.figure] = c
    lines = [
        "| N | change | " + " | ".join(figures) + " |",
        "|" + "---|" * (2 + len(figures)),
    ]
    for (n, action), by in rows.items():
        cells = []
        for f in figures:
            c = by.get(f)
            if c is None:
                cells.append("-")
            elif c.equal:
                cells.append("equal" if f == "zk_requests_by_op" else f"equal ({_shown(c.bench)})")
            else:
                cells.append(f"checker {_shown(c.checker)}, bench {_shown(c.bench)}")
        lines.append(f"| {n} | {action} | " + " | ".join(cells) + " |")
    extra = [c for c in checks if c.figure not in figures]
    lines += [f"N={c.n} {c.figure}: checker {c.checker}, bench {c.bench}" for c in extra]
    return "\n".join(lines)
