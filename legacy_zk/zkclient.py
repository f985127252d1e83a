"""A thin counting wrapper around one ``KazooClient`` that retries as ZkClient 0.3 did (a ``ZkPort``).

Contract
--------
Every ZooKeeper request the member makes goes through :class:`CountingZk`; each one is counted by
operation (``create``, ``get``, ``get_children``, ``exists``, ``set``, ``delete``, ``multi``) in
:attr:`CountingZk.counts` and reported to ``on_request(op, path)`` (the member writes a
``zk_request`` event). Wrapping the client object, not patching kazoo, keeps several members in one
process apart. Requests kazoo makes on its own (pings, the session handshake) are not counted here;
the server-side ``mntr`` counters see them.

**retryUntilConnected** (spec 1.15). Every request is wrapped as ZkClient 0.3 wrapped create,
delete, readData, writeData, exists and getChildren: when it fails with ``ConnectionLoss`` or
``SessionExpiredError`` the caller waits, without a time limit, until the client is connected again
(to the same session or, after an expiry, to a new one) and the request is issued again (counted
again, and reported to ``on_retry(op, path, error)`` first). A request made while the client is not
connected waits before it is sent (the Java client queued it). A blip therefore stalls the caller;
it does not fail it. A reissued write may meet its own earlier success (``NodeExists`` after a create,
``NoNode`` after a delete, ``BadVersion`` after a versioned set): callers handle those as ZkClient's
callers did. Only :meth:`shutdown` ends a wait: waiting callers, and any request that fails for want
of a connection afterwards, get ``ConnectionClosedError``. Never call a request from one of kazoo's
own threads (its connection or callback thread): the wait would block the reconnect it waits for.

Other errors are kazoo's (``NoNodeError``, ``NodeExistsError``, ``BadVersionError`` ...). Parent
creation is done here request by request (as ZkClient's ``createPersistent(path, true)`` did) instead
of kazoo's ``makepath``, so that every request is counted.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    SessionExpiredError,
)
from kazoo.protocol.states import KazooState, ZnodeStat

from legacy_zk.zkport import MultiOp, create_persistent, get_each

T = TypeVar("T")

#: The errors after which ZkClient's ``retryUntilConnected`` waits for a connection and reissues.
RETRIED = (ConnectionLoss, SessionExpiredError)


class CountingZk:
    """Counting, retrying facade over ``client`` (see module docstring).

    Create it before ``client.start()``: it listens to the client's state from the first connect.
    """

    def __init__(
        self,
        client: KazooClient,
        on_request: Callable[[str, str], None] | None = None,
        on_retry: Callable[[str, str, BaseException], None] | None = None,
    ) -> None:
        self.client = client
        self.counts: Counter[str] = Counter()
        self.retries = 0
        self._on_request = on_request
        self._on_retry = on_retry
        self._lock = threading.Lock()  # never held across a yield (safe for threads and greenlets)
        self._state_lock = threading.Lock()
        self._connected = client.handler.event_object()
        self._closing = False
        client.add_listener(self._on_state)

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

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    # -- connection state -----------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        """kazoo state listener (its connection thread: never blocks)."""
        with self._state_lock:
            if state == KazooState.CONNECTED:
                self._connected.set()
            elif not self._closing:
                self._connected.clear()

    def _wait_connected(self) -> None:
        """ZkClient's ``waitUntilConnected()``: block until connected (or :meth:`shutdown`)."""
        while True:
            with self._state_lock:
                if self._closing:
                    raise ConnectionClosedError("the member is closing")
                # kazoo clears its "live" flag before it fails the pending requests, and sets it
                # before it calls the state listeners: reading it under our lock cannot lose a wake-up.
                if self.client.connected:
                    return
                self._connected.clear()
            self._connected.wait()

    def shutdown(self) -> None:
        """End every wait for a connection now and any later one at once (``ConnectionClosedError``)."""
        with self._state_lock:
            self._closing = True
            self._connected.set()

    def _call(self, op: str, path: str, request: Callable[[], T]) -> T:
        """One request under ``retryUntilConnected`` (module contract)."""
        while True:
            if not self.client.connected:
                # The Java client queues a request until it is connected; kazoo fails it at once
                # while a session is being replaced. Wait here, so only requests sent are counted.
                self._wait_connected()
            with self._lock:
                self.counts[op] += 1
            if self._on_request is not None:
                self._on_request(op, path)
            try:
                return request()
            except ConnectionClosedError:
                raise  # (a SessionExpiredError subclass) the client was stopped: nothing to wait for
            except RETRIED as e:
                if self._closing:
                    raise ConnectionClosedError(f"{e.__class__.__name__} while closing") from e
                with self._lock:
                    self.retries += 1
                if self._on_retry is not None:
                    self._on_retry(op, path, e)
                self._wait_connected()

    # -- requests -------------------------------------------------------------------------------
    def create(self, path: str, value: bytes = b"", ephemeral: bool = False) -> str:
        return self._call("create", path, lambda: self.client.create(path, value, ephemeral=ephemeral))

    def get(self, path: str, watch: Callable | None = None) -> tuple[bytes, ZnodeStat]:
        return self._call("get", path, lambda: self.client.get(path, watch=watch))

    def get_children(self, path: str, watch: Callable | None = None) -> list[str]:
        return self._call("get_children", path, lambda: self.client.get_children(path, watch=watch))

    def get_many(self, directory: str, names: Sequence[str]) -> list[tuple[bytes, ZnodeStat]]:
        return get_each(self.get, directory, names)

    def exists(self, path: str, watch: Callable | None = None) -> ZnodeStat | None:
        return self._call("exists", path, lambda: self.client.exists(path, watch=watch))

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        return self._call("set", path, lambda: self.client.set(path, value, version=version))

    def delete(self, path: str, version: int = -1) -> None:
        self._call("delete", path, lambda: self.client.delete(path, version=version))

    def multi(self, ops: Sequence[MultiOp]) -> list[Any]:
        """One ``multi`` request. ``ops``: ``("check", path, version)``, ``("set", path, (value,
        version))``, ``("create", path, value)``. Returns kazoo's per-op results (exceptions for
        failed ops, the whole transaction then being rolled back by the server)."""

        def commit() -> list[Any]:
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
            return tx.commit()

        return self._call("multi", ops[0][1] if ops else "", commit)

    def create_parents(self, path: str) -> None:
        """Make sure persistent ``path`` and its ancestors exist (ZkClient ``createPersistent(p, true)``)."""
        create_persistent(self.create, path)
