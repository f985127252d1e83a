"""Per-member loopback proxies: forwarding, partitions that hold traffic, a ZooKeeper session cut off."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient, KazooState

from harness.cluster.zookeeper import ZooKeeperServer
from harness.faults.proxy import ProxyHost, member_loopback_ip
from tests.support.waiting import wait_until


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo_server() -> Iterator[tuple[str, int]]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address  # type: ignore[misc]
    server.shutdown()
    server.server_close()


@pytest.fixture
def host() -> Iterator[ProxyHost]:
    with ProxyHost() as h:
        yield h


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def test_proxy_forwards_both_ways(echo_server, host: ProxyHost) -> None:
    p = host.add(echo_server)
    with socket.create_connection(p.listen, timeout=5) as s:
        payload = bytes(range(256)) * 1000
        s.sendall(payload)
        assert _recv_exactly(s, len(payload)) == payload
    assert p.stats.connections == 1
    wait_until(
        lambda: p.stats.bytes_up == p.stats.bytes_down == len(payload), timeout=5, what="byte counters"
    )


def test_cut_holds_traffic_and_restore_delivers_it_intact(echo_server, host: ProxyHost) -> None:
    p = host.add(echo_server)
    with socket.create_connection(p.listen, timeout=5) as s:
        s.sendall(b"before")
        assert _recv_exactly(s, 6) == b"before"
        host.cut(p.name)
        wait_until(lambda: p.is_cut, timeout=5, what="cut")
        s.sendall(b"during the cut")
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.recv(100)  # nothing comes back across a partition
        host.restore(p.name)
        s.settimeout(5)
        assert _recv_exactly(s, 14) == b"during the cut"


def test_new_connections_during_a_cut_reach_upstream_only_after_restore(echo_server, host: ProxyHost) -> None:
    p = host.add(echo_server)
    host.cut(p.name)
    wait_until(lambda: p.is_cut, timeout=5, what="cut")
    with socket.create_connection(p.listen, timeout=5) as s:
        s.sendall(b"hello")
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.recv(5)
        host.restore(p.name)
        s.settimeout(5)
        assert _recv_exactly(s, 5) == b"hello"


def test_proxy_can_listen_and_connect_from_a_members_own_loopback_ip(echo_server, host: ProxyHost) -> None:
    ip = member_loopback_ip(3)
    assert ip == "127.0.1.4"
    p = host.add(echo_server, listen=(ip, 0), source_ip=ip)
    with socket.create_connection(p.listen, timeout=5) as s:
        s.sendall(b"x")
        assert _recv_exactly(s, 1) == b"x"


def test_only_loopback_addresses_are_accepted(host: ProxyHost) -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        host.add(("10.0.0.1", 2181))


def test_a_member_cut_off_from_zookeeper_loses_its_session_while_others_keep_theirs(
    zookeeper: ZooKeeperServer, host: ProxyHost
) -> None:
    zk_addr = ("127.0.0.1", zookeeper.port)
    p = host.add(zk_addr, name="zk-m1")
    victim = KazooClient(hosts=p.address, timeout=1.0)
    other = KazooClient(hosts=zookeeper.connect_string, timeout=1.0)
    states: list[str] = []
    victim.add_listener(lambda s: states.append(s))
    victim.start(timeout=15)
    other.start(timeout=15)
    try:
        path = f"/cut-{id(p)}"
        victim.create(path, ephemeral=True)
        host.cut(p.name)
        # The server hears nothing from the victim: its session expires and the ephemeral goes away,
        # while the other client, not behind the proxy, keeps working.
        wait_until(lambda: other.exists(path) is None, timeout=15, what="victim's ephemeral to vanish")
        assert KazooState.SUSPENDED in states
        host.restore(p.name)
        wait_until(lambda: KazooState.LOST in states, timeout=15, what="victim to learn its session expired")
    finally:
        for c in (victim, other):
            c.stop()
            c.close()
