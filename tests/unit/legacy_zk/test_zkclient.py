"""CountingZk's retryUntilConnected against a scripted stand-in for kazoo's client (no network)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.states import KazooState

from legacy_zk.zkclient import CountingZk


class ScriptedClient:
    """What CountingZk uses of a KazooClient: ``connected``, ``add_listener``, ``handler``, ``get``.

    ``get`` answers from ``script`` in order; an exception in the script is raised and, like kazoo,
    first marks the client disconnected (kazoo clears its live flag before failing pending requests).
    """

    def __init__(self, script: list[Any], connected: bool = True) -> None:
        self.handler = SequentialThreadingHandler()
        self._connected = connected
        #: set whenever someone finds the client disconnected
        self.found_disconnected = threading.Event()
        self.script = script
        self.sent: list[bool] = []  # ``connected`` at each request actually issued
        self._listeners: list[Any] = []
        self.client_id = (0x1234, b"\x00" * 16)

    @property
    def connected(self) -> bool:
        if not self._connected:
            self.found_disconnected.set()
        return self._connected

    @connected.setter
    def connected(self, value: bool) -> None:
        self._connected = value

    def add_listener(self, fn: Any) -> None:
        self._listeners.append(fn)

    def change(self, state: str) -> None:
        self.connected = state == KazooState.CONNECTED
        for fn in self._listeners:
            fn(state)

    def get(self, path: str, watch: Any = None) -> Any:
        self.sent.append(self.connected)
        item = self.script.pop(0)
        if isinstance(item, Exception):
            self.connected = False
            raise item
        return item


def run(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except Exception as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, out


@pytest.mark.parametrize("error", [ConnectionLoss, SessionExpiredError])
def test_a_request_failing_for_want_of_a_connection_is_reissued_once_connected(error) -> None:
    client = ScriptedClient([error(), (b"data", "stat")])
    retried = threading.Event()
    seen: list[tuple[str, str, str]] = []

    def on_retry(op: str, path: str, e: BaseException) -> None:
        seen.append((op, path, type(e).__name__))
        retried.set()

    zk = CountingZk(client, on_retry=on_retry)
    caller, out = run(lambda: zk.get("/a"))
    assert retried.wait(5)
    client.change(KazooState.SUSPENDED)
    assert caller.is_alive() and client.script == [(b"data", "stat")], "it waits, it does not reissue yet"
    client.change(KazooState.CONNECTED)
    caller.join(5)
    assert out == {"value": (b"data", "stat")}
    assert zk.counts["get"] == 2 and zk.retries == 1 and seen == [("get", "/a", error.__name__)]
    assert client.sent == [True, True]


def test_other_errors_propagate_at_once() -> None:
    zk = CountingZk(ScriptedClient([NoNodeError()]))
    with pytest.raises(NoNodeError):
        zk.get("/missing")
    assert zk.retries == 0 and zk.counts["get"] == 1


def test_a_request_made_while_disconnected_is_sent_once_connected_and_counted_once() -> None:
    client = ScriptedClient([(b"x", "stat")], connected=False)
    zk = CountingZk(client)
    caller, out = run(lambda: zk.get("/b"))
    assert client.found_disconnected.wait(5)
    assert zk.counts["get"] == 0
    client.change(KazooState.CONNECTED)
    caller.join(5)
    assert out == {"value": (b"x", "stat")} and client.sent == [True] and zk.counts["get"] == 1


def test_shutdown_ends_a_wait_and_refuses_later_waits() -> None:
    client = ScriptedClient([ConnectionLoss()])
    retried = threading.Event()
    zk = CountingZk(client, on_retry=lambda *_: retried.set())
    caller, out = run(lambda: zk.get("/c"))
    assert retried.wait(5)
    zk.shutdown()
    caller.join(5)
    assert isinstance(out.get("error"), ConnectionClosedError)
    with pytest.raises(ConnectionClosedError):
        zk.get("/d")  # still disconnected: no wait once closing
