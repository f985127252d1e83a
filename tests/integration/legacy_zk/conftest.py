"""Fixtures for legacy_zk against a real ZooKeeper (the session-scoped ``zookeeper`` fixture).

* ``zk_admin``: a kazoo client acting as the 0.8 admin tools / broker would (creates topic znodes).
* ``fake_broker``: one broker registration (ephemeral, for this package's tests only) so that the
  0.8 rebalance finds a broker; the members here run coordination-only unless a test says otherwise.
* ``group``, ``topic``: unique names per test (the ZooKeeper server is shared).
* ``make_member``: builds in-process members with short timeouts (:func:`tests.support.legacy_zk.fast_config`);
  closes them at teardown.
* ``proxy_host``: the harness's fault proxies (:mod:`harness.faults.proxy`): a member connected
  through one can be cut off from ZooKeeper as by a network partition (traffic held, nothing closed).
* ``hooked_history``: the test's history file, calling ``hook(kind, fields)`` on the emitting thread
  after each event (so a test can act at an exact point of a member's protocol, e.g. cut its link when
  a rebalance begins); ``make_hooked_member`` builds members writing to it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from harness.cluster.zookeeper import ZooKeeperServer
from harness.faults.proxy import ProxyHost, TcpProxy
from harness.history.writer import HistoryWriter, read_events
from legacy_zk import paths
from legacy_zk.member import LegacyZkMember
from tests.support.legacy_zk import fast_config

FAKE_BROKER_ID = 9999


@pytest.fixture(scope="package")
def zk_admin(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    c = KazooClient(hosts=zookeeper.connect_string, timeout=10.0)
    c.start(timeout=15)
    yield c
    c.stop()
    c.close()


@pytest.fixture(scope="package")
def fake_broker(zk_admin: KazooClient) -> int:
    """A 0.8.2 broker registration that lives as long as this package's admin session."""
    path = paths.broker_path(FAKE_BROKER_ID)
    if not zk_admin.exists(path):
        zk_admin.create(path, paths.encode_broker("127.0.0.1", 9, 0), ephemeral=True, makepath=True)
    return FAKE_BROKER_ID


@pytest.fixture
def group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def topic() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def history_path(tmp_path: Path) -> Path:
    return tmp_path / "history.jsonl"


@pytest.fixture
def history(history_path: Path) -> Iterator[HistoryWriter]:
    h = HistoryWriter(history_path, "tests")
    yield h
    h.close()


@pytest.fixture
def events(history_path: Path) -> Callable[..., list[dict]]:
    """``events(kind=None, member=None)``: the history so far, filtered."""

    def get(kind: str | None = None, member: str | None = None) -> list[dict]:
        if not history_path.exists():
            return []
        return [
            e
            for e in read_events(history_path)
            if (kind is None or e["kind"] == kind) and (member is None or e.get("member") == member)
        ]

    return get


@pytest.fixture
def make_member(
    zookeeper: ZooKeeperServer, fake_broker: int, history: HistoryWriter
) -> Iterator[Callable[..., LegacyZkMember]]:
    made: list[LegacyZkMember] = []

    def make(group: str, topics: dict[str, int], start: bool = True, **kw) -> LegacyZkMember:
        m = LegacyZkMember(fast_config(zookeeper, group, topics, **kw), history=history)
        made.append(m)
        if start:
            m.start()
        return m

    yield make
    for m in made:
        m.quiesce()
    for m in made:
        m.close()


@pytest.fixture
def proxy_host() -> Iterator[ProxyHost]:
    with ProxyHost() as host:
        yield host


class HookedHistory(HistoryWriter):
    """A history file that calls ``hook(kind, fields)`` after writing each event, on the emitting
    thread (the member's own thread waits for the hook)."""

    hook: Callable[[str, dict[str, Any]], None] | None = None

    def emit(self, kind: str, **fields: Any) -> None:
        super().emit(kind, **fields)
        hook = self.hook
        if hook is not None:
            hook(kind, fields)


@pytest.fixture
def hooked_history(history_path: Path) -> Iterator[HookedHistory]:
    h = HookedHistory(history_path, "tests")
    yield h
    h.close()


@pytest.fixture
def zk_proxy(zookeeper: ZooKeeperServer, proxy_host: ProxyHost) -> TcpProxy:
    """A proxy to the shared ZooKeeper (``zk_proxy.address`` is a ``zookeeper.connect``)."""
    return proxy_host.add(("127.0.0.1", zookeeper.port), name="zk")


@pytest.fixture
def make_hooked_member(
    zookeeper: ZooKeeperServer,
    fake_broker: int,
    proxy_host: ProxyHost,
    zk_proxy: TcpProxy,
    hooked_history: HookedHistory,
) -> Iterator[Callable[..., LegacyZkMember]]:
    """Members (not started) that reach ZooKeeper through ``zk_proxy`` and write to
    ``hooked_history``. At teardown the proxy is restored, then the members are closed."""
    made: list[LegacyZkMember] = []

    def make(group: str, topics: dict[str, int], **kw) -> LegacyZkMember:
        kw.setdefault("zookeeper_connect", zk_proxy.address)
        m = LegacyZkMember(fast_config(zookeeper, group, topics, **kw), history=hooked_history)
        made.append(m)
        return m

    yield make
    hooked_history.hook = None
    proxy_host.restore(zk_proxy.name)
    for m in made:
        m.quiesce()
    for m in made:
        m.close()
