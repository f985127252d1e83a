"""Loopback TCP proxies that can cut one member off from ZooKeeper or from the broker.

Contract
--------
* A :class:`TcpProxy` listens on ``listen`` (a loopback address) and forwards every accepted
  connection to ``upstream``. With ``source_ip`` set, the upstream connection is made from that
  loopback IP: the broker advertises the peer IP of a loopback connection, so a member that reached
  the broker through ``127.0.x.y:PORT`` keeps using that address after Metadata (the proxy listens
  on the broker's port on its own loopback IP).
* :meth:`TcpProxy.cut` blackholes the link in both directions, as a network partition does: nothing
  is forwarded, new connections are accepted but not connected upstream, nothing is closed, and the
  bytes and end-of-stream that arrive meanwhile are held (TCP would retransmit them). :meth:`restore`
  delivers what was held and forwards again, so streams stay intact; connections that timed out at
  either end close at the other end once the cut heals. ``cut(drop=True)`` cuts and also drops the
  connections, as a broker's host losing its network does to its ZooKeeper client: every open
  connection is closed at both ends (nothing held is delivered later) and connections accepted while it
  lasts are closed at once; :meth:`restore` lets new connections through again.
* A :class:`ProxyHost` runs any number of proxies on one asyncio loop in a daemon thread and offers a
  thread-safe blocking API. ``close()`` closes every listener and connection. Proxies may share a
  ``group`` name (one per ZooKeeper server of an ensemble, say): ``cut(name)`` / ``restore(name)`` act on
  the proxy named ``name`` and on every proxy of the group ``name``; a name that is neither is a
  :class:`KeyError`.
* Degraded networks: :meth:`TcpProxy.add_toxic` / :meth:`~TcpProxy.remove_toxic` put a
  :class:`~harness.faults.toxics.Toxic` (latency, bandwidth, reset_peer, slow_close, timeout, limit_data,
  as toxiproxy names them) on every connection of the proxy, open or new, until removed;
  ``ProxyHost.add_toxic(name, toxic)`` / ``remove_toxic(name, kind)`` do it for the proxies ``named``.
  Each direction reads ahead (a bounded queue of chunks stamped on arrival) while it delivers, so a
  latency is counted from each chunk's arrival, not added up over a backlog.
* Only loopback addresses are accepted (a :class:`ValueError` otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import logging
import random
import socket
import struct
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.faults.toxics import Toxic

log = logging.getLogger("harness.proxy")
T = TypeVar("T")
_CHUNK = 65536
#: Chunks read ahead per direction (latency delays each from its arrival, so reading goes on meanwhile).
_QUEUED_CHUNKS = 64
#: A bandwidth toxic writes slices of this many seconds' worth of its rate.
_PACE_SLICE_S = 0.01
#: How far behind its schedule a bandwidth toxic's pacing may fall and still catch up (a burst bound).
_PACE_CATCH_UP_S = 0.1


def _require_loopback(host: str) -> None:
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"{host} is not a loopback address: proxies only run on 127.0.0.0/8")


@dataclass
class ProxyStats:
    """Counters of one proxy (bytes forwarded, connections, bytes held back by cuts)."""

    connections: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    cuts: int = 0


@dataclass
class TcpProxy:
    """One listening address forwarded to one upstream address (see the module contract)."""

    name: str
    listen: tuple[str, int]
    upstream: tuple[str, int]
    source_ip: str | None = None
    group: str | None = None
    stats: ProxyStats = field(default_factory=ProxyStats)

    def __post_init__(self) -> None:
        for host in (self.listen[0], self.upstream[0], self.source_ip or "127.0.0.1"):
            _require_loopback(host)
        self._open = asyncio.Event()
        self._open.set()
        self._dropping = False
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._links: set[_Link] = set()
        self.toxics: dict[str, Toxic] = {}
        self._rng = random.Random()

    @property
    def is_cut(self) -> bool:
        return not self._open.is_set()

    @property
    def address(self) -> str:
        return f"{self.listen[0]}:{self.listen[1]}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, self.listen[0], self.listen[1], reuse_address=True
        )
        sock = self._server.sockets[0]
        self.listen = (self.listen[0], sock.getsockname()[1])

    def cut(self, drop: bool = False) -> None:
        """Blackhole the link; with ``drop`` also close every connection (see the module contract).
        Runs on the proxy's loop."""
        if self._open.is_set():
            self.stats.cuts += 1
            log.info(
                "proxy %s cut (%s -> %s)%s",
                self.name,
                self.address,
                self.upstream,
                " dropping" if drop else "",
            )
        self._open.clear()
        if drop:
            self._dropping = True
            for t in list(self._tasks):
                t.cancel()
            for w in list(self._writers):
                w.close()

    def restore(self) -> None:
        if not self._open.is_set():
            log.info("proxy %s restored", self.name)
        self._dropping = False
        self._open.set()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- toxics (see harness.faults.toxics) ---------------------------------------------------
    def add_toxic(self, toxic: Toxic) -> None:
        """Put ``toxic`` on (replacing one of its kind); its timed resets and closes start now for the
        open connections. Runs on the proxy's loop."""
        self.remove_toxic(toxic.kind)
        self.toxics[toxic.kind] = toxic
        log.info("proxy %s toxic %s", self.name, toxic.attributes)
        for link in list(self._links):
            link.arm(toxic)

    def remove_toxic(self, kind: str) -> None:
        """Take the toxic of ``kind`` off (nothing when there is none). Runs on the proxy's loop."""
        if self.toxics.pop(kind, None) is not None:
            log.info("proxy %s toxic %s removed", self.name, kind)
        for link in list(self._links):
            link.disarm(kind)

    def _toxic(self, kind: str, upstream: bool) -> Toxic | None:
        t = self.toxics.get(kind)
        return t if t is not None and t.acts_on(upstream) else None

    # -- connections ---------------------------------------------------------------------------
    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        if self._dropping:  # a dropping cut: the connection is refused as a dead host's would be
            c_writer.close()
            return
        self._writers.add(c_writer)
        try:
            await self._open.wait()  # a partition: the upstream never hears of this connection meanwhile
            if c_writer.is_closing():  # dropped while it waited
                self._writers.discard(c_writer)
                return
            local = (self.source_ip, 0) if self.source_ip else None
            u_reader, u_writer = await asyncio.open_connection(*self.upstream, local_addr=local)
        except (OSError, asyncio.CancelledError):
            c_writer.close()
            self._writers.discard(c_writer)
            return
        self._writers.add(u_writer)
        link = _Link(self, c_writer, u_writer)
        self._links.add(link)
        for toxic in self.toxics.values():
            link.arm(toxic)
        self._spawn(self._pump(c_reader, u_writer, link, up=True))
        self._spawn(self._pump(u_reader, c_writer, link, up=False))

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: _Link, up: bool
    ) -> None:
        """One direction: a reader stamps each chunk on arrival into a bounded queue, this task delivers
        it once the link is not cut, under the toxics of the direction."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(maxsize=_QUEUED_CHUNKS)
        loop = asyncio.get_running_loop()

        async def read() -> None:
            try:
                while True:
                    data = await reader.read(_CHUNK)
                    await queue.put((loop.time(), data))
                    if not data:
                        return
            except OSError:
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait((loop.time(), b""))

        reading = loop.create_task(read())
        self._tasks.add(reading)
        reading.add_done_callback(self._tasks.discard)
        paced_until = 0.0  # bandwidth: when the bytes delivered so far are due at the toxic's rate
        try:
            while True:
                arrived, data = await queue.get()
                await self._open.wait()  # hold what arrived during a cut until it heals
                if not data:
                    slow = self._toxic("slow_close", up)
                    if slow is not None:
                        await asyncio.sleep(slow.delay / 1000.0)
                    break
                if self._toxic("timeout", up) is not None:
                    continue  # toxiproxy's timeout: nothing gets through
                latency = self._toxic("latency", up)
                if latency is not None:
                    due = arrived + latency.delay_s(self._rng)
                    if due > loop.time():
                        await asyncio.sleep(due - loop.time())
                limit = self._toxic("limit_data", up)
                if limit is not None:
                    left = limit.bytes - link.counted(up)
                    data = data[: max(0, left)]
                paced_until = await self._deliver(writer, data, up, paced_until)
                link.count(up, len(data))
                if limit is not None and link.counted(up) >= limit.bytes:
                    link.close()
                    break
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            reading.cancel()
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()
            self._writers.discard(writer)
            self._links.discard(link)

    async def _deliver(
        self, writer: asyncio.StreamWriter, data: bytes, up: bool, paced_until: float
    ) -> float:
        """Write ``data``; under a bandwidth toxic in slices paced at its rate. Returns the pacing clock."""
        loop = asyncio.get_running_loop()
        view = memoryview(data)
        while view:
            bandwidth = self._toxic("bandwidth", up)
            size = len(view) if bandwidth is None else max(1, int(bandwidth.bytes_per_s * _PACE_SLICE_S))
            piece, view = view[:size], view[size:]
            if bandwidth is not None:
                # an idle link (or the first slice) restarts the clock at now; a late wake-up on a
                # loaded machine, up to _PACE_CATCH_UP_S behind, is caught up on, so the rate holds
                if paced_until < loop.time() - _PACE_CATCH_UP_S:
                    paced_until = loop.time()
                if paced_until > loop.time():
                    await asyncio.sleep(paced_until - loop.time())
                paced_until += len(piece) / bandwidth.bytes_per_s
            writer.write(piece)
            await writer.drain()
            if up:
                self.stats.bytes_up += len(piece)
            else:
                self.stats.bytes_down += len(piece)
        return paced_until


class _Link:
    """One proxied connection: its two writers, the bytes counted per direction for ``limit_data``
    (since the toxic was added), and the pending timed actions of ``reset_peer`` / ``timeout``."""

    def __init__(self, proxy: TcpProxy, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.writers = (client, upstream)
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.sent = {True: 0, False: 0}

    def count(self, up: bool, n: int) -> None:
        self.sent[up] += n

    def counted(self, up: bool) -> int:
        return self.sent[up]

    def arm(self, toxic: Toxic) -> None:
        """Start what ``toxic`` does to this connection over time (reset, close, the data count)."""
        loop = asyncio.get_running_loop()
        if toxic.kind == "limit_data":
            self.sent = {True: 0, False: 0}
        elif toxic.kind == "reset_peer":
            self.timers[toxic.kind] = loop.call_later(toxic.timeout / 1000.0, self.reset)
        elif toxic.kind == "timeout" and toxic.timeout > 0:
            self.timers[toxic.kind] = loop.call_later(toxic.timeout / 1000.0, self.close)

    def disarm(self, kind: str) -> None:
        timer = self.timers.pop(kind, None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        """Close both ends (FIN)."""
        for w in self.writers:
            with contextlib.suppress(OSError, RuntimeError):
                w.close()

    def reset(self) -> None:
        """Reset both ends (RST: SO_LINGER 0, then abort), as toxiproxy's reset_peer does."""
        for w in self.writers:
            sock = w.get_extra_info("socket")
            with contextlib.suppress(OSError, RuntimeError, AttributeError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            w.transport.abort()


class ProxyHost:
    """Many :class:`TcpProxy` on one asyncio loop in a daemon thread; a blocking, thread-safe API."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="proxy-host", daemon=True)
        self._thread.start()
        self._proxies: dict[str, TcpProxy] = {}
        self._ids = itertools.count(1)
        self._closed = False

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def add(
        self,
        upstream: tuple[str, int],
        listen: tuple[str, int] = ("127.0.0.1", 0),
        source_ip: str | None = None,
        name: str | None = None,
        group: str | None = None,
    ) -> TcpProxy:
        """Start a proxy to ``upstream``; port 0 in ``listen`` picks a free port. ``group``: a name that
        :meth:`cut` / :meth:`restore` also accept, for every proxy of the group."""
        name = name or f"proxy-{next(self._ids)}"

        async def make() -> TcpProxy:
            p = TcpProxy(name, listen, upstream, source_ip, group)
            await p.start()
            return p

        proxy = self._call(make())
        self._proxies[name] = proxy
        return proxy

    def get(self, name: str) -> TcpProxy:
        return self._proxies[name]

    def named(self, name: str) -> list[TcpProxy]:
        """The proxy named ``name`` and every proxy of the group ``name``; KeyError when none is."""
        found = [p for p in self._proxies.values() if name in (p.name, p.group)]
        if not found:
            raise KeyError(name)
        return found

    def cut(self, name: str, drop: bool = False) -> None:
        """Cut the proxies :meth:`named` ``name`` (dropping their connections with ``drop``); returns once
        every one of them is cut."""
        proxies = self.named(name)

        async def cut_all() -> None:
            for p in proxies:
                p.cut(drop)

        self._call(cut_all())

    def restore(self, name: str) -> None:
        """Restore the proxies :meth:`named` ``name``; returns once every one of them forwards again."""
        proxies = self.named(name)

        async def restore_all() -> None:
            for p in proxies:
                p.restore()

        self._call(restore_all())

    def add_toxic(self, name: str, toxic: Toxic) -> None:
        """Put ``toxic`` on the proxies :meth:`named` ``name``; returns once it is on every one of them
        (it acts on the next chunk each connection delivers)."""
        proxies = self.named(name)

        async def add_all() -> None:
            for p in proxies:
                p.add_toxic(toxic)

        self._call(add_all())

    def remove_toxic(self, name: str, kind: str) -> None:
        """Take the toxic of ``kind`` off the proxies :meth:`named` ``name``; returns once it is off."""
        proxies = self.named(name)

        async def remove_all() -> None:
            for p in proxies:
                p.remove_toxic(kind)

        self._call(remove_all())

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def close_all() -> None:
            await asyncio.gather(*(p.close() for p in self._proxies.values()), return_exceptions=True)

        with contextlib.suppress(Exception):
            self._call(close_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> ProxyHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def member_loopback_ip(index: int) -> str:
    """A distinct loopback IP for member ``index`` (0-based): 127.0.1.1, 127.0.1.2, ... 127.0.255.254."""
    if not 0 <= index < 255 * 254:
        raise ValueError("member index out of range for per-member loopback addresses")
    return f"127.0.{1 + index // 254}.{1 + index % 254}"
