"""A minimal blocking Kafka protocol client (tests, benchmarks): kafka-python's codec over a plain socket."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any


class RawClient:
    """One TCP connection; ``call`` sends a kafka-python request at a version and decodes the answer.

    ``source_ip`` binds the local end (a loopback IP of the test's choosing).
    """

    def __init__(self, host: str, port: int, *, source_ip: str | None = None, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(
            (host, port), timeout=timeout, source_address=(source_ip, 0) if source_ip else None
        )
        self._correlation = 0

    def send(self, request: Any, version: int) -> int:
        """Send without waiting; returns the correlation id."""
        self._correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id="raw")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        return self._correlation

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exactly(4))[0]
        return self._recv_exactly(size)

    def receive(self, request: Any, version: int) -> Any:
        """Read the next response frame and decode it as the answer to ``request``."""
        frame = self.recv_frame()
        return request.header.get_response_class().decode(frame, version=version, header=True)

    def call(self, request: Any, version: int) -> Any:
        self.send(request, version)
        return self.receive(request, version)

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            data = self.sock.recv(n)
            if not data:
                raise ConnectionError("connection closed by the broker")
            chunks.append(data)
            n -= len(data)
        return b"".join(chunks)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the broker has closed this connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRawClient:
    """One asyncio TCP connection speaking kafka-python's codec: one request at a time (the replica fetcher's
    client). Open with :meth:`connect`; :meth:`call` raises ``ConnectionError`` / ``asyncio.IncompleteReadError``
    when the broker goes away and ``TimeoutError`` past ``timeout``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._correlation = 0

    @classmethod
    async def connect(
        cls, host: str, port: int, *, client_id: str = "raw", timeout: float = 10.0
    ) -> AsyncRawClient:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        return cls(reader, writer, client_id)

    async def call(self, request: Any, version: int, *, timeout: float = 30.0) -> Any:
        """Send ``request`` at ``version`` and decode its response."""
        self._correlation += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation, client_id=self._client_id)
        self._writer.write(bytes(request.encode(header=True, framed=True)))
        await self._writer.drain()

        async def receive() -> bytes:
            size = struct.unpack(">i", await self._reader.readexactly(4))[0]
            return await self._reader.readexactly(size)

        frame = await asyncio.wait_for(receive(), timeout)
        response = request.header.get_response_class().decode(frame, version=version, header=True)
        if response.header.correlation_id != self._correlation:
            raise ConnectionError(f"correlation id {response.header.correlation_id} != {self._correlation}")
        return response

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
