"""The ZooKeeper tap in front of a real ZooKeeper server with kazoo clients through it: requests by op
with their errors, watch notifications, sessions and the member each registered, a held session answered
only after its release and expired when held past its timeout, nothing left running."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError

from harness.cluster.zk_tap import ZooKeeperTap
from harness.cluster.zookeeper import ZooKeeperServer
from harness.faults.actions import Expire
from harness.faults.proxy import ProxyHost
from harness.history.writer import HistoryWriter
from harness.run.rig import _proxied_zookeeper  # pyright: ignore[reportPrivateUsage]
from harness.run.tail import GroupWatch
from tests.support.waiting import wait_until


def events(path: Path, kind: str | None = None) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [e for e in out if kind is None or e["kind"] == kind]


@pytest.fixture
def tapped(zookeeper: ZooKeeperServer, tmp_path: Path) -> Iterator[tuple[ZooKeeperTap, Path]]:
    path = tmp_path / "zk-tap.jsonl"
    history = HistoryWriter(path, source="zk-tap", role="zookeeper")
    tap = ZooKeeperTap(zookeeper.connect_string, history).start()
    try:
        yield tap, path
    finally:
        tap.close()
        history.close()
    # nothing left running: its thread ended, its port refuses connections
    assert not [t for t in threading.enumerate() if t.name == "zookeeper-tap"]
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", tap.ports[0]), timeout=2):
        pass


def client(connect: str, timeout: float = 10.0) -> KazooClient:
    c = KazooClient(hosts=connect, timeout=timeout)
    c.start(timeout=15)
    return c


def test_requests_errors_watches_and_members_as_the_server_saw_them(
    tapped: tuple[ZooKeeperTap, Path],
) -> None:
    tap, path = tapped
    g = f"/consumers/tap-{uuid.uuid4().hex[:8]}"
    a, b = client(tap.connect), client(tap.connect)
    try:
        a.ensure_path("/consumers")  # requests outside g: not compared below
        a.create(g)
        a.create(f"{g}/ids")
        a.create(f"{g}/owners")
        a.create(f"{g}/owners/t")
        children = threading.Event()
        a.get_children(f"{g}/ids", watch=lambda _e: children.set())
        a.create(f"{g}/ids/c1", b"{}", ephemeral=True)  # registers session a as c1
        a.create(f"{g}/owners/t/0", b"c1", ephemeral=True)
        b.create(f"{g}/ids/c2", b"{}", ephemeral=True)  # registers b as c2
        with pytest.raises(NodeExistsError):  # a topic's directory: no owner-znode conflict
            b.create(f"{g}/owners/t")
        with pytest.raises(NodeExistsError):
            b.create(f"{g}/owners/t/0", b"c2", ephemeral=True)
        assert b.exists(f"{g}/nope") is None  # NoNode on the wire
        with pytest.raises(NoNodeError):
            b.get(f"{g}/nope")
        b.set(f"{g}/ids/c2", b"{1}")
        with pytest.raises(NotEmptyError):
            b.delete(f"{g}/owners")
        tx = b.transaction()
        tx.check(f"{g}/ids/c2", 0)  # its version is 1 now: the multi fails
        tx.set_data(f"{g}/ids/c2", b"{2}")
        tx.commit()
        assert children.wait(10)
        sa, sb = (f"0x{c.client_id[0]:x}" for c in (a, b))
    finally:
        for c in (a, b):
            c.stop()
            c.close()

    def requests() -> list[tuple[str, str | None, str, str | None, str | None]]:
        return [
            (e["session"], e["member"], e["op"], e["path"], e["err"])
            for e in events(path, "zk_request")
            if (e["path"] or "").startswith(g)
        ]

    expected = [
        (sa, None, "create", g, None),
        (sa, None, "create", f"{g}/ids", None),
        (sa, None, "create", f"{g}/owners", None),
        (sa, None, "create", f"{g}/owners/t", None),
        (sa, None, "get_children", f"{g}/ids", None),
        (sa, "c1", "create", f"{g}/ids/c1", None),  # the registering create carries its member
        (sa, "c1", "create", f"{g}/owners/t/0", None),
        (sb, "c2", "create", f"{g}/ids/c2", None),
        (sb, "c2", "create", f"{g}/owners/t", "NodeExists"),
        (sb, "c2", "create", f"{g}/owners/t/0", "NodeExists"),
        (sb, "c2", "exists", f"{g}/nope", "NoNode"),
        (sb, "c2", "get", f"{g}/nope", "NoNode"),
        (sb, "c2", "set", f"{g}/ids/c2", None),
        (sb, "c2", "delete", f"{g}/owners", "NotEmpty"),
        (sb, "c2", "multi", f"{g}/ids/c2", "BadVersion"),
    ]

    # a and b run concurrently only for the watch: each session's requests are in its own order
    def all_answered() -> list[tuple[str, str | None, str, str | None, str | None]] | None:
        got = requests()
        return got if len(got) == len(expected) else None

    got = wait_until(all_answered, what="15 requests")
    assert Counter(got) == Counter(expected)
    assert [r for r in got if r[0] == sa] == [r for r in expected if r[0] == sa]
    assert [r for r in got if r[0] == sb] == [r for r in expected if r[0] == sb]
    multi = next(e for e in events(path, "zk_request") if e["op"] == "multi")
    assert multi["subops"] == [["op13", f"{g}/ids/c2"], ["set", f"{g}/ids/c2"]]

    # a's own create of ids/c1 fires a's watch: ZooKeeper sends the notification before that create's
    # answer, so a's session has no member yet
    [watch] = [e for e in events(path, "watch") if e["path"].startswith(g)]
    assert (watch["type"], watch["path"], watch["session"], watch["member"]) == (
        "CHILD",
        f"{g}/ids",
        sa,
        None,
    )
    [conflict] = [e for e in events(path, "conflict") if e["path"].startswith(g)]
    assert (conflict["path"], conflict["session"], conflict["member"]) == (f"{g}/owners/t/0", sb, "c2")

    def lifecycle() -> list[tuple[str, str, str | None]]:
        return [(e["phase"], e["session"], e["member"]) for e in events(path, "zk_session")]

    wait_until(lambda: len(lifecycle()) == 4, what="two connects and two closes")
    assert Counter(lifecycle()) == Counter(
        [("connect", sa, None), ("connect", sb, None), ("close", sa, "c1"), ("close", sb, "c2")]
    )
    connects = [e for e in events(path, "zk_session") if e["phase"] == "connect"]
    assert all(len(e["password"]) == 32 and e["timeout_ms"] > 0 and not e["reconnect"] for e in connects)
    assert {e["observed"] for e in events(path)} == {"tap"}
    assert {e["role"] for e in events(path)} == {"zookeeper"}
    assert tap.sessions() == {int(sa, 16): "c1", int(sb, 16): "c2"}


@pytest.mark.slow
def test_a_held_session_is_answered_after_its_release_and_expires_when_held_too_long(
    tapped: tuple[ZooKeeperTap, Path], zookeeper: ZooKeeperServer
) -> None:
    tap, path = tapped
    g = f"/consumers/hold-{uuid.uuid4().hex[:8]}"
    observer = client(zookeeper.connect_string)  # the harness's own client: directly to ZooKeeper
    held = client(tap.connect, timeout=2.0)
    other = client(tap.connect)
    try:
        observer.create(f"{g}/ids", makepath=True)
        held.create(f"{g}/ids/c3", ephemeral=True)
        with pytest.raises(KeyError):
            tap.hold("nobody")
        assert tap.hold("c3") == {held.client_id[0]}

        pending = held.exists_async(f"{g}/ids/c3")
        # the tap goes on for everyone else: another session's request is answered meanwhile
        assert other.exists(f"{g}/ids/c3") is not None
        assert not pending.ready()
        released_ns = time.time_ns()
        tap.release("c3")
        assert pending.get(timeout=5) is not None
        [answer] = [e for e in events(path, "zk_request") if e["member"] == "c3" and e["op"] == "exists"]
        assert answer["ts_ns"] >= released_ns

        # held longer than its 2 s timeout: the server hears nothing of the session, not even the
        # client's reconnects, and expires it (its ephemeral goes)
        session = f"0x{held.client_id[0]:x}"
        tap.hold(session)
        gone = threading.Event()
        observer.exists(f"{g}/ids/c3", watch=lambda _e: gone.set())
        assert gone.wait(20), "the held session expired"
        tap.release(session)
        expired = wait_until(
            lambda: [e for e in events(path, "zk_session") if e["phase"] == "expired"],
            timeout=20,
            what="the client's reconnect refused after the release",
        )
        assert [(e["session"], e["member"], e["password"]) for e in expired] == [(session, "c3", None)]
    finally:
        for c in (held, other, observer):
            c.stop()
            c.close()


class _ExpireContext:
    """What the expire fault reads of a unit: its sessions (a GroupWatch over the histories) and the
    cluster's own ZooKeeper address."""

    def __init__(self, histories: Path, zookeeper: str) -> None:
        self.watch = GroupWatch(histories)
        self.cluster = SimpleNamespace(zookeeper_connect=zookeeper)

    def registration(self, name: str) -> tuple[int, str] | None:
        self.watch.observe()
        return self.watch.registration(name)


