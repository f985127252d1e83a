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
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.server import Broker
from coordinator.wire import encode_response, error_response

__all__ = ["InProcessClient", "LoopbackPeer"]


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
