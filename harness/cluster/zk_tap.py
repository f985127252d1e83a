"""A ZooKeeper tap: a loopback TCP proxy in front of ZooKeeper that writes what the server saw.

A client that cannot report its own ZooKeeper requests (Kafka 0.8.2.2's consumer: its session and
requests are private to zkclient) is counted on the wire instead, and so is herdlab's Python member when
the two are compared, so that both columns are counted the same way.

Contract
--------
* :class:`ZooKeeperTap` listens on one loopback port per ZooKeeper server of its upstream connect string
  (port 0: free ports) and forwards every connection to that server; :attr:`ZooKeeperTap.connect` is the
  connect string clients use instead (the chroot kept). Bytes are never altered, in either direction.
* Each connection is decoded by :class:`harness.cluster.zk_wire.Conversation` and written to ``history``
  (source ``zk-tap``, role ``zookeeper``, every event with ``observed="tap"``; fields in
  :mod:`harness.kernel.events`, "ZooKeeper"): one ``zk_request`` per answered request (not pings, the
  handshake or closeSession), one ``watch`` per notification, one ``conflict`` per create of an owner
  znode (``/consumers/<g>/owners/<topic>/<partition>``; not of a topic's directory above them) answered
  NodeExists (beside its ``zk_request``) and ``zk_session`` events (``connect``: a
  session handshake the server accepted, new or resumed; ``expired``: a reconnect the server refused, its
  session being gone; ``close``: a closeSession answered). Events of server frames are stamped and written
  as those bytes are forwarded to the client, just before (a reply: when the answer passed the tap), so the
  client's own events of what it read come after them; the session's member is noted then too, so a
  :meth:`ZooKeeperTap.hold` of a member whose registering create returned finds its session.
* ``session -> member``: a session's member is the consumer id of the first ``/consumers/<g>/ids/<id>``
  create on it answered OK (that create's own ``zk_request`` already carries it); events of the session
  before that carry ``member`` None. :meth:`ZooKeeperTap.sessions` reads the map.
* :meth:`ZooKeeperTap.hold` holds every connection of a member's sessions (or of one session) in both
  directions, as :meth:`harness.faults.proxy.TcpProxy.cut` does: nothing is forwarded, nothing is closed,
  what arrives (end of stream too) is kept and delivered in order by :meth:`ZooKeeperTap.release`. A
  client's reconnect to a held session is held from its handshake (it names the session), so the server
  hears nothing of a held session and expires it after its timeout. A connection whose session is not
  known yet (a new session's handshake) is not held.
* A connection whose bytes are not ZooKeeper's protocol (a four-letter-word command) is forwarded and no
  longer decoded. One asyncio loop in one daemon thread serves every connection; :meth:`start` returns once
  it listens, :meth:`close` (idempotent) closes the listeners and every connection. Only loopback
  addresses are accepted (a :class:`ValueError` otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.cluster.loop_thread import LoopThread, cancel_others
from harness.cluster.zk_wire import (
    CLOSE_SESSION,
    SESSION_OPS,
    ConnectRequest,
    ConnectResponse,
    Conversation,
    Notification,
    Reply,
    WireError,
    session_hex,
)
from harness.kernel.history import History

__all__ = ["ZooKeeperTap", "parse_connect", "registered_member"]

log = logging.getLogger("harness.zk_tap")

_CHUNK = 65536
#: A registration znode of the 0.8 layout (under any chroot the server sees): its last segment is the
#: consumer id.
_IDS = re.compile(r"/consumers/[^/]+/ids/([^/]+)$")
#: An owner znode of the 0.8 layout, ``/consumers/<g>/owners/<topic>/<partition>`` (not its topic's directory).
_OWNER = re.compile(r"/consumers/[^/]+/owners/[^/]+/[^/]+$")


def registered_member(path: str | None) -> str | None:
    """The consumer id a create of ``path`` registers (``/consumers/<g>/ids/<id>``), else None."""
    m = _IDS.search(path or "")
    return m.group(1) if m else None


def parse_connect(connect: str) -> tuple[list[tuple[str, int]], str]:
    """``host:port,...[/chroot]`` as its servers and its chroot (``""`` or ``/chroot``)."""
    hosts, slash, chroot = connect.partition("/")
    servers: list[tuple[str, int]] = []
    for server in hosts.split(","):
        host, _, port = server.strip().rpartition(":")
        servers.append((host, int(port)))
    return servers, slash + chroot


def _require_loopback(host: str) -> None:
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{host} is not a loopback address: the ZooKeeper tap only runs on 127.0.0.0/8")


@dataclass(eq=False)
class _Connection:
    conversation: Conversation = field(default_factory=Conversation)
    writers: list[asyncio.StreamWriter] = field(default_factory=list[asyncio.StreamWriter])

    @property
    def session(self) -> int | None:
        return self.conversation.session


class ZooKeeperTap:
    """A decoding ZooKeeper proxy in front of the servers of ``connect`` (see the module contract).

    ``history``: where the events go (a :class:`~harness.history.writer.HistoryWriter` with source
    ``zk-tap`` and role zookeeper, usually).
    """

    def __init__(self, connect: str, history: History, listen_host: str = "127.0.0.1") -> None:
        _require_loopback(listen_host)
        self.upstreams, self.chroot = parse_connect(connect)
        for host, _ in self.upstreams:
            _require_loopback(host)
        self.history = history
        self.listen_host = listen_host
        self.ports: list[int] = []
        self._members: dict[int, str] = {}  # session -> consumer id
        self._map_lock = threading.Lock()
        self._held: dict[int, asyncio.Event] = {}  # session -> set on release (loop thread only)
        self._loop = LoopThread("zookeeper-tap")
        self._servers: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()

    @property
    def connect(self) -> str:
        """The connect string clients use: every listener, then the upstream's chroot."""
        return ",".join(f"{self.listen_host}:{p}" for p in self.ports) + self.chroot

    # ------------------------------------------------------------------ life cycle

    def start(self) -> ZooKeeperTap:
        """Listen (one port per upstream server) and serve in a daemon thread; returns once bound."""
        self._loop.start(self._listen())
        return self

    async def _listen(self) -> None:
        for upstream in self.upstreams:

            async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter, up: Any = upstream) -> None:
                await self._handle(r, w, up)

            server = await asyncio.start_server(handle, self.listen_host, 0)
            self._servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])

    def close(self) -> None:
        """Close the listeners and every connection (held bytes are dropped). Idempotent."""
        self._loop.stop(self._shutdown())

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            for w in conn.writers:
                w.close()
        await cancel_others()

    def __enter__(self) -> ZooKeeperTap:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ sessions and holds

    def sessions(self) -> dict[int, str]:
        """session id -> consumer id, for every session a member registered on."""
        with self._map_lock:
            return dict(self._members)

    def sessions_of(self, who: str | int) -> set[int]:
        """The sessions ``who`` names: a session id (int, or ``0x``-hex), or a consumer id (each session it
        registered on). KeyError when it names none."""
        if isinstance(who, int):
            return {who}
        if who.startswith("0x"):
            return {int(who, 16)}
        found = {s for s, m in self.sessions().items() if m == who}
        if not found:
            raise KeyError(f"no session of {who} seen by the ZooKeeper tap")
        return found

    def hold(self, who: str | int) -> set[int]:
        """Hold the traffic of ``who``'s sessions (see the module contract); returns them once held."""
        sessions = self.sessions_of(who)

        async def hold_all() -> None:
            for s in sessions:
                self._held.setdefault(s, asyncio.Event())

        self._loop.call(hold_all())
        log.info("zookeeper tap: holding %s (%s)", who, ", ".join(map(session_hex, sorted(sessions))))
        return sessions

    def release(self, who: str | int) -> set[int]:
        """Deliver what was held of ``who``'s sessions and forward again; returns them once released."""
        sessions = self.sessions_of(who)

        async def release_all() -> None:
            for s in sessions:
                event = self._held.pop(s, None)
                if event is not None:
                    event.set()

        self._loop.call(release_all())
        log.info("zookeeper tap: released %s", who)
        return sessions

    async def _unheld(self, conn: _Connection) -> None:
        while (s := conn.session) is not None and (event := self._held.get(s)) is not None:
            await event.wait()

    # ------------------------------------------------------------------ forwarding

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: tuple[str, int]
    ) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError as e:
            log.debug("zookeeper tap: upstream %s:%d unreachable: %s", *upstream, e)
            writer.close()
            return
        conn = _Connection(writers=[writer, up_writer])
        self._connections.add(conn)
        try:
            await asyncio.gather(
                self._pump(reader, up_writer, conn, upward=True),
                self._pump(up_reader, writer, conn, upward=False),
            )
        except (OSError, asyncio.IncompleteReadError) as e:
            log.debug("zookeeper tap connection closed: %s", e)
        except asyncio.CancelledError:
            pass  # close(): the connection ends with the tap
        finally:
            self._connections.discard(conn)
            for w in conn.writers:
                w.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: _Connection, upward: bool
    ) -> None:
        """One direction: read, decode, wait while the connection's session is held, write the events of
        what is forwarded (stamped then), forward."""
        try:
            while True:
                data = await reader.read(_CHUNK)
                items = self._decode(conn, data, upward) if data else []
                await self._unheld(conn)
                if not data:
                    break
                # written (and the session's member noted) before the bytes go on: a client acts on an
                # answer only after the tap's event of it, as a member's next event follows what it read
                forwarded_ns = time.time_ns()
                for item in items:
                    self._event(conn, item, forwarded_ns)
                writer.write(data)
                await writer.drain()
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if writer.can_write_eof():
                    writer.write_eof()

    def _decode(self, conn: _Connection, data: bytes, upward: bool) -> list[Any]:
        try:
            if upward:
                return list(conn.conversation.client(data))
            return list(conn.conversation.server(data))
        except WireError as e:
            log.debug("zookeeper tap: no longer decoding a connection: %s", e)
            return []

    # ------------------------------------------------------------------ events

    def _member(self, session: int | None) -> str | None:
        if session is None:
            return None
        with self._map_lock:
            return self._members.get(session)

    def _event(self, conn: _Connection, item: Any, ts_ns: int) -> None:
        session = conn.session
        if isinstance(item, ConnectResponse):
            self._session_event(conn.conversation.connect, item, ts_ns)
        elif isinstance(item, Notification):
            self.history.emit(
                "watch",
                ts_ns=ts_ns,
                path=item.path,
                type=item.type_name,
                session=_hex(session),
                member=self._member(session),
                observed="tap",
            )
        elif isinstance(item, Reply):
            self._reply_event(item, session, ts_ns)

    def _session_event(self, request: ConnectRequest | None, response: ConnectResponse, ts_ns: int) -> None:
        asked = request.session if request is not None else 0
        if response.expired:
            self.history.emit(
                "zk_session",
                ts_ns=ts_ns,
                phase="expired",
                session=_hex(asked or None),
                password=None,
                timeout_ms=response.timeout_ms,
                member=self._member(asked or None),
                observed="tap",
            )
            return
        self.history.emit(
            "zk_session",
            ts_ns=ts_ns,
            phase="connect",
            session=session_hex(response.session),
            password=response.password.hex(),
            timeout_ms=response.timeout_ms,
            member=self._member(response.session),
            reconnect=bool(asked),
            observed="tap",
        )

    def _reply_event(self, reply: Reply, session: int | None, ts_ns: int) -> None:
        request = reply.request
        if request is None:
            return
        if request.opcode in SESSION_OPS:
            if request.opcode == CLOSE_SESSION:
                self.history.emit(
                    "zk_session",
                    ts_ns=ts_ns,
                    phase="close",
                    session=_hex(session),
                    password=None,
                    timeout_ms=None,
                    member=self._member(session),
                    observed="tap",
                )
            return
        if request.op == "create" and reply.err == 0 and session is not None:
            consumer = registered_member(request.path)
            if consumer is not None:
                with self._map_lock:
                    self._members.setdefault(session, consumer)
        member = self._member(session)
        fields: dict[str, Any] = {}
        if request.subops:
            fields["subops"] = [list(s) for s in request.subops]
        self.history.emit(
            "zk_request",
            ts_ns=ts_ns,
            op=request.op,
            path=request.path,
            err=reply.error,
            session=_hex(session),
            member=member,
            xid=reply.xid,
            observed="tap",
            **fields,
        )
        if request.op == "create" and reply.error == "NodeExists" and _OWNER.search(request.path or ""):
            self.history.emit(
                "conflict",
                ts_ns=ts_ns,
                path=request.path,
                session=_hex(session),
                member=member,
                observed="tap",
            )


def _hex(session: int | None) -> str | None:
    return None if session is None else session_hex(session)
