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
* Only loopback addresses are accepted (a :class:`ValueError` otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import logging
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

log = logging.getLogger("harness.proxy")
T = TypeVar("T")
_CHUNK = 65536


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
        self._spawn(self._pump(c_reader, u_writer, up=True))
        self._spawn(self._pump(u_reader, c_writer, up=False))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool) -> None:
        try:
            while True:
                data = await reader.read(_CHUNK)
                await self._open.wait()  # hold what arrived during a cut until it heals
                if not data:
                    break
                writer.write(data)
                await writer.drain()
                if up:
                    self.stats.bytes_up += len(data)
                else:
                    self.stats.bytes_down += len(data)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                writer.close()
            self._writers.discard(writer)


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
