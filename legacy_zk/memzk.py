"""An in-memory ZooKeeper: enough of the data model to run the member's protocol without a server.

Contract
--------
:class:`MemZk` is one ensemble's data tree; :meth:`MemZk.session` opens a :class:`MemZkSession`, a
:class:`legacy_zk.zkport.ZkPort`. Semantics follow ZooKeeper 3.4 for what the member uses:

* znodes are persistent or ephemeral (owned by the creating session, deleted when it expires or
  closes); each has ``version`` (data writes), ``cversion`` (child changes), ``czxid``/``mzxid``
  (one zxid counter per tree, bumped by every write) and ``ephemeralOwner`` (0 for persistent);
  stats are kazoo's ``ZnodeStat``;
* errors are kazoo's: ``create`` raises ``NodeExistsError`` / ``NoNodeError`` (missing parent);
  ``set``/``delete`` raise ``NoNodeError`` and ``BadVersionError`` (version other than -1 and not the
  node's); ``delete`` of a node with children raises ``NotEmptyError``; every request of an expired
  or closed session raises ``SessionExpiredError``;
* watches are one-shot and fire once per change with kazoo's ``WatchedEvent``: ``exists`` leaves a
  data watch even on a missing node (fires ``CREATED``); ``get`` leaves a data watch (``CHANGED``,
  ``DELETED``); ``get_children`` leaves a child watch (``CHILD`` when a child is created or deleted,
  ``DELETED`` when the node goes). ``get``/``get_children`` of a missing node leave no watch. Watches
  are called synchronously on the thread that made the change, after the tree's lock is released;
* ``multi`` is atomic: every op is applied or none (results as kazoo returns them);
* every request is counted per operation in :attr:`MemZkSession.counts`.

Not modelled: ACLs, sequential nodes, quotas, connection loss (a session is connected until it
expires or closes).
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kazoo.protocol.states import EventType, KeeperState, WatchedEvent, ZnodeStat

from legacy_zk.paths import parent
from legacy_zk.zkport import (
    BadVersionError,
    MultiOp,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
    Watcher,
    create_persistent,
    get_each,
)


@dataclass
class _Node:
    data: bytes
    czxid: int
    mzxid: int
    ephemeral_owner: int = 0
    version: int = 0
    cversion: int = 0
    children: set[str] = field(default_factory=set)
    #: zxid of the last create, delete or data write of a direct child (see :meth:`MemZk.children_zxid`)
    child_zxid: int = 0

    def stat(self) -> ZnodeStat:
        return ZnodeStat(
            czxid=self.czxid,
            mzxid=self.mzxid,
            ctime=0,
            mtime=0,
            version=self.version,
            cversion=self.cversion,
            aversion=0,
            ephemeralOwner=self.ephemeral_owner,
            dataLength=len(self.data),
            numChildren=len(self.children),
            pzxid=self.mzxid,
        )


_Fire = list[tuple[Watcher, WatchedEvent]]


class MemZk:
    """One in-memory ZooKeeper tree shared by its sessions (module contract)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0)}
        self._zxid = 0
        self._next_session = 0x1000
        self._live: set[int] = set()
        self._data_watches: dict[str, list[Watcher]] = {}
        self._child_watches: dict[str, list[Watcher]] = {}
        self._sorted: dict[str, tuple[tuple[int, int], list[str]]] = {}

    def session(self) -> MemZkSession:
        """Open a new session (its id is unique in this tree)."""
        with self._lock:
            self._next_session += 1
            sid = self._next_session
            self._live.add(sid)
        return MemZkSession(self, sid)

    def expire(self, session_id: int) -> None:
        """End a session: its ephemeral nodes are deleted (watches fire), its requests fail after."""
        fire: _Fire = []
        with self._lock:
            self._live.discard(session_id)
            mine = sorted(
                (p for p, n in self._nodes.items() if n.ephemeral_owner == session_id),
                key=lambda p: -p.count("/"),
            )
            for path in mine:
                self._delete(path, -1, fire)
        _call(fire)

    def children_zxid(self, path: str) -> int:
        """The zxid of the last create, delete or data write of a direct child of ``path`` (-1 when
        ``path`` is missing). Equal values mean the children of ``path`` and all their data are unchanged
        (a simulator keys shared reads on it; ZooKeeper has no such stat)."""
        with self._lock:
            node = self._nodes.get(path)
            return -1 if node is None else node.child_zxid

    def _sorted_children(self, path: str, node: _Node) -> list[str]:
        """A new list of ``node``'s children, sorted (the sort remembered per path, creation and cversion:
        a big directory read by many sessions is sorted once per change)."""
        hit = self._sorted.get(path)
        if hit is None or hit[0] != (node.czxid, node.cversion):
            hit = self._sorted[path] = ((node.czxid, node.cversion), sorted(node.children))
        return list(hit[1])

    def check_live(self, session_id: int) -> None:
        """``SessionExpiredError`` unless the session is live (what every request checks first)."""
        with self._lock:
            self._check(session_id)

    def dump(self) -> dict[str, bytes]:
        """Every node's data by path (for tests)."""
        with self._lock:
            return {p: n.data for p, n in self._nodes.items()}

    # -- the tree (callers hold the lock) -------------------------------------------------------
    def _check(self, session_id: int) -> None:
        if session_id not in self._live:
            raise SessionExpiredError(f"session 0x{session_id:x} has expired")

    def _node(self, path: str) -> _Node:
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node

    def _create(self, path: str, value: bytes, owner: int, fire: _Fire) -> str:
        if path in self._nodes:
            raise NodeExistsError(path)
        up = _parent(path)
        if up not in self._nodes:
            raise NoNodeError(up)
        self._zxid += 1
        self._nodes[path] = _Node(value, self._zxid, self._zxid, ephemeral_owner=owner)
        pnode = self._nodes[up]
        pnode.children.add(path.rsplit("/", 1)[1])
        pnode.cversion += 1
        pnode.child_zxid = self._zxid
        self._trigger(self._data_watches, path, EventType.CREATED, fire)
        self._trigger(self._child_watches, up, EventType.CHILD, fire)
        return path

    def _set(self, path: str, value: bytes, version: int, fire: _Fire) -> ZnodeStat:
        node = self._node(path)
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        self._zxid += 1
        node.data = value
        node.version += 1
        node.mzxid = self._zxid
        up = self._nodes.get(_parent(path))
        if up is not None:
            up.child_zxid = self._zxid
        self._trigger(self._data_watches, path, EventType.CHANGED, fire)
        return node.stat()

    def _delete(self, path: str, version: int, fire: _Fire) -> None:
        node = self._node(path)
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        if node.children:
            raise NotEmptyError(path)
        self._zxid += 1
        del self._nodes[path]
        up = _parent(path)
        pnode = self._nodes[up]
        pnode.children.discard(path.rsplit("/", 1)[1])
        pnode.cversion += 1
        pnode.child_zxid = self._zxid
        self._trigger(self._data_watches, path, EventType.DELETED, fire)
        self._trigger(self._child_watches, path, EventType.DELETED, fire)
        self._trigger(self._child_watches, up, EventType.CHILD, fire)

    @staticmethod
    def _trigger(table: dict[str, list[Watcher]], path: str, etype: str, fire: _Fire) -> None:
        for w in table.pop(path, []):
            fire.append((w, WatchedEvent(etype, KeeperState.CONNECTED, path)))

    def _watch(self, table: dict[str, list[Watcher]], path: str, watch: Watcher | None) -> None:
        if watch is not None:
            ws = table.setdefault(path, [])
            if watch not in ws:  # ZooKeeper keeps one registration per (watcher, path)
                ws.append(watch)


