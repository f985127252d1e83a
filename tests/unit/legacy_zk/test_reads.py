"""GroupReader's view: its requests are 0.8's (a get per registration), and a ViewMemo shares a view
between readers only when they read the very same results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from legacy_zk import paths
from legacy_zk.memzk import MemZk, MemZkSession
from legacy_zk.reads import GroupReader, MalformedLog, ViewMemo
from legacy_zk.zkport import NoNodeError

G = "g"
T = "t"


def tree(consumers: list[str], malformed: tuple[str, ...] = ()) -> MemZk:
    zk = MemZk()
    s = zk.session()
    s.create_parents(paths.ids_dir(G))
    s.create_parents(paths.BROKER_TOPICS)
    s.create(paths.topic_path(T), paths.encode_topic({0: [1], 1: [1]}))
    for c in consumers:
        data = b"{not json" if c in malformed else paths.encode_registration({T: 1}, 0)
        s.create(paths.id_path(G, c), data, ephemeral=True)
    return zk


class SharedReads:
    """A port whose get_many hands every caller the same result list (as the simulator's fluid reads
    do while the directory is unchanged)."""

    def __init__(self, session: MemZkSession) -> None:
        self.session = session
        self.shared: list[Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)

    def get_many(self, directory: str, names: Sequence[str]) -> list[Any]:
        if self.shared is None:
            self.shared = self.session.get_many(directory, names)
        return self.shared


def reader(zk: MemZk, me: str, memo: ViewMemo | None, shared: bool = False) -> tuple[GroupReader, list[str]]:
    seen: list[str] = []
    port: Any = zk.session()
    if shared:
        port = SharedReads(port)
    log = MalformedLog(lambda e: seen.append(e.path))
    return GroupReader(port, G, me, True, log, memo=memo), seen


def test_a_view_reads_each_registration_with_a_get_as_0_8_does() -> None:
    zk = tree(["a", "b", "c"])
    r, _ = reader(zk, "a", None)
    session = r.zk
    assert isinstance(session, MemZkSession)
    view = r.read_view()
    assert view.consumers == ("a", "b", "c")
    assert set(view.subscriptions) == {"a", "b", "c"}
    assert view.partitions == {T: (0, 1)}
    # own registration, the topic, the ids, a get per registration (3), the ids again
    assert dict(session.counts) == {"get": 5, "get_children": 2}


def test_a_registration_gone_between_the_ids_and_its_read_fails_the_read() -> None:
    zk = tree(["a", "b"])
    s = zk.session()
    with pytest.raises(NoNodeError):
        s.get_many(paths.ids_dir(G), ["a", "gone", "b"])
    # the requests up to the missing one were made, none after it
    assert s.counts["get"] == 2


def test_readers_of_the_same_results_share_one_view_and_each_reports_malformed_peers() -> None:
    zk = tree(["a", "b", "bad"], malformed=("bad",))
    memo = ViewMemo()
    port = SharedReads(zk.session())
    seen_a: list[str] = []
    seen_b: list[str] = []
    ra = GroupReader(port, G, "a", True, MalformedLog(lambda e: seen_a.append(e.path)), memo=memo)
    rb = GroupReader(port, G, "b", True, MalformedLog(lambda e: seen_b.append(e.path)), memo=memo)
    va, vb = ra.read_view(), rb.read_view()
    assert va is vb
    assert set(va.subscriptions) == {"a", "b"}  # the malformed peer left out, for both
    assert seen_a == seen_b == [paths.id_path(G, "bad")]


def test_readers_of_different_results_get_equal_views_not_one_object() -> None:
    zk = tree(["a", "b"])
    memo = ViewMemo()
    ra, _ = reader(zk, "a", memo)
    rb, _ = reader(zk, "b", memo)
    va, vb = ra.read_view(), rb.read_view()
    assert va == vb and va is not vb


def test_a_memo_never_hides_a_malformed_own_registration() -> None:
    zk = tree(["a", "b"])
    memo = ViewMemo()
    port = SharedReads(zk.session())
    GroupReader(port, G, "a", True, MalformedLog(lambda e: None), memo=memo).read_view()
    # b's registration becomes malformed, but the shared results still hold the old one; a fresh read
    # of b's own registration (the first request of read_view) fails for b
    zk.session().set(paths.id_path(G, "b"), b"{not json")
    with pytest.raises(paths.MalformedZnode):
        GroupReader(port, G, "b", True, MalformedLog(lambda e: None), memo=memo).read_view()