def test_the_expire_fault_expires_a_session_whose_credentials_only_the_tap_saw(
    tapped: tuple[ZooKeeperTap, Path], zookeeper: ZooKeeperServer
) -> None:
    tap, path = tapped
    g = f"/consumers/expire-{uuid.uuid4().hex[:8]}"
    member = client(tap.connect)
    lost = threading.Event()
    member.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
    try:
        member.ensure_path(f"{g}/ids")
        member.create(f"{g}/ids/c9", ephemeral=True)
        # the member reports its consumer id, never its session (as Kafka 0.8.2.2's consumer does)
        registered = {"ts_ns": 1, "kind": "registered", "source": "j0", "role": "member"}
        registered |= {"impl": "legacy_zk", "member": "c9", "path": f"{g}/ids/c9"}
        (path.parent / "j0.jsonl").write_text(json.dumps(registered) + "\n")
        ctx = _ExpireContext(path.parent, zookeeper.connect_string)
        sid, password = wait_until(lambda: ctx.registration("j0"), what="the tap's view of j0's session")
        assert (sid, bytes.fromhex(password)) == member.client_id
        Expire().expire("j0", ctx)  # type: ignore[arg-type]  # the two things it reads of a context
        assert lost.wait(15), "the member learnt its session expired"
    finally:
        member.stop()
        member.close()


