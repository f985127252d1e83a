"""A loopback TCP proxy a test can cut: one member's path to ZooKeeper, severed on demand."""

from __future__ import annotations

import contextlib
import socket
import threading


class CuttableProxy:
    """Forwards ``127.0.0.1:port`` to ``upstream``; :meth:`cut` drops every connection and refuses
    new ones until :meth:`restore`. Threads are daemons; :meth:`close` stops everything."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="proxy-accept").start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            socks, self._socks = self._socks, set()
        for s in socks:
            _close(s)

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refuse = self._cut
            if refuse:
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._socks.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True, name="proxy-pump").start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            _close(src)
            _close(dst)


def _close(s: socket.socket) -> None:
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        s.close()
