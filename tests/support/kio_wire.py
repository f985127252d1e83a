"""Requests kafka-python has no codec for (ConsumerGroupHeartbeat, ConsumerGroupDescribe, OffsetFetch v9), with
kio's writers and readers: the frame a client sends, the response it reads, and a blocking socket client and an
in-process call over :meth:`coordinator.server.Broker.dispatch` that speak them."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import io
import struct
import uuid
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from coordinator.inprocess import LoopbackPeer
from coordinator.rawclient import RawClient
from coordinator.server import Broker
from coordinator.wire import encode_response, nested

__all__ = ["KioClient", "cgh", "dispatch", "owned", "request_frame", "response_body"]


def request_frame(
    api_key: int, version: int, correlation_id: int, body: Any, client_id: str = "kio"
) -> bytes:
    """The request as it goes on the wire, without its 4-byte size: header, then body."""
    cls: Any = load_request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(cls.__header_schema__)(
        buf,
        cls.__header_schema__(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(correlation_id),
            client_id=client_id,
        ),
    )
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def response_body(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """``(correlation id, kio response)`` of a response frame without its size."""
    cls = load_response_schema(api_key, version)
    header, size = entity_reader(cls.__header_schema__)(frame, 0)
    body, _ = entity_reader(cls)(frame, size)
    return int(header.correlation_id), body


def cgh(
    version: int,
    group: str,
    member: str,
    epoch: int,
    *,
    topics: tuple[str, ...] | None = None,
    owned: tuple[Any, ...] | None = None,
    assignor: str | None = None,
    instance_id: str | None = None,
    rebalance_timeout_ms: int = -1,
) -> Any:
    """A kio ConsumerGroupHeartbeat request of ``version``."""
    cls: Any = load_request_schema(68, version)
    return cls(
        group_id=group,
        member_id=member,
        member_epoch=i32(epoch),
        instance_id=instance_id,
        rebalance_timeout=datetime.timedelta(milliseconds=rebalance_timeout_ms),
        subscribed_topic_names=topics,
        server_assignor=assignor,
        topic_partitions=owned,
    )


def owned(version: int, parts: dict[uuid.UUID, tuple[int, ...]]) -> tuple[Any, ...]:
    """A request's owned ``TopicPartitions`` of ``version``."""
    tp = nested(load_request_schema(68, version), "topic_partitions")
    return tuple(tp(topic_id=t, partitions=tuple(i32(p) for p in ps)) for t, ps in parts.items())


def dispatch(broker: Broker, api_key: int, version: int, body: Any, loop: asyncio.AbstractEventLoop) -> Any:
    """One request through :meth:`Broker.dispatch` (no socket) inside ``loop`` (the group runners arm their timers
    on it); the kio response, read back from its bytes."""

    async def call() -> Any:
        out = broker.dispatch(request_frame(api_key, version, 1, body), LoopbackPeer())
        assert out is not None
        correlation_id, _key, _version, result = out
        if inspect.isawaitable(result):
            result = await result
        return encode_response(correlation_id, result)

    data = loop.run_until_complete(call())
    return response_body(api_key, version, data[4:])[1]


class KioClient:
    """One TCP connection to a broker speaking kio's codec (see the module docstring)."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.raw = RawClient(host, port, timeout=timeout)
        self._correlation = 0

    def send(self, api_key: int, version: int, body: Any) -> int:
        self._correlation += 1
        frame = request_frame(api_key, version, self._correlation, body)
        self.raw.send_bytes(struct.pack(">i", len(frame)) + frame)
        return self._correlation

    def call(self, api_key: int, version: int, body: Any) -> Any:
        """Send and read the answer (the next frame on this connection)."""
        correlation_id = self.send(api_key, version, body)
        got, response = response_body(api_key, version, self.raw.recv_frame())
        assert got == correlation_id
        return response

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> KioClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