@pytest.mark.slow
def test_a_members_cut_proxy_in_front_of_the_tap_cuts_it_and_the_tap_sees_the_expiry(
    tapped: tuple[ZooKeeperTap, Path], zookeeper: ZooKeeperServer
) -> None:
    """As the run unit chains them: a cut member's own proxies point at the tap."""
    tap, path = tapped
    g = f"/consumers/cut-{uuid.uuid4().hex[:8]}"
    with ProxyHost() as proxies:
        observer = client(zookeeper.connect_string)
        member = client(_proxied_zookeeper(proxies, tap.connect, "m0-zookeeper"), timeout=2.0)
        try:
            observer.create(f"{g}/ids", makepath=True)
            member.create(f"{g}/ids/c4", ephemeral=True)
            session = f"0x{member.client_id[0]:x}"
            assert tap.sessions() == {member.client_id[0]: "c4"}
            proxies.cut("m0-zookeeper")
            gone = threading.Event()
            observer.exists(f"{g}/ids/c4", watch=lambda _e: gone.set())
            assert gone.wait(20), "the cut session expired"
            proxies.restore("m0-zookeeper")
            expired = wait_until(
                lambda: [e for e in events(path, "zk_session") if e["phase"] == "expired"],
                timeout=20,
                what="the member's reconnect refused once the cut healed",
            )
            assert [(e["session"], e["member"]) for e in expired] == [(session, "c4")]
        finally:
            for c in (member, observer):
                c.stop()
                c.close()
