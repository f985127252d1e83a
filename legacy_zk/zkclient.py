"""A thin counting wrapper around one ``KazooClient``.

Contract
--------
Every ZooKeeper request the member makes goes through :class:`CountingZk`; each one is counted by
operation (``create``, ``get``, ``get_children``, ``exists``, ``set``, ``delete``, ``multi``) in
:attr:`CountingZk.counts` and reported to ``on_request(op, path)`` (the member writes a
``zk_request`` event). Wrapping the client object, not patching kazoo, keeps several members in one
process apart. Requests kazoo makes on its own (pings, the session handshake) are not counted here;
the server-side ``mntr`` counters see them.

Errors are kazoo's (``NoNodeError``, ``NodeExistsError``, ``BadVersionError``,
``ConnectionLoss``, ``SessionExpiredError`` ...). Parent creation is done here request by request
(as ZkClient's ``createPersistent(path, true)`` did) instead of kazoo's ``makepath``, so that
every request is counted.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import ZnodeStat

from legacy_zk.paths import parent


class CountingZk:
    """Counting facade over ``client`` (see module docstring)."""

    def __init__(self, client: KazooClient, on_request: Callable[[str, str], None] | None = None) -> None:
        self.client = client
        self.counts: Counter[str] = Counter()
        self._on_request = on_request
        self._lock = threading.Lock()

    @property
    def handler(self) -> Any:
        return self.client.handler

    def session_id(self) -> int | None:
        """The current session id (None before the first session)."""
        cid = self.client.client_id
        return cid[0] if cid else None

    def session_password(self) -> str | None:
        """The current session's password as hex (lets a test harness expire the session from outside)."""
        cid = self.client.client_id
        return cid[1].hex() if cid else None

    def _count(self, op: str, path: str) -> None:
        with self._lock:
            self.counts[op] += 1
        if self._on_request is not None:
            self._on_request(op, path)

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    # -- synchronous requests -------------------------------------------------------------------
    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> str:
        self._count("create", path)
        return self.client.create(path, value, ephemeral=ephemeral)

    def get(self, path: str, watch: Callable | None = None) -> tuple[bytes, ZnodeStat]:
        self._count("get", path)
        return self.client.get(path, watch=watch)

    def get_children(self, path: str, watch: Callable | None = None) -> list[str]:
        self._count("get_children", path)
        return self.client.get_children(path, watch=watch)

    def exists(self, path: str, watch: Callable | None = None) -> ZnodeStat | None:
        self._count("exists", path)
        return self.client.exists(path, watch=watch)

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        self._count("set", path)
        return self.client.set(path, value, version=version)

    def delete(self, path: str, version: int = -1) -> None:
        self._count("delete", path)
        self.client.delete(path, version=version)

    def multi(self, ops: list[tuple[str, str, Any]]) -> list[Any]:
        """One ``multi`` request. ``ops``: ``("check", path, version)``, ``("set", path, (value,
        version))``, ``("create", path, value)``. Returns kazoo's per-op results (exceptions for
        failed ops, the whole transaction then being rolled back by the server)."""
        tx = self.client.transaction()
        for kind, path, arg in ops:
            if kind == "check":
                tx.check(path, arg)
            elif kind == "set":
                value, version = arg
                tx.set_data(path, value, version)
            elif kind == "create":
                tx.create(path, arg)
            else:
                raise ValueError(f"unknown multi op {kind!r}")
        self._count("multi", ops[0][1] if ops else "")
        return tx.commit()

    def create_parents(self, path: str) -> None:
        """Make sure persistent ``path`` and its ancestors exist (ZkClient ``createPersistent(p, true)``)."""
        if not path or path == "/":
            return
        try:
            self.create(path)
        except NodeExistsError:
            return
        except NoNodeError:
            self.create_parents(parent(path))
            with contextlib.suppress(NodeExistsError):
                self.create(path)

    # -- asynchronous requests (watch re-arming from callbacks) -------------------------------
    def get_children_async(self, path: str, watch: Callable | None = None) -> Any:
        self._count("get_children", path)
        return self.client.get_children_async(path, watch=watch)

    def exists_async(self, path: str, watch: Callable | None = None) -> Any:
        self._count("exists", path)
        return self.client.exists_async(path, watch=watch)
