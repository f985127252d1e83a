"""The in-memory ZooKeeper behaves as ZooKeeper does for what the member uses."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.protocol.states import EventType

from legacy_zk.memzk import MemZk
from legacy_zk.zkclient import CountingZk
from legacy_zk.zkport import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
    ZkPort,
)


class Seen:
    """A watch that records the (type, path) of each event it receives."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __call__(self, event: Any) -> None:
        self.events.append((event.type, event.path))


def test_both_clients_have_the_port_shape() -> None:
    assert isinstance(MemZk().session(), ZkPort)
    assert issubclass(CountingZk, ZkPort)


def test_create_get_set_delete_with_versions() -> None:
    s = MemZk().session()
    with pytest.raises(NoNodeError):
        s.create("/a/b", b"x")  # no parent
    s.create("/a")
    s.create("/a/b", b"x")
    with pytest.raises(NodeExistsError):
        s.create("/a/b", b"y")
    data, stat = s.get("/a/b")
    assert (data, stat.version, stat.ephemeralOwner) == (b"x", 0, 0)
    assert s.set("/a/b", b"y", version=0).version == 1
    with pytest.raises(BadVersionError):
        s.set("/a/b", b"z", version=0)
    with pytest.raises(NotEmptyError):
        s.delete("/a")
    with pytest.raises(BadVersionError):
        s.delete("/a/b", version=0)
    s.delete("/a/b", version=1)
    assert s.exists("/a/b") is None
    assert s.get_children("/a") == []


def test_every_write_gets_a_new_zxid() -> None:
    s = MemZk().session()
    s.create("/a")  # zxid 1
    s.set("/a", b"1")  # zxid 2
    s.create("/b")  # zxid 3
    assert s.get("/a")[1].mzxid == 2 and s.get("/b")[1].czxid == 3


def test_ephemerals_belong_to_their_session_and_vanish_with_it() -> None:
    zk = MemZk()
    a, b = zk.session(), zk.session()
    a.create("/e", b"", ephemeral=True)
    b.create("/p")
    assert a.get("/e")[1].ephemeralOwner == a.id != b.id
    a.expire()
    assert b.exists("/e") is None and b.exists("/p") is not None
    with pytest.raises(SessionExpiredError):
        a.get("/p")


def test_watches_fire_once_per_change() -> None:
    zk = MemZk()
    s, other = zk.session(), zk.session()
    s.create("/g")
    children, missing, data = Seen(), Seen(), Seen()
    assert s.get_children("/g", watch=children) == []
    assert s.exists("/g/x", watch=missing) is None  # a watch on a node that does not exist yet
    other.create("/g/x", b"1")
    other.create("/g/y", b"1")  # the child watch was used up by the first create
    assert children.events == [(EventType.CHILD, "/g")]
    assert missing.events == [(EventType.CREATED, "/g/x")]
    s.get("/g/x", watch=data)
    other.set("/g/x", b"2")
    other.set("/g/x", b"3")
    assert data.events == [(EventType.CHANGED, "/g/x")]
    s.get("/g/x", watch=data)
    other.delete("/g/x")
    assert data.events[-1] == (EventType.DELETED, "/g/x")


def test_a_read_of_a_missing_node_leaves_no_watch() -> None:
    zk = MemZk()
    s = zk.session()
    w = Seen()
    with pytest.raises(NoNodeError):
        s.get("/n", watch=w)
    s.create("/n")
    assert w.events == []


def test_expiry_fires_the_watches_of_the_ephemerals() -> None:
    zk = MemZk()
    member, watcher = zk.session(), zk.session()
    watcher.create("/ids")
    member.create("/ids/m", b"", ephemeral=True)
    w = Seen()
    watcher.get_children("/ids", watch=w)
    member.expire()
    assert w.events == [(EventType.CHILD, "/ids")]


def test_multi_is_all_or_nothing() -> None:
    zk = MemZk()
    s = zk.session()
    s.create("/owner", b"me")
    s.create("/offsets")
    w = Seen()
    s.exists("/offsets/0", watch=w)
    # the check passes, the set fails (no such node): nothing is applied, the watch is not used up
    results = s.multi(
        [("check", "/owner", 0), ("create", "/offsets/0", b"1"), ("set", "/offsets/9", (b"1", 0))]
    )
    assert [type(r) for r in results] == [RolledBackError, RolledBackError, NoNodeError]
    assert s.exists("/offsets/0", watch=w) is None and w.events == []
    results = s.multi([("check", "/owner", 0), ("create", "/offsets/0", b"1")])
    assert results == [True, "/offsets/0"]
    assert w.events == [(EventType.CREATED, "/offsets/0")]
    assert [type(r) for r in s.multi([("check", "/owner", 5), ("set", "/offsets/0", (b"2", 0))])] == [
        BadVersionError,
        RolledBackError,
    ]
    assert s.get("/offsets/0")[0] == b"1"


def test_requests_are_counted_by_operation() -> None:
    s = MemZk().session()
    s.create_parents("/a/b/c")  # create /a/b/c (NoNode), /a/b (NoNode), /a, /a/b, /a/b/c
    s.get("/a/b/c")
    assert dict(s.counts) == {"create": 5, "get": 1}
