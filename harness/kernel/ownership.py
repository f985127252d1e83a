"""Who owns which partition, folded from history events: the one definition of *live member*,
*owned once* and *settled* (docs/concepts.md, "Definitions the analysis uses").

Pure: feed events of one unit in time order to :meth:`GroupView.apply`; nothing here reads a clock.
The PySpark checker applies this fold per unit, the runner's live waits and the benches use it as
they go, so all of them mean the same thing by "settled".

* A member (the event's ``source``: the harness's name for it) is **live** from its first completed
  rebalance (``rebalance_end`` with outcome ``ok`` or ``no_brokers``) until it is stopped (its own
  ``stopped`` event), killed or made to leave (the nemesis ``complete`` of ``crash`` / ``leave`` /
  ``stop_member``), or paused, stalled or cut (``complete`` of ``pause`` / ``stall`` / ``cut``: the
  registry's ``suspends``). A paused, stalled or cut member is live again from the ``complete`` of its
  ``resume`` / ``unstall`` / ``heal`` (it still believes in its claims: that is the split brain the
  analysis looks for). A new process of a member (its ``ready`` event)
  starts afresh: not live, no claims.
* ``assigned`` / ``revoked`` (one event per partition) add and remove a member's **claims**; a stop
  or kill drops them all. Only the claims of live members count.
* The group is **owned once** when every partition ``0..P-1`` is claimed by exactly one live member and
  no live member claims a partition ``>= P`` (``P`` from ``unit_start``, then ``add_partitions``).
* A **change point** is an event that changes the live set, a live member's claims or ``P``. The group
  is **settled** at ``now`` when it is owned once and no change point happened in the last ``window``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.kernel.events import DOWN_ACTIONS, SUSPEND_ACTIONS, UNSUSPEND_ACTIONS, Kind, Role

#: rebalance_end outcomes that complete a rebalance (a member is live from the first of them).
COMPLETED = (None, "ok", "no_brokers")


@dataclass
class GroupView:
    """The claims of a group's members, updated event by event (see the module docstring)."""

    partitions: int = 0
    claims: dict[str, set[int]] = field(default_factory=dict)
    rebalanced: set[str] = field(default_factory=set)  # completed a rebalance, not stopped since
    suspended: set[str] = field(default_factory=set)
    #: members between a rebalance_begin and the end of that rebalance (not part of "settled": the
    #: runner's first stable wait uses it to insist every initial member finished joining)
    rebalancing: set[str] = field(default_factory=set)
    last_change_ns: int = 0
    # Kept in step by every mutation below (all of them are in this class), so that a query costs
    # O(1) per event and the fold is linear in events (10^4 members, 10^6 events in a simulation):
    #: rebalanced - suspended
    _live: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    #: partition -> number of live members claiming it (absent: none)
    _count: Counter[int] = field(default_factory=Counter, init=False, repr=False, compare=False)
    #: claimed partitions that break "owned once": claimed twice or more, or outside 0..P-1
    _bad: set[int] = field(default_factory=set, init=False, repr=False, compare=False)

    # -- queries ------------------------------------------------------------------------------------
    @property
    def live(self) -> set[str]:
        """Members that completed a rebalance and are neither stopped, killed, paused nor cut
        (``rebalanced - suspended``; the view's own set: read it, do not change it)."""
        return self._live

    def owners(self) -> dict[int, list[str]]:
        """partition -> sorted live claimants (partitions nobody live claims are absent)."""
        out: dict[int, list[str]] = {}
        for m in self.live:
            for p in self.claims.get(m, ()):
                out.setdefault(p, []).append(m)
        return {p: sorted(v) for p, v in out.items()}

    def owned_once(self) -> bool:
        """Every partition claimed by exactly one live member, and nothing outside ``0..P-1``."""
        # len(_count) == P with no bad partition: each of 0..P-1 claimed by exactly one live member
        return self.partitions > 0 and not self._bad and len(self._count) == self.partitions

    def settled(self, now_ns: int, window_s: float) -> bool:
        """Owned once, with no change point during the last ``window_s`` seconds before ``now_ns``."""
        return self.owned_once() and now_ns - self.last_change_ns >= window_s * 1e9

    def summary(self) -> str:
        """One line for errors and progress: live members, owned, unowned and doubled partitions."""
        owners = self.owners()
        unowned = [p for p in range(self.partitions) if p not in owners]
        doubled = {p: v for p, v in owners.items() if len(v) > 1}
        return (
            f"{len(self.live)} live, {len(owners)}/{self.partitions} owned, unowned {unowned[:8]}, "
            f"doubled {dict(list(doubled.items())[:4])}"
        )

    # -- the fold -----------------------------------------------------------------------------------
    def apply(self, e: Mapping[str, Any]) -> bool:
        """Update the view with one event; True when it was a change point. Unknown events are ignored."""
        kind = e.get("kind")
        ts = int(e.get("ts_ns") or 0)
        role = e.get("role")
        changed = False
        if role == Role.MEMBER:
            m = e.get("source")
            if not m:
                return False
            if kind == Kind.REBALANCE_BEGIN:
                self.rebalancing.add(m)
            elif kind == Kind.REBALANCE_END:
                self.rebalancing.discard(m)
            if kind in (Kind.READY, Kind.STOPPED):
                changed = self._drop(m)
            elif kind == Kind.REBALANCE_END and e.get("outcome") in COMPLETED:
                if m not in self.rebalanced:
                    self.rebalanced.add(m)
                    self._sync_live(m)
                    changed = m not in self.suspended
            elif kind in (Kind.ASSIGNED, Kind.REVOKED) and e.get("partition") is not None:
                p = int(e["partition"])
                mine = self.claims.setdefault(m, set())
                before = p in mine
                if kind == Kind.ASSIGNED:
                    mine.add(p)
                else:
                    mine.discard(p)
                changed = before != (p in mine) and m in self._live
                if changed:
                    self._recount(p, 1 if kind == Kind.ASSIGNED else -1)
        elif role in (Role.NEMESIS, Role.HARNESS):
            if kind == Kind.UNIT_START and e.get("partitions") is not None:
                changed = self._set_partitions(int(e["partitions"]))
            elif kind == Kind.COMPLETE:
                action = e.get("action")
                targets = list(e.get("targets") or [])
                if action in DOWN_ACTIONS:
                    changed = any([self._drop(t) for t in targets])
                elif action in SUSPEND_ACTIONS:
                    changed = any(t in self._live for t in targets)
                    self.suspended.update(targets)
                    for t in targets:
                        self._sync_live(t)
                elif action in UNSUSPEND_ACTIONS:
                    changed = any(t in self.suspended and t in self.rebalanced for t in targets)
                    self.suspended.difference_update(targets)
                    for t in targets:
                        self._sync_live(t)
                elif action == "add_partitions" and e.get("partitions") is not None:
                    changed = self._set_partitions(int(e["partitions"]))
        if changed:
            self.last_change_ns = max(self.last_change_ns, ts)
        return changed

    def apply_all(self, events: Iterable[Mapping[str, Any]]) -> None:
        for e in events:
            self.apply(e)

    def _drop(self, m: str) -> bool:
        was_live = m in self._live
        self.rebalanced.discard(m)
        self.suspended.discard(m)
        self.rebalancing.discard(m)
        self._sync_live(m)
        self.claims.pop(m, None)
        return was_live

    def _set_partitions(self, n: int) -> bool:
        if n == self.partitions:
            return False
        self.partitions = n
        for p in list(self._count):
            self._check(p)
        return True

    def _sync_live(self, m: str) -> None:
        """Make ``_live`` (and the live claim counts) agree with ``rebalanced`` and ``suspended`` for ``m``."""
        live = m in self.rebalanced and m not in self.suspended
        if live == (m in self._live):
            return
        if live:
            self._live.add(m)
        else:
            self._live.discard(m)
        for p in self.claims.get(m, ()):
            self._recount(p, 1 if live else -1)

    def _recount(self, p: int, delta: int) -> None:
        self._count[p] += delta
        if self._count[p] <= 0:
            del self._count[p]
        self._check(p)

    def _check(self, p: int) -> None:
        n = self._count.get(p, 0)
        if n == 0 or (n == 1 and 0 <= p < self.partitions):
            self._bad.discard(p)
        else:
            self._bad.add(p)
