"""Following a run's JSON-lines histories while processes append to them.

* :class:`HistoryTail` remembers how far it read each ``*.jsonl`` file (one file, or every file under
  a directory) and returns the complete new lines on each :meth:`~HistoryTail.poll` (a torn last line
  is kept for the next poll). Files that appear later (a member that joined) are picked up on the next
  poll. The one tail of the harness: the runner, the benches, member handles and tests read with it.
* :class:`GroupWatch` folds what a tail reads into a :class:`~harness.kernel.ownership.GroupView`
  and remembers each member's latest ``ready``, its reactions (:data:`MEMBER_REACTIONS`), who gave
  up, the records produced and processed and the legacy members' ZooKeeper sessions (from their own
  ``registered`` events or, for a member whose events carry no session credentials, from the ZooKeeper
  tap's: :meth:`GroupWatch.registration`);
  :meth:`GroupWatch.until` waits on a condition over them with a timeout, on a
  :class:`~harness.run.clock.Clock`. The one fold of the harness: the runner (through
  :class:`harness.run.observe.Waiter`), the benches and tests watch with it. It only observes:
  the definitions (settled, first reaction) are :mod:`harness.kernel.ownership`'s and
  :mod:`harness.kernel.windows`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.kernel.events import Kind, Role
from harness.kernel.ownership import GroupView
from harness.kernel.windows import MEMBER_REACTIONS
from harness.run.clock import Clock, SystemClock

__all__ = ["POLL_S", "GroupWatch", "HistoryTail"]

POLL_S = 0.1  # how often histories are read while waiting (the runner's rate)


class HistoryTail:
    """New events of one JSON-lines file, or of every ``*.jsonl`` file under a directory."""

    def __init__(self, path: Path) -> None:
        self.directory = path  # the name callers used; a file works too
        self._offsets: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}

    def _files(self) -> list[Path]:
        if self.directory.is_dir():
            return sorted(self.directory.rglob("*.jsonl"))
        return [self.directory]

    def poll(self) -> list[dict[str, Any]]:
        """New complete events from every file, sorted by ``ts_ns``."""
        events: list[dict[str, Any]] = []
        for path in self._files():
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


class GroupWatch:
    """The events read so far from the histories under ``path``, folded (see the module contract).

    ``view``: the group's ownership; ``ready``: member -> ts_ns of its latest ``ready``;
    ``reactions``: (ts_ns, member) of every member reaction; ``gave_up``: members whose last synced
    rebalance gave up (a later ``ok`` / ``no_brokers`` end clears it); ``produced`` / ``processed``:
    (partition, offset) of every ``produced`` / ``record`` event; ``registrations``: legacy member ->
    (ZooKeeper session id, password) of its latest ``registered``; ``events``: every event read, in the
    order read, when ``keep`` is set. Time (``settled``, :meth:`until`) comes from ``clock``.
    """

    def __init__(
        self, path: Path, partitions: int | None = None, keep: bool = False, clock: Clock | None = None
    ) -> None:
        self.path = path
        self.tail = HistoryTail(path)
        self.view = GroupView() if partitions is None else GroupView(partitions=partitions)
        self.clock: Clock = clock or SystemClock()
        self.ready: dict[str, int] = {}
        self.reactions: list[tuple[int, str]] = []
        self.gave_up: set[str] = set()
        self.produced: set[tuple[int, int]] = set()
        self.processed: set[tuple[int, int]] = set()
        self.registrations: dict[str, tuple[int, str]] = {}
        # the ZooKeeper tap's view (role zookeeper): member name -> its consumer id (the ``member`` of its own
        # events), consumer id -> the session (0x-hex) whose create of its ids znode was answered OK, session
        # -> its password (the tap's zk_session connect)
        self.consumer_ids: dict[str, str] = {}
        self.tap_registrations: dict[str, str] = {}
        self.tap_passwords: dict[str, str] = {}
        self.keep = keep
        self.events: list[dict[str, Any]] = []

    def observe(self) -> None:
        """Read what was appended since the last call and fold it."""
        for e in self.tail.poll():
            if self.keep:
                self.events.append(e)
            self.view.apply(e)
            kind = e.get("kind")
            if kind == Kind.PRODUCED:
                self.produced.add((e["partition"], e["offset"]))
            elif kind == Kind.RECORD:
                self.processed.add((e["partition"], e["offset"]))
            elif kind == Kind.REGISTERED and e.get("session_password"):
                self.registrations[e["source"]] = (int(e["session_id"]), e["session_password"])
            if e.get("role") == Role.ZOOKEEPER:
                self._tapped(e)
                continue
            if e.get("role") != Role.MEMBER:
                continue
            src, ts = str(e.get("source")), int(e["ts_ns"])
            if e.get("member") and e.get("impl") == "legacy_zk":
                self.consumer_ids[src] = str(e["member"])
            if kind == Kind.READY:
                self.ready[src] = ts
            if kind in MEMBER_REACTIONS:
                self.reactions.append((ts, src))
            if kind == Kind.REBALANCE_END:
                if e.get("gave_up"):
                    self.gave_up.add(src)
                elif e.get("outcome") in ("ok", "no_brokers"):
                    self.gave_up.discard(src)

    def _tapped(self, e: dict[str, Any]) -> None:
        """Fold one event of the ZooKeeper tap: a session's password, a consumer's registering session."""
        kind, session = e.get("kind"), e.get("session")
        if not session:
            return
        if kind == Kind.ZK_SESSION and e.get("phase") == "connect" and e.get("password"):
            self.tap_passwords[str(session)] = str(e["password"])
        elif (
            kind == Kind.ZK_REQUEST
            and e.get("op") == "create"
            and e.get("err") is None
            and e.get("member")
            and str(e.get("path") or "").endswith(f"/ids/{e['member']}")
        ):
            self.tap_registrations[str(e["member"])] = str(session)

    def registration(self, name: str) -> tuple[int, str] | None:
        """(ZooKeeper session id, password) of legacy member ``name``'s latest registration: from its own
        ``registered`` event when that carries them, else from the ZooKeeper tap (the session whose create
        of the member's ids znode the tap saw answered OK, and that session's password from the tap's
        ``zk_session`` connect); None when neither is known yet."""
        if name in self.registrations:
            return self.registrations[name]
        consumer = self.consumer_ids.get(name)
        session = self.tap_registrations.get(consumer) if consumer else None
        password = self.tap_passwords.get(session) if session else None
        if session is None or password is None:
            return None
        return int(session, 16), password

    def settled(self, window_s: float, members: list[str] | tuple[str, ...] = ()) -> bool:
        """``members`` are live and the group is settled now with window ``window_s`` (GroupView's)."""
        return set(members) <= self.view.live and self.view.settled(self.clock.time_ns(), window_s)

    def first_reaction(self, t0_ns: int, targets: list[str]) -> int | None:
        """The first reaction (windows.py's definition) at or after ``t0_ns`` by a non-target."""
        return min((ts for ts, m in self.reactions if ts >= t0_ns and m not in targets), default=None)

    def until(
        self,
        condition: Callable[[], bool] | None,
        timeout_s: float,
        each: Callable[[], None] | None = None,
    ) -> bool:
        """Read the histories until ``condition()`` holds (True) or ``timeout_s`` passed (False).

        With ``condition`` None it reads for the whole ``timeout_s`` and returns False. ``each`` is
        called after every read (the runner reports progress there).
        """
        deadline = self.clock.monotonic() + timeout_s
        while True:
            self.observe()
            if each is not None:
                each()
            if condition is not None and condition():
                return True
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                return False
            self.clock.sleep(min(POLL_S, remaining))  # polling the members' files, nothing signals us
