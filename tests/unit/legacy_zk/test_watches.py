"""The member's watches against the in-memory ZooKeeper: subscribe, notify, re-arm, signal."""

from __future__ import annotations

from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler

from legacy_zk import paths
from legacy_zk.listeners import EventThread
from legacy_zk.memzk import MemZk
from legacy_zk.watches import GroupWatches

G = "g"


class InlineEvents(EventThread):
    """The event thread, run inline: a queued job runs at once on the notifying thread."""

    def __init__(self) -> None:
        self.jobs: list[str] = []

    def send(self, description: str, job: Any) -> None:
        self.jobs.append(description)
        job()


def setup(active: list[bool]) -> tuple[MemZk, Any, GroupWatches, list[tuple[str, dict[str, Any]]]]:
    zk = MemZk()
    admin = zk.session()
    admin.create_parents(paths.ids_dir(G))
    admin.create_parents(paths.BROKER_TOPICS)
    admin.create(paths.topic_path("t"), paths.encode_topic({0: [1]}))
    member = zk.session()
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, /, **fields: Any) -> None:
        events.append((kind, fields))

    w = GroupWatches(
        member,
        InlineEvents(),
        SequentialThreadingHandler(),
        G,
        ["t"],
        emit=emit,
        stats={"watches": 0},
        active=lambda: active[0],
        tag=lambda: "m",
    )
    return zk, admin, w, events


def test_subscribing_costs_0_8s_requests() -> None:
    zk, _admin, w, _ = setup([True])
    member = w.subs.zk
    w.subscribe()
    # ids: exists + getChildren (watches); topic: exists (watch)
    assert dict(member.counts) == {"exists": 2, "get_children": 1}


def test_a_join_notifies_once_rearms_with_two_requests_and_signals() -> None:
    zk, admin, w, events = setup([True])
    member = w.subs.zk
    w.subscribe()
    member.counts.clear()
    admin.create(paths.id_path(G, "g_b"), b"{}", ephemeral=True)
    assert [(k, f["path"], f["type"]) for k, f in events] == [("watch", paths.ids_dir(G), "CHILD")]
    assert dict(member.counts) == {"exists": 1, "get_children": 1}  # fireChildChangedEvents' re-arm
    assert w.signal.wait_and_clear(0) == [f"watch:{paths.ids_dir(G)}"]
    admin.create(paths.id_path(G, "g_c"), b"{}", ephemeral=True)  # the re-armed watch fires again
    assert len(events) == 2


def test_a_changed_topic_signals_and_a_deleted_one_does_not() -> None:
    zk, admin, w, events = setup([True])
    w.subscribe()
    admin.set(paths.topic_path("t"), paths.encode_topic({0: [1], 1: [1]}))
    assert w.signal.wait_and_clear(0) == [f"watch:{paths.topic_path('t')}"]
    admin.delete(paths.topic_path("t"))
    assert [f["type"] for _k, f in events] == ["CHANGED", "DELETED"]
    assert w.signal.wait_and_clear(0) == []


def test_a_quiesced_member_ignores_notifications_and_rearms_nothing() -> None:
    active = [True]
    zk, admin, w, events = setup(active)
    member = w.subs.zk
    w.subscribe()
    member.counts.clear()
    active[0] = False
    admin.create(paths.id_path(G, "g_b"), b"{}", ephemeral=True)
    assert events == [] and dict(member.counts) == {} and w.signal.wait_and_clear(0) == []
