# pyright: strict
"""``ZkPort``: the ZooKeeper requests a member makes, as a Protocol.

Contract
--------
The rebalance attempt (:mod:`legacy_zk.attempt`), the offset storage (:mod:`legacy_zk.offsets`) and
the watch subscriptions (:mod:`legacy_zk.listeners`) reach ZooKeeper only through this shape. Two
implementations:

* :class:`legacy_zk.zkclient.CountingZk`: a real kazoo session with ZkClient 0.3's
  ``retryUntilConnected``, counting every request;
* :class:`legacy_zk.memzk.MemZkSession`: one session of an in-memory ZooKeeper (unit tests, and the
  same code driven without a server).

Errors are kazoo's exception classes, re-exported here (``NoNodeError``, ``NodeExistsError``,
``BadVersionError`` ...), whichever implementation raises them. A stat has at least ``version``,
``mzxid`` and ``ephemeralOwner`` (kazoo's ``ZnodeStat``). A watch is a one-shot callable receiving an
event with ``type`` (kazoo's ``EventType`` strings), ``state`` and ``path``.

``multi(ops)``: ``ops`` are ``("check", path, version)``, ``("set", path, (value, version))`` and
``("create", path, value)``; the result has one entry per op: on success the op's result, on failure
an exception instance per op (the failed op's own error, the others rolled back), as kazoo's
``TransactionRequest.commit`` returns them.

``create_parents`` is the same recursion for both implementations (:func:`create_persistent`, over
the implementation's own ``create``, so each create is a counted request).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from kazoo.exceptions import (  # pyright: ignore[reportMissingTypeStubs]
    BadVersionError,
    ConnectionClosedError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
)

from legacy_zk.paths import parent

__all__ = [
    "BadVersionError",
    "ConnectionClosedError",
    "KazooException",
    "MultiOp",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "RolledBackError",
    "SessionExpiredError",
    "Stat",
    "WatchEvent",
    "Watcher",
    "ZkPort",
    "create_persistent",
    "get_each",
]


class Stat(Protocol):
    """The parts of a znode's stat the member reads."""

    @property
    def version(self) -> int: ...

    @property
    def mzxid(self) -> int: ...

    @property
    def ephemeralOwner(self) -> int: ...  # noqa: N802 - ZooKeeper's (and kazoo's) name


class WatchEvent(Protocol):
    """A watch notification (kazoo's ``WatchedEvent``)."""

    @property
    def type(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def path(self) -> str: ...


Watcher = Callable[[Any], None]
_R = TypeVar("_R")
#: One op of :meth:`ZkPort.multi`: (kind, path, argument).
MultiOp = tuple[str, str, Any]


@runtime_checkable
class ZkPort(Protocol):
    """What a member asks of ZooKeeper (module contract)."""

    def session_id(self) -> int | None:
        """The current session id (None before the first session)."""
        ...

    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> str:
        """Create ``path``; ``NodeExistsError`` if it exists, ``NoNodeError`` if its parent does not."""
        ...

    def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        """Data and stat; ``NoNodeError`` if missing (no watch is then left)."""
        ...

    def get_children(self, path: str, watch: Watcher | None = None) -> list[str]:
        """Child names; ``NoNodeError`` if missing (no watch is then left)."""
        ...

    def get_many(self, directory: str, names: Sequence[str]) -> Sequence[tuple[bytes, Stat]]:
        """``get`` of ``directory/name`` for each name in order, no watches: one request each, as a loop
        of ``get`` makes them (:func:`get_each`); the first missing node raises ``NoNodeError`` (the
        requests up to it were made). One call so that a simulator can model the burst as a whole."""
        ...

    def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        """The stat or None; the watch is left either way (fires on creation)."""
        ...

    def set(self, path: str, value: bytes, version: int = -1) -> Stat:
        """Write data (at ``version``, -1 = any); ``BadVersionError``, ``NoNodeError``. Returns the stat."""
        ...

    def delete(self, path: str, version: int = -1) -> None:
        """Delete a childless node; ``NoNodeError``, ``BadVersionError``, ``NotEmptyError``."""
        ...

    def multi(self, ops: Sequence[MultiOp]) -> list[Any]:
        """One atomic transaction (module contract)."""
        ...

    def create_parents(self, path: str) -> None:
        """Make sure persistent ``path`` and its ancestors exist, one create per missing node."""
        ...


def get_each(get: Callable[[str], _R], directory: str, names: Sequence[str]) -> list[_R]:
    """What :meth:`ZkPort.get_many` stands for: ``get(directory/name)`` for each name, in order."""
    return [get(f"{directory}/{name}") for name in names]


def create_persistent(create: Callable[[str], object], path: str) -> None:
    """ZkClient's ``createPersistent(path, true)`` through ``create``: create ``path``; if its parent is
    missing, create the parents first (recursively), then ``path`` again; an existing node is fine.

    One ``create`` per attempt, as ZkClient does: a missing ``/a/b/c`` under ``/`` costs five creates
    (``/a/b/c``, ``/a/b``, ``/a``, ``/a/b``, ``/a/b/c``).
    """
    if not path or path == "/":
        return
    try:
        create(path)
    except NodeExistsError:
        return
    except NoNodeError:
        create_persistent(create, parent(path))
        with contextlib.suppress(NodeExistsError):
            create(path)
