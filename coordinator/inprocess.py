"""Drive a :class:`~coordinator.server.Broker` without sockets, with kafka-python's own codec.

For tests and benchmarks: :meth:`InProcessClient.call` encodes a kafka-python request object at a
given version (header included, exactly the bytes a client would send), hands the frame to
:meth:`Broker.dispatch <coordinator.server.Broker.dispatch>`, encodes the broker's answer with kio
and decodes it again with kafka-python. So every call crosses both codecs the way a real exchange
does, minus the TCP socket.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from coordinator.server import Broker
from coordinator.wire import encode_response, error_response

__all__ = ["InProcessClient", "LoopThread", "LoopbackPeer"]

T = TypeVar("T")


@dataclass
class LoopbackPeer:
    """A pretend connection from 127.0.0.1 (what :class:`~coordinator.server.Peer` needs)."""

    client_host: str = "/127.0.0.1"
    advertised_host: str = "127.0.0.1"
    advertised_port: int = 9092


class InProcessClient:
    """Send kafka-python request objects to an in-process broker (see the module docstring)."""

    def __init__(self, broker: Broker, peer: LoopbackPeer | None = None, client_id: str = "inproc") -> None:
        self.broker = broker
        self.peer = peer or LoopbackPeer()
        self.client_id = client_id
        self._correlation = 0

    def frame(self, request: Any, version: int) -> bytes:
        """The request frame (header + body, no size prefix) a client would send."""
        self._correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id=self.client_id)
        return bytes(request.encode(header=True))

    def send(self, request: Any, version: int) -> tuple[int, Any] | None:
        """Dispatch; ``(correlation_id, result)`` where result is a kio response or an awaitable."""
        out = self.broker.dispatch(self.frame(request, version), self.peer)
        if out is None:
            return None
        correlation_id, _api_key, _version, result = out
        return correlation_id, result

    def decode(self, request: Any, version: int, correlation_id: int, response: Any) -> Any:
        """kio response -> wire bytes -> kafka-python response object of the matching class."""
        data = encode_response(correlation_id, response)
        response_type = request.header.get_response_class()
        decoded = response_type.decode(data[4:], version=version, header=True)
        assert decoded.header.correlation_id == correlation_id, "correlation id mismatch"
        return decoded

    async def acall(self, request: Any, version: int) -> Any:
        """Like :meth:`call`, awaiting a parked response (JoinGroup, SyncGroup, long-poll Fetch). A parked
        response that fails is answered UNKNOWN_SERVER_ERROR, as the server's connection does."""
        sent = self.send(request, version)
        if sent is None:
            return None
        correlation_id, result = sent
        if inspect.isawaitable(result):
            try:
                result = await result
            except Exception:
                result = error_response(request.API_KEY, version, ErrorCode.unknown_server_error)
                if result is None:
                    raise
        return self.decode(request, version, correlation_id, result)

    def call(self, request: Any, version: int) -> Any:
        """Send and decode a response that is available immediately (no event loop needed)."""
        sent = self.send(request, version)
        if sent is None:
            return None
        correlation_id, result = sent
        if inspect.iscoroutine(result):
            result.close()
            raise RuntimeError("response is not immediate (long-poll); use acall()")
        if isinstance(result, asyncio.Future):
            raise RuntimeError("response is parked; use acall()")
        return self.decode(request, version, correlation_id, result)


class LoopThread:
    """An asyncio event loop running in a daemon thread of its own, for tests that drive in-process brokers
    (with real sockets) from blocking clients such as kafka-python. :meth:`run` awaits a coroutine there,
    :meth:`call` runs a plain function there (so it sees the brokers' state between two loop steps)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="inprocess-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coro`` on the loop and return its result (its exception is raised here)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[..., T], *args: Any, timeout: float = 30.0) -> T:
        """Call ``fn(*args)`` on the loop thread and return its result."""

        async def wrapper() -> T:
            return fn(*args)

        return self.run(wrapper(), timeout)

    def close(self) -> None:
        """Stop the loop and join the thread (cancel what still runs first)."""

        async def cancel_rest() -> None:
            current = asyncio.current_task()
            rest = [t for t in asyncio.all_tasks() if t is not current]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        self.run(cancel_rest())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
