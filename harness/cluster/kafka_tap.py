"""A Kafka tap: a loopback TCP proxy that counts the Kafka requests passing through it.

A third-party broker (tansu) writes no history, so the herd figures (coordination requests per trigger
window, steady-state request rates) are counted on the wire instead: clients reach the broker only through
the tap (the broker advertises the tap's address), and the tap writes what herdlab's broker writes itself
(:mod:`coordinator.server`).

Contract
--------
* :class:`KafkaTap` listens on ``listen_host`` (port 0: a free port, see :attr:`KafkaTap.port`) and
  forwards every connection to ``upstream``. Bytes are never altered, in either direction (with
  ``proxy_protocol`` a PROXY v1 line goes upstream before them); responses are
  forwarded untouched, and only OffsetCommit's are read (below).
* The client-to-broker stream is split into Kafka frames (4-byte big-endian size, then the request header:
  api_key, api_version, correlation_id, client_id) by :class:`FrameSplitter`: a frame may arrive split across
  reads, and one read may hold several frames.
* Every request of :data:`harness.kernel.events.COORDINATION_APIS` is decoded with kio (header and body)
  and written as one ``group_request`` event with the broker's fields (``impl`` ``"coordinator"``,
  ``broker_id``, ``api``, ``client``, ``group``, ``member``, ``generation``) plus ``observed="tap"``. Other
  requests are only counted from their first bytes (never buffered whole), but for OffsetCommit (below). A coordination request kio cannot
  decode is still written, with ``client``, ``group``, ``member`` and ``generation`` None.
* OffsetCommit requests are decoded too (who commits which offsets) and kept per connection until their
  response, which is decoded as well (responses come in request order on a connection; they are read,
  never changed): one ``commit`` event per partition the broker accepted and one ``commit_rejected`` (with
  ``error``, the error's name) per partition it refused, with the fields herdlab's broker writes (group,
  member, generation, topic, partition, offset) plus ``observed="tap"``. Every event of a frame is stamped
  when the bytes completing it reached the tap, before they are forwarded (a commit is accepted before the
  member can write what it does next, as herdlab's broker stamps its own before it answers). So the commit figures (stale
  generations, non-owners, the migration proof's broker-side commits) read a third-party broker's own
  answers. A response kio cannot decode writes nothing.
* ConsumerGroupHeartbeat (KIP-848's consumer protocol) is kept per connection until its response too (matched
  by correlation id) and both are decoded: one ``group_request`` event per exchange with the fields herdlab's broker
  writes (``api``, ``client``, ``group``, ``member``, ``member_epoch``: the request's, ``epoch``: the response's,
  ``error``: the error's name, absent when NONE, ``change`` from :func:`harness.kernel.heartbeats.carries_change`)
  plus ``observed="tap"``, stamped when the response reached the tap. A request kio cannot decode is written at
  once with ``group`` and ``member`` None and no ``change``; a response kio cannot decode writes the exchange with
  ``epoch`` None and no ``change`` (both then count as the change's own cost, never as steady traffic).
* Every ``interval_s`` (and at :meth:`KafkaTap.close`) one ``broker_request`` event holds the counts since the
  previous one, with the broker's fields (``interval_s``, ``requests`` by API name, ``total``,
  ``handling_us`` and ``rejected``, both empty: the tap sees no handling time and rejects nothing) plus
  ``observed="tap"``. Nothing is written for an interval without requests.
* One asyncio loop in one daemon thread serves every connection; :meth:`KafkaTap.start` returns once it
  listens, :meth:`KafkaTap.close` (idempotent) closes the listener and every connection and flushes the
  counters. Only loopback addresses are accepted (a :class:`ValueError` otherwise).

Cost: one extra loopback hop and an asyncio read and write per chunk. Decoding (kio) is done only for the
coordination requests (and ConsumerGroupHeartbeat, whose every exchange is an event), which are rare next to Fetch and Produce.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import struct
import time
from collections import Counter
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader

from harness.cluster.loop_thread import LoopThread, cancel_others
from harness.kernel.events import COORDINATION_APIS
from harness.kernel.heartbeats import carries_change
from harness.kernel.history import History

__all__ = [
    "COORDINATION_KEYS",
    "FrameSplitter",
    "HeartbeatRequest",
    "KafkaTap",
    "RequestInfo",
    "api_name",
    "decode_heartbeat_request",
    "decode_request_info",
    "heartbeat_fields",
]

log = logging.getLogger("harness.kafka_tap")

_CHUNK = 65536
_SIZE = struct.Struct(">i")
_PEEK = struct.Struct(">hh")  # api_key, api_version
_CORRELATION = struct.Struct(">i")  # a response's correlation_id
#: OffsetCommit's API key: its requests and responses are decoded for the broker's commit results
OFFSET_COMMIT = 8
#: ConsumerGroupHeartbeat's API key: its requests and responses are decoded for the exchange's event
CONSUMER_GROUP_HEARTBEAT = 68


@cache
def api_name(api_key: int, api_version: int) -> str:
    """Kafka's display name of an API (``"JoinGroup"``), from kio's schema class; ``str(api_key)`` when kio
    does not know that key and version."""
    try:
        cls = load_request_schema(api_key, api_version)
    except Exception:  # noqa: BLE001 - kio raises its own index errors for unknown keys / versions
        return str(api_key)
    name = cls.__name__
    return name[: -len("Request")] if name.endswith("Request") else name


@cache
def _readers(api_key: int, api_version: int) -> tuple[Any, Any]:
    cls = load_request_schema(api_key, api_version)
    return entity_reader(cls.__header_schema__), entity_reader(cls)


@dataclass(frozen=True)
class RequestInfo:
    """What the tap records of one coordination request (None where the request does not say)."""

    api: str
    client: str | None
    group: str | None
    member: str | None
    generation: int | None
    assignments: int | None = None


def decode_request_info(frame: bytes) -> RequestInfo:
    """Decode one request frame (without its size prefix) with kio: API name, client id, and the body's group
    (``group_id``, or FindCoordinator's ``key``), ``member_id`` and ``generation_id``. A frame kio cannot
    decode gives only the API name."""
    api_key, api_version = _PEEK.unpack_from(frame, 0)
    name = api_name(api_key, api_version)
    try:
        read_header, read_body = _readers(api_key, api_version)
        header, hsize = read_header(frame, 0)
        body, _ = read_body(frame, hsize)
    except Exception:  # noqa: BLE001 - a frame the tap cannot read is forwarded and counted anyway
        return RequestInfo(name, None, None, None, None, None)
    return RequestInfo(
        api=name,
        client=header.client_id,
        group=getattr(body, "group_id", None) or getattr(body, "key", None),
        member=getattr(body, "member_id", None),
        generation=getattr(body, "generation_id", None),
        assignments=None if getattr(body, "assignments", None) is None else len(body.assignments),
    )


@dataclass(frozen=True)
class CommitRequest:
    """An OffsetCommit request as the tap remembers it until its response: who commits what."""

    version: int
    group: str | None
    member: str | None
    generation: int | None
    offsets: dict[tuple[str | None, int], int]  # (topic, partition) -> offset


def decode_commit_request(frame: bytes) -> tuple[int, CommitRequest] | None:
    """An OffsetCommit request frame's correlation id and what it commits; None when kio cannot read it."""
    api_key, api_version = _PEEK.unpack_from(frame, 0)
    try:
        read_header, read_body = _readers(api_key, api_version)
        header, hsize = read_header(frame, 0)
        body, _ = read_body(frame, hsize)
    except Exception:  # noqa: BLE001 - forwarded and counted anyway
        return None
    offsets = {
        (getattr(t, "name", None), p.partition_index): p.committed_offset
        for t in body.topics
        for p in t.partitions
    }
    generation = getattr(body, "generation_id_or_member_epoch", getattr(body, "generation_id", None))
    return header.correlation_id, CommitRequest(
        api_version, body.group_id, body.member_id, generation, offsets
    )


@dataclass(frozen=True)
class HeartbeatRequest:
    """A ConsumerGroupHeartbeat request as the tap remembers it until its response."""

    version: int
    client: str | None
    group: str
    member: str
    member_epoch: int
    owned: bool  # its owned TopicPartitions were not null


def decode_heartbeat_request(frame: bytes) -> tuple[int, HeartbeatRequest] | None:
    """A ConsumerGroupHeartbeat request frame's correlation id and what the exchange's event needs of it; None when
    kio cannot read it."""
    api_key, api_version = _PEEK.unpack_from(frame, 0)
    try:
        read_header, read_body = _readers(api_key, api_version)
        header, hsize = read_header(frame, 0)
        body, _ = read_body(frame, hsize)
    except Exception:  # noqa: BLE001 - forwarded and counted anyway
        return None
    return header.correlation_id, HeartbeatRequest(
        api_version,
        header.client_id,
        body.group_id,
        body.member_id,
        int(body.member_epoch),
        body.topic_partitions is not None,
    )


def heartbeat_fields(request: HeartbeatRequest, frame: bytes) -> dict[str, Any]:
    """The ``group_request`` fields of one ConsumerGroupHeartbeat exchange, as herdlab's broker writes them
    (:mod:`coordinator.groups.consumer`): the request's and the response's; ``epoch`` None and no ``change`` when
    kio cannot read the response."""
    fields: dict[str, Any] = {
        "api": "ConsumerGroupHeartbeat",
        "client": request.client,
        "group": request.group,
        "member": request.member,
        "member_epoch": request.member_epoch,
        "epoch": None,
    }
    try:
        read_header, read_body = _response_readers(CONSUMER_GROUP_HEARTBEAT, request.version)
        _, hsize = read_header(frame, 0)
        body, _ = read_body(frame, hsize)
    except Exception:  # noqa: BLE001 - forwarded anyway
        return fields
    error = int(body.error_code.value)
    fields["member"] = request.member or body.member_id
    fields["epoch"] = int(body.member_epoch)
    fields["change"] = carries_change(
        request_epoch=request.member_epoch,
        request_owned=request.owned,
        response_error=error,
        response_epoch=int(body.member_epoch),
        response_assignment=body.assignment is not None,
    )
    if error != 0:
        fields["error"] = body.error_code.name.upper()
    return fields


@cache
def _response_readers(api_key: int, api_version: int) -> tuple[Any, Any]:
    cls = load_response_schema(api_key, api_version)
    return entity_reader(cls.__header_schema__), entity_reader(cls)


def commit_results(request: CommitRequest, frame: bytes) -> list[dict[str, Any]]:
    """The broker's answer to ``request`` per partition, as herdlab's broker writes its ``commit`` /
    ``commit_rejected`` events (group, member, generation, topic, partition, offset; error: the error's
    name when refused); empty when kio cannot read the response."""
    try:
        read_header, read_body = _response_readers(OFFSET_COMMIT, request.version)
        _, hsize = read_header(frame, 0)
        body, _ = read_body(frame, hsize)
    except Exception:  # noqa: BLE001 - forwarded anyway
        return []
    out = []
    for t in body.topics:
        topic = getattr(t, "name", None)
        for p in t.partitions:
            fields: dict[str, Any] = {
                "group": request.group,
                "member": request.member,
                "generation": request.generation,
                "topic": topic,
                "partition": p.partition_index,
                "offset": request.offsets.get((topic, p.partition_index)),
            }
            if p.error_code.value != 0:
                fields["error"] = p.error_code.name.upper()
            out.append(fields)
    return out


class FrameSplitter:
    """Splits a Kafka byte stream into frames: requests (client to broker) or, with ``peek`` :data:`_CORRELATION`,
    responses (broker to client).

    :meth:`feed` takes the bytes of one read and yields, for each frame whose start arrived, the fields
    ``peek`` reads after the size (a request's ``api_key, api_version``; a response's ``correlation_id``) and
    then ``frame``: the whole frame (without the size) when the first field is in ``wanted``, else None (the
    rest of that frame is skipped, never buffered). ``wanted`` may change between reads (a dict of the
    correlation ids awaited).
    """

    def __init__(self, wanted: Container[int], peek: struct.Struct = _PEEK) -> None:
        self.wanted = wanted
        self._peek = peek
        self._buf = bytearray()
        self._skip = 0  # bytes of an unwanted frame still to pass
        self._need: int | None = None  # size of the wanted frame being buffered

    def feed(self, data: bytes) -> Iterator[tuple[Any, ...]]:
        """Consume ``data``; yield each request as described in the class docstring."""
        view = memoryview(data)
        while view:
            if self._skip:
                n = min(self._skip, len(view))
                self._skip -= n
                view = view[n:]
                continue
            self._buf += view
            view = view[len(view) :]
            while True:
                if self._need is not None:
                    if len(self._buf) < self._need:
                        break
                    frame = bytes(self._buf[: self._need])
                    del self._buf[: self._need]
                    self._need = None
                    yield (*self._peek.unpack_from(frame, 0), frame)
                    continue
                if len(self._buf) < 4 + self._peek.size:  # size + the peeked header fields
                    break
                (size,) = _SIZE.unpack_from(self._buf, 0)
                head = self._peek.unpack_from(self._buf, 4)
                if size < self._peek.size:
                    raise ValueError(f"Kafka frame of {size} bytes is shorter than its header")
                del self._buf[:4]
                if head[0] in self.wanted:
                    self._need = size
                    continue
                yield (*head, None)
                if len(self._buf) >= size:
                    del self._buf[:size]
                    continue
                self._skip = size - len(self._buf)
                self._buf.clear()
                break


def _require_loopback(host: str) -> None:
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{host} is not a loopback address: the Kafka tap only runs on 127.0.0.0/8")


class KafkaTap:
    """A counting Kafka proxy in front of one broker (see the module contract).

    ``history``: where the events go (a :class:`~harness.history.writer.HistoryWriter` with source ``tap``
    and role broker, usually). ``broker_id``: written into the events, as the broker does.
    ``proxy_protocol``: each upstream connection starts with a PROXY protocol v1 line naming the tap as the
    destination (herdlab's broker then advertises the tap, so clients stay behind it; tansu does not read
    it: it is told the tap's address with ``--advertised-listener-url`` instead). The clients' bytes are
    still forwarded unaltered after it.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        history: History,
        listen_host: str = "127.0.0.1",
        port: int = 0,
        interval_s: float = 1.0,
        broker_id: int = 0,
        proxy_protocol: bool = False,
    ) -> None:
        _require_loopback(listen_host)
        _require_loopback(upstream[0])
        self.upstream = upstream
        self.history = history
        self.listen_host = listen_host
        self.port = port
        self.interval_s = interval_s
        self.broker_id = broker_id
        self.proxy_protocol = proxy_protocol
        self.requests: Counter[str] = Counter()
        self._reported: Counter[str] = Counter()
        self._last_report = time.monotonic()
        self._wanted = frozenset({*COORDINATION_KEYS, OFFSET_COMMIT})  # ConsumerGroupHeartbeat is one of them
        self._loop = LoopThread("kafka-tap")
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the tap (what clients bootstrap from)."""
        return f"{self.listen_host}:{self.port}"

    # ------------------------------------------------------------------ life cycle

    def start(self) -> KafkaTap:
        """Listen and serve in a daemon thread; returns once the port is bound."""
        self._loop.start(self._listen())
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.listen_host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._last_report = time.monotonic()
        asyncio.get_running_loop().create_task(self._report_loop())

    def close(self) -> None:
        """Close the listener and every connection, write the last counters. Idempotent."""
        if self._loop.stop(self._shutdown()):
            self.report()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.close()
        await cancel_others()

    def __enter__(self) -> KafkaTap:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ forwarding

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError as e:
            log.debug("kafka tap: upstream %s:%d unreachable: %s", *self.upstream, e)
            writer.close()
            return
        self._writers.update((writer, up_writer))
        if self.proxy_protocol:
            src_host, src_port = writer.get_extra_info("peername")[:2]
            dst_host, dst_port = writer.get_extra_info("sockname")[:2]
            up_writer.write(f"PROXY TCP4 {src_host} {dst_host} {src_port} {dst_port}\r\n".encode())
        # this connection's OffsetCommits and ConsumerGroupHeartbeats awaiting their response
        pending: dict[int, CommitRequest | HeartbeatRequest] = {}
        requests = FrameSplitter(self._wanted)
        responses = FrameSplitter(pending, _CORRELATION)
        try:
            await asyncio.gather(
                self._pump(
                    reader, up_writer, lambda data, t: self._requests(requests.feed(data), pending, t)
                ),
                self._pump(
                    up_reader, writer, lambda data, t: self._responses(responses.feed(data), pending, t)
                ),
            )
        except (OSError, ValueError, asyncio.IncompleteReadError) as e:
            log.debug("kafka tap connection closed: %s", e)
        except asyncio.CancelledError:
            pass  # close(): the connection ends with the tap
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.close()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        observe: Callable[[bytes, int], None],
    ) -> None:
        try:
            while True:
                data = await reader.read(_CHUNK)
                if not data:
                    break
                # stamped on arrival: what the tap writes of these bytes happened before the other end got
                # them (a commit's acceptance before the member's next event), whenever it is decoded
                arrived_ns = time.time_ns()
                writer.write(data)  # forwarded first, untouched; observed after
                observe(data, arrived_ns)
                await writer.drain()
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if writer.can_write_eof():
                    writer.write_eof()

    def _requests(
        self,
        frames: Iterator[tuple[Any, ...]],
        pending: dict[int, CommitRequest | HeartbeatRequest],
        arrived_ns: int,
    ) -> None:
        """Count each request; remember each OffsetCommit and ConsumerGroupHeartbeat until its response (before
        the broker can answer: this runs before the pump next awaits). ``arrived_ns``: when the bytes completing
        the frames came."""
        for key, version, frame in frames:
            if key == OFFSET_COMMIT and frame is not None:
                self.requests[api_name(key, version)] += 1
                got = decode_commit_request(frame)
                if got is not None:
                    pending[got[0]] = got[1]
                continue
            if key == CONSUMER_GROUP_HEARTBEAT and frame is not None:
                heartbeat = decode_heartbeat_request(frame)
                if heartbeat is not None:
                    self.requests[api_name(key, version)] += 1
                    pending[heartbeat[0]] = heartbeat[1]
                    continue
            self._count(key, version, frame, arrived_ns)

    def _responses(
        self,
        frames: Iterator[tuple[Any, ...]],
        pending: dict[int, CommitRequest | HeartbeatRequest],
        arrived_ns: int,
    ) -> None:
        """Each OffsetCommit response as the broker's ``commit`` / ``commit_rejected`` events, each
        ConsumerGroupHeartbeat exchange as its ``group_request`` event, stamped ``arrived_ns`` (when the response
        reached the tap, before the member could act on it)."""
        for correlation_id, frame in frames:
            request = pending.pop(correlation_id, None)
            if request is None or frame is None:
                continue
            if isinstance(request, HeartbeatRequest):
                self.history.emit(
                    "group_request",
                    ts_ns=arrived_ns,
                    impl="consumer",
                    broker_id=self.broker_id,
                    observed="tap",
                    **heartbeat_fields(request, frame),
                )
                continue
            for fields in commit_results(request, frame):
                kind = "commit_rejected" if "error" in fields else "commit"
                self.history.emit(
                    kind,
                    ts_ns=arrived_ns,
                    impl="coordinator",
                    broker_id=self.broker_id,
                    observed="tap",
                    **fields,
                )

    def _count(self, api_key: int, api_version: int, frame: bytes | None, arrived_ns: int) -> None:
        name = api_name(api_key, api_version)
        self.requests[name] += 1
        if frame is None:
            return
        info = decode_request_info(frame)
        self.history.emit(
            "group_request",
            ts_ns=arrived_ns,
            impl="coordinator",
            broker_id=self.broker_id,
            api=info.api,
            client=info.client,
            group=info.group,
            member=info.member,
            generation=info.generation,
            assignments=info.assignments,
            observed="tap",
        )

    # ------------------------------------------------------------------ counters

    def report(self) -> None:
        """Write one ``broker_request`` event with the counts since the previous one (if any)."""
        now = time.monotonic()
        delta = self.requests - self._reported
        if not delta:
            self._last_report = now
            return
        self.history.emit(
            "broker_request",
            impl="coordinator",
            broker_id=self.broker_id,
            interval_s=round(now - self._last_report, 3),
            requests=dict(sorted(delta.items())),
            total=sum(delta.values()),
            handling_us={},
            rejected={},
            observed="tap",
        )
        self._reported = Counter(self.requests)
        self._last_report = now

    async def _report_loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            self.report()


#: Kafka's API keys of :data:`COORDINATION_APIS` (``org.apache.kafka.common.protocol.ApiKeys``).
COORDINATION_KEYS: dict[int, str] = {
    3: "Metadata",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    13: "LeaveGroup",
    14: "SyncGroup",
    68: "ConsumerGroupHeartbeat",
}
assert sorted(COORDINATION_KEYS.values()) == sorted(COORDINATION_APIS)