def _parent(path: str) -> str:
    """The parent of a node: ``/`` for a top-level one (``paths.parent`` gives '')."""
    return parent(path) or "/"


def _call(fire: _Fire) -> None:
    for w, event in fire:
        w(event)


class MemZkSession:
    """One session of a :class:`MemZk` (a :class:`legacy_zk.zkport.ZkPort`)."""

    def __init__(self, zk: MemZk, session_id: int) -> None:
        self.zk = zk
        self.id = session_id
        self.counts: Counter[str] = Counter()
        #: called as ``on_request(op, path)`` before each request (the member's ``zk_request`` events)
        self.on_request: Callable[[str, str], None] | None = None

    def session_id(self) -> int | None:
        return self.id

    def expire(self) -> None:
        """Expire this session (ephemerals vanish; later requests raise ``SessionExpiredError``)."""
        self.zk.expire(self.id)

    def total(self) -> int:
        return sum(self.counts.values())

    def _count(self, op: str, path: str) -> None:
        self.counts[op] += 1
        if self.on_request is not None:
            self.on_request(op, path)

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> str:
        self._count("create", path)
        fire: _Fire = []
        with self.zk._lock:
            self.zk._check(self.id)
            out = self.zk._create(path, value, self.id if ephemeral else 0, fire)
        _call(fire)
        return out

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, ZnodeStat]:
        self._count("get", path)
        with self.zk._lock:
            self.zk._check(self.id)
            node = self.zk._node(path)
            self.zk._watch(self.zk._data_watches, path, watch)
            return node.data, node.stat()

    def get_children(self, path: str, watch: Watcher | None = None) -> list[str]:
        self._count("get_children", path)
        with self.zk._lock:
            self.zk._check(self.id)
            node = self.zk._node(path)
            self.zk._watch(self.zk._child_watches, path, watch)
            return self.zk._sorted_children(path, node)

    def get_many(self, directory: str, names: Sequence[str]) -> list[tuple[bytes, ZnodeStat]]:
        return get_each(self.get, directory, names)

    def exists(self, path: str, watch: Watcher | None = None) -> ZnodeStat | None:
        self._count("exists", path)
        with self.zk._lock:
            self.zk._check(self.id)
            self.zk._watch(self.zk._data_watches, path, watch)
            node = self.zk._nodes.get(path)
            return node.stat() if node is not None else None

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        self._count("set", path)
        fire: _Fire = []
        with self.zk._lock:
            self.zk._check(self.id)
            out = self.zk._set(path, value, version, fire)
        _call(fire)
        return out

    def delete(self, path: str, version: int = -1) -> None:
        self._count("delete", path)
        fire: _Fire = []
        with self.zk._lock:
            self.zk._check(self.id)
            self.zk._delete(path, version, fire)
        _call(fire)

    def multi(self, ops: Sequence[MultiOp]) -> list[Any]:
        self._count("multi", ops[0][1] if ops else "")
        fire: _Fire = []
        with self.zk._lock:
            self.zk._check(self.id)
            saved = (
                copy.deepcopy(self.zk._nodes),
                self.zk._zxid,
                {p: list(ws) for p, ws in self.zk._data_watches.items()},
                {p: list(ws) for p, ws in self.zk._child_watches.items()},
            )
            results: list[Any] = []
            for i, (kind, path, arg) in enumerate(ops):
                try:
                    if kind == "check":
                        node = self.zk._node(path)
                        if node.version != arg:
                            raise BadVersionError(path)
                        results.append(True)
                    elif kind == "set":
                        value, version = arg
                        results.append(self.zk._set(path, value, version, fire))
                    elif kind == "create":
                        results.append(self.zk._create(path, arg, 0, fire))
                    else:
                        raise ValueError(f"unknown multi op {kind!r}")
                except (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError) as e:
                    # nothing happened: the tree, the zxid and the watches the ops consumed come back
                    self.zk._nodes, self.zk._zxid, self.zk._data_watches, self.zk._child_watches = saved
                    # the failed op reports its own error, every other op a rollback
                    return (
                        [RolledBackError() for _ in range(i)]
                        + [e]
                        + [RolledBackError() for _ in ops[i + 1 :]]
                    )
        # the watches of a committed transaction fire once it is whole (none fire when it rolls back)
        _call(fire)
        return results

    def create_parents(self, path: str) -> None:
        create_persistent(self.create, path)
