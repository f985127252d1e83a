"""Who owns which partition, from history events — the harness's live view of a group.

Pure: feed events in time order to :meth:`Ownership.apply`; ask :meth:`Ownership.settled`.

* A member (identified by the event's ``source``, the harness's name for it) is **live** from its
  ``started`` event until its ``stopped`` event or a nemesis ``crash`` of it.
* A member the nemesis paused or cut off is **suspended** until it is resumed or healed: it keeps
  the claims it believes in (the point of split brain), but they do not count, because it cannot act
  for the group. So a pause is settled only once others took its partitions over, and the zombie's
  return shows up as a second claimant until it notices.
* ``assigned`` / ``revoked`` events (one per partition) add and remove claims; a member that stops or
  crashes loses all its claims.
* A live member has **joined** once it reported a completed rebalance (``rebalance_end`` with
  outcome ``ok``); the harness waits for every initial member to have joined before it calls a
  group stable, so a slow starter cannot join after the timeline began.
* The group is **settled** at time ``now`` when every partition ``0..partitions-1`` is claimed by
  exactly one live member, no live member claims anything else, and nothing changed during the last
  ``window`` seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any


class Ownership:
    """The claims of live members, updated event by event."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.claims: dict[str, set[int]] = defaultdict(set)
        self.live: set[str] = set()
        self.suspended: set[str] = set()
        self.joined: set[str] = set()  # members that completed a rebalance (rebalance_end, outcome ok)
        self.last_change_ns = 0
        self.events = 0

    def set_partitions(self, partitions: int, ts_ns: int) -> None:
        if partitions != self.partitions:
            self.partitions = partitions
            self.last_change_ns = ts_ns

    def _changed(self, ts_ns: int) -> None:
        self.last_change_ns = max(self.last_change_ns, ts_ns)

    def apply(self, event: Mapping[str, Any]) -> None:
        """Update the view with one event (events of unknown kinds are ignored)."""
        self.events += 1
        kind = event.get("kind")
        ts = int(event.get("ts_ns", 0))
        if (
            kind == "rebalance_end"
            and event.get("outcome") in (None, "ok")
            and event.get("source") in self.live
        ):
            self.joined.add(event["source"])
            return
        if kind in ("assigned", "revoked", "started", "stopped"):
            src = event.get("source")
            if src is None:
                return
            if event.get("role") == "producer" or "broker_id" in event:
                return  # the producer and brokers are not members
            if kind == "started":
                self.live.add(src)
                self._changed(ts)
            elif kind == "stopped":
                self._drop(src, ts)
            elif kind == "assigned":
                p = event.get("partition")
                if p is not None and src in self.live:
                    self.claims[src].add(int(p))
                    self._changed(ts)
            else:
                p = event.get("partition")
                if p is not None:
                    self.claims[src].discard(int(p))
                    self._changed(ts)
        elif kind == "nemesis" and event.get("action") == "crash":
            for target in event.get("targets") or []:
                self._drop(target, ts)
        elif kind == "nemesis" and event.get("action") in ("pause", "cut", "resume", "heal"):
            targets = event.get("targets") or []
            if event["action"] in ("pause", "cut"):
                self.suspended.update(targets)
            else:
                self.suspended.difference_update(targets)
            self._changed(ts)
        elif kind == "nemesis" and event.get("action") == "add_partitions" and event.get("partitions"):
            self.set_partitions(int(event["partitions"]), ts)

    def _drop(self, src: str, ts: int) -> None:
        if src in self.live or self.claims.get(src):
            self.live.discard(src)
            self.suspended.discard(src)
            self.joined.discard(src)
            self.claims.pop(src, None)
            self._changed(ts)

    def apply_all(self, events: Iterable[Mapping[str, Any]]) -> None:
        for e in events:
            self.apply(e)

    def owners(self) -> dict[int, list[str]]:
        """partition -> sorted live claimants (partitions nobody claims are absent)."""
        out: dict[int, list[str]] = defaultdict(list)
        for src, parts in self.claims.items():
            if src in self.live and src not in self.suspended:
                for p in parts:
                    out[p].append(src)
        return {p: sorted(v) for p, v in out.items()}

    def owned_once(self) -> bool:
        """Every partition claimed by exactly one live member, and nothing outside the range."""
        owners = self.owners()
        return set(owners) == set(range(self.partitions)) and all(len(v) == 1 for v in owners.values())

    def settled(self, now_ns: int, window_s: float) -> bool:
        return self.owned_once() and now_ns - self.last_change_ns >= window_s * 1e9

    def summary(self) -> str:
        owners = self.owners()
        unowned = [p for p in range(self.partitions) if p not in owners]
        doubled = {p: v for p, v in owners.items() if len(v) > 1}
        return f"{len(self.live)} live, {len(owners)}/{self.partitions} owned, unowned {unowned[:8]}, doubled {dict(list(doubled.items())[:4])}"
